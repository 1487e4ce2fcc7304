package devcluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// View reads the message stored at commitlog offset off on addr
// (VIEW_MESSAGE_BY_ID, 33: any replica answers, offsets being the same on
// every node).
func View(ctx context.Context, c *remoting.Client, addr string, off int64) (*message.Ext, error) {
	resp, err := c.Invoke(ctx, addr, (&protocol.ViewMessageRequestHeader{Offset: off}).Request())
	if err != nil {
		return nil, err
	}
	if err := remoting.CheckResponse(resp); err != nil {
		return nil, err
	}
	m, _, err := message.DecodeRecord(resp.Body)
	return m, err
}

// TopicQueues returns the number of queues addr holds for topic
// (GET_ALL_TOPIC_CONFIG).
func TopicQueues(ctx context.Context, c *remoting.Client, addr, topic string) (int, error) {
	resp, err := c.Invoke(ctx, addr, protocol.AllTopicConfigRequest())
	if err != nil {
		return 0, err
	}
	if err := remoting.CheckResponse(resp); err != nil {
		return 0, err
	}
	w, err := protocol.DecodeTopicConfigWrapper(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("topic table of %s: %w", addr, err)
	}
	tc, ok := w.TopicConfigTable[topic]
	if !ok {
		return 0, fmt.Errorf("%s has no topic %s", addr, topic)
	}
	return int(max(tc.ReadQueueNums, tc.WriteQueueNums)), nil
}

// ReadTopic reads every queue of topic on addr from offset 0 to its end
// with PULL_MESSAGE (no long polling, no offset commit, as consumer group
// group) and returns the records, queue by queue in queue order.
func ReadTopic(ctx context.Context, c *remoting.Client, addr, topic, group string) ([]*message.Ext, error) {
	queues, err := TopicQueues(ctx, c, addr, topic)
	if err != nil {
		return nil, err
	}
	var out []*message.Ext
	for q := range queues {
		ms, err := readQueue(ctx, c, addr, topic, group, q)
		if err != nil {
			return out, fmt.Errorf("queue %d of %s on %s: %w", q, topic, addr, err)
		}
		out = append(out, ms...)
	}
	return out, nil
}

// maxPulls bounds the pulls of one queue: each successful pull moves past
// at least one unit, so this is far more than a queue of a test holds.
const maxPulls = 1 << 20

func readQueue(ctx context.Context, c *remoting.Client, addr, topic, group string, q int) ([]*message.Ext, error) {
	var out []*message.Ext
	offset := int64(0)
	for range maxPulls {
		req := (&protocol.PullMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: int32(q),
			QueueOffset: offset, MaxMsgNums: 256, Subscription: "*"}).Request()
		resp, err := c.Invoke(ctx, addr, req)
		if err != nil {
			return out, err
		}
		var h protocol.PullMessageResponseHeader
		if err := h.Decode(resp.ExtFields); err != nil {
			return out, fmt.Errorf("pull at %d: code %d %s: %w", offset, resp.Code, resp.Remark, err)
		}
		next, maxOff, minOff := h.NextBeginOffset, h.MaxOffset, h.MinOffset
		if minOff > 0 {
			return out, fmt.Errorf("queue starts at %d, not 0: units were deleted", minOff)
		}
		switch resp.Code {
		case remoting.Success:
			ms, err := message.DecodeRecords(resp.Body)
			if err != nil {
				return out, fmt.Errorf("pull at %d: %w", offset, err)
			}
			out = append(out, ms...)
		case remoting.PullNotFound, remoting.PullRetryImmediately:
		default:
			return out, fmt.Errorf("pull at %d: code %d %s", offset, resp.Code, resp.Remark)
		}
		if next < offset || (next == offset && offset < maxOff) {
			return out, fmt.Errorf("pull at %d (max %d): code %d moved to %d", offset, maxOff, resp.Code, next)
		}
		offset = next
		if offset >= maxOff {
			return out, nil
		}
	}
	return out, fmt.Errorf("not at the end after %d pulls", maxPulls)
}

// CommitLogDir is node n's CommitLog directory: the store's commitlog/
// under the node's data directory (see store/doc.go).
func CommitLogDir(n Node) string { return filepath.Join(n.Dir, "store", "commitlog") }

// CompareCommitLogs compares the CommitLog segments of nodes byte for byte
// (whole files, the pre-allocated zero tail included) and returns how many
// bytes each node holds. Only segment files (names of 20 digits) count;
// the LOCK file does not. It must run with the nodes stopped: a running
// node may append meanwhile.
//
// Replicas that applied the same raft entries hold identical CommitLogs
// (store/doc.go), so any difference is a replica that diverged: a lost or
// extra entry, a torn write that recovery did not cut, a restore that
// went wrong.
//
// With one log (the store's onelog file) the CommitLog is the raft log,
// entries without records included (a new term's no-op, a barrier), so a
// node stopped a few entries behind the others holds a shorter log: the
// logs are then compared up to the shortest one's end, every byte below
// it, and what the others hold beyond it is their log's extension.
func CompareCommitLogs(nodes []Node) (int64, error) {
	if len(nodes) < 2 {
		return 0, errors.New("devcluster: fewer than two nodes to compare")
	}
	if oneLog(nodes) {
		return compareLogPrefix(nodes)
	}
	segs := make([][]string, len(nodes))
	for i, n := range nodes {
		var err error
		if segs[i], err = segmentNames(CommitLogDir(n)); err != nil {
			return 0, err
		}
	}
	for i := 1; i < len(nodes); i++ {
		if !slices.Equal(segs[0], segs[i]) {
			return 0, fmt.Errorf("devcluster: %s has segments %v, %s has %v", nodes[0].ID, segs[0], nodes[i].ID, segs[i])
		}
	}
	var total int64
	for _, name := range segs[0] {
		n, err := compareFiles(nodes, name, -1)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// segmentNames lists the segment files of a CommitLog directory.
func segmentNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if len(e.Name()) == 20 && e.Type().IsRegular() && isDigits(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// oneLog reports whether any node's store is in the one-log layout.
func oneLog(nodes []Node) bool {
	for _, n := range nodes {
		if _, err := os.Stat(filepath.Join(n.Dir, "store", "onelog")); err == nil {
			return true
		}
	}
	return false
}

// compareLogPrefix compares the nodes' CommitLogs up to the end of the
// shortest (see CompareCommitLogs) and returns how many bytes that is.
func compareLogPrefix(nodes []Node) (int64, error) {
	segs := make([][]string, len(nodes))
	minEnd, shortest := int64(-1), 0
	for i, n := range nodes {
		var err error
		if segs[i], err = segmentNames(CommitLogDir(n)); err != nil {
			return 0, err
		}
		end := int64(0)
		if k := len(segs[i]); k > 0 {
			last := segs[i][k-1]
			in, err := dataEnd(filepath.Join(CommitLogDir(n), last))
			if err != nil {
				return 0, err
			}
			end = segmentStart(last) + in
		}
		if minEnd < 0 || end < minEnd {
			minEnd, shortest = end, i
		}
	}
	var total int64
	for _, name := range segs[shortest] {
		start := segmentStart(name)
		if start >= minEnd {
			break
		}
		for i := range nodes {
			if !slices.Contains(segs[i], name) {
				return total, fmt.Errorf("devcluster: %s has segments %v, %s has %v", nodes[shortest].ID, segs[shortest], nodes[i].ID, segs[i])
			}
		}
		n, err := compareFiles(nodes, name, minEnd-start)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// dataEnd is where the entries of a CommitLog segment file end: the first
// entry whose length word is 0 (the pre-allocated zero tail) or that does
// not fit the file.
func dataEnd(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pos := 0
	for pos+4 <= len(b) {
		n := int(binary.BigEndian.Uint32(b[pos:]))
		if n < 4 || pos+n+4 > len(b) {
			break
		}
		pos += n + 4 // the payload, then its CRC trailer
	}
	return int64(pos), nil
}

// compareFiles compares segment name of every node with the first node's,
// reading all of them in step, and returns the bytes compared: the whole
// files, which must be the same size, or with limit >= 0 their first
// limit bytes (or fewer, to the shortest file's end).
func compareFiles(nodes []Node, name string, limit int64) (int64, error) {
	files := make([]*os.File, len(nodes))
	defer func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}()
	var size int64
	for i, n := range nodes {
		f, err := os.Open(filepath.Join(CommitLogDir(n), name))
		if err != nil {
			return 0, err
		}
		files[i] = f
		fi, err := f.Stat()
		if err != nil {
			return 0, err
		}
		switch {
		case limit >= 0:
			if i == 0 || fi.Size() < size {
				size = min(limit, fi.Size())
			}
		case i == 0:
			size = fi.Size()
		case fi.Size() != size:
			return 0, fmt.Errorf("devcluster: segment %s: %s has %d bytes, %s %d", name, nodes[0].ID, size, n.ID, fi.Size())
		}
	}
	const chunk = 4 << 20
	bufs := make([][]byte, len(nodes))
	for i := range bufs {
		bufs[i] = make([]byte, chunk)
	}
	for off := int64(0); off < size; off += chunk {
		want := min(chunk, size-off)
		for i, f := range files {
			if _, err := io.ReadFull(f, bufs[i][:want]); err != nil {
				return off, fmt.Errorf("devcluster: segment %s of %s at %d: %w", name, nodes[i].ID, off, err)
			}
		}
		for i := 1; i < len(files); i++ {
			if a, b := bufs[0][:want], bufs[i][:want]; !bytes.Equal(a, b) {
				at := off
				for j := range a {
					if a[j] != b[j] {
						at += int64(j)
						break
					}
				}
				return off, fmt.Errorf("devcluster: segment %s: %s and %s differ from byte %d of the file (commitlog offset %d)", name, nodes[0].ID, nodes[i].ID, at, segmentStart(name)+at)
			}
		}
	}
	return size, nil
}

// segmentStart is the commitlog offset a segment file's name gives.
func segmentStart(name string) int64 {
	n, _ := strconv.ParseInt(name, 10, 64)
	return n
}
