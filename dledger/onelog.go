package dledger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/store"
)

// entryStore is what the one-log raft log needs of the message store: the
// CommitLog holds the raft entries (store/entries.go).
type entryStore interface {
	AppendEntries(ents []store.Entry) error
	Entry(seq uint64) (store.Entry, error)
	FirstEntry() uint64
	LastEntry() uint64
	TruncateEntries(seq uint64) error
	CompactEntries(seq uint64) error
	LastSeq() uint64
}

// commitLogRaftLog is raft's LogStore over the message store's CommitLog
// (Config.OneLog): an entry's records are written once, where consumers
// read them, and fsynced once per append on each node.
//
// An entry that carries records (types 1 and 3) is split into its header
// (every byte but the records) and its records; GetLog joins them again,
// the records as stored (their queue and physical offsets filled in, which
// is what every replica stores for them too). Any other entry, and one that
// does not split (which the FSM then refuses when it applies it), is kept
// whole as a header.
type commitLogRaftLog struct {
	st  entryStore
	own *ownEntries
	// fail stops the node: an entry it cannot store leaves a hole.
	fail func(error)
	// observer hears every append (observe.go); nil: none.
	observer LogObserver
	// faults breaks appends on purpose (a jepsenbroken build only).
	faults Faults
	snapshotCounter
}

var _ raft.LogStore = (*commitLogRaftLog)(nil)

func (l *commitLogRaftLog) FirstIndex() (uint64, error) { return l.st.FirstEntry(), nil }

func (l *commitLogRaftLog) LastIndex() (uint64, error) { return l.st.LastEntry(), nil }

func (l *commitLogRaftLog) GetLog(index uint64, out *raft.Log) error {
	e, err := l.st.Entry(index)
	if errors.Is(err, store.ErrNotFound) {
		return raft.ErrLogNotFound
	}
	if err != nil {
		return err
	}
	*out = raft.Log{Index: e.Seq, Term: e.Term, Type: raft.LogType(e.Type), Data: joinRecords(e.Header, e.Records)}
	return nil
}

func (l *commitLogRaftLog) StoreLog(log *raft.Log) error {
	return l.StoreLogs([]*raft.Log{log})
}

func (l *commitLogRaftLog) StoreLogs(logs []*raft.Log) error {
	start := time.Now()
	ents := make([]store.Entry, len(logs))
	n := 0
	for i, log := range logs {
		e := store.Entry{Seq: log.Index, Term: log.Term, Type: uint8(log.Type), Header: log.Data}
		if log.Type == raft.LogCommand {
			if h, recs, ok := splitRecords(log.Data); ok {
				if n := len(recs); applyTwice(l.faults, log.Index) { // a jepsenbroken build only (faults.go)
					recs = append(recs[:n:n], recs...)
					h = binary.BigEndian.AppendUint32(append([]byte(nil), h[:len(h)-messagesHeaderSize]...), uint32(2*n))
				}
				e.Header, e.Records = h, recs
				// The proposer checked what it encoded; others are checked
				// by the store as they are written.
				if l.own != nil {
					e.Prepared, e.Checked = l.own.prepared(log.Data)
				}
			}
			e.DeletesTopic = deletesTopic(log.Data)
		}
		ents[i] = e
		n += len(log.Data)
	}
	if err := l.st.AppendEntries(ents); err != nil {
		if l.fail != nil {
			switch {
			case errors.Is(err, store.ErrBadMessage), errors.Is(err, store.ErrBatchTooLarge):
				// Every replica receives the same bytes: an entry this
				// node cannot store is one it would apply differently.
				l.fail(fmt.Errorf("%w: raft log: %w", ErrBadEntry, err))
			case errors.Is(err, store.ErrWriteFailed):
				// A failed write (a full disk) leaves the store refusing
				// every later one: only a restart, once the cause is gone,
				// lets this node take entries again (as a failed apply
				// does with two logs).
				l.fail(fmt.Errorf("raft log: %w", err))
			}
		}
		return err
	}
	if o := l.observer; o != nil {
		o.LogStored(len(logs), n, time.Since(start))
	}
	l.countForSnapshot(n)
	return nil
}

// DeleteRange is raft's. A range above the last applied entry is a suffix
// that conflicts with the leader's log (raft never removes a committed
// entry) and is removed; any other is a compaction after a snapshot (which
// covers only applied entries), even when it reaches the log's end.
func (l *commitLogRaftLog) DeleteRange(min, max uint64) error {
	if min > l.st.LastSeq() {
		return l.st.TruncateEntries(min)
	}
	return l.st.CompactEntries(max)
}

// splitRecords splits a messages entry (types 1 and 3) into its header
// (everything up to and including the record count) and its records;
// ok is false for any other entry or one that does not split.
func splitRecords(b []byte) (header []byte, recs [][]byte, ok bool) {
	if len(b) < entryHeaderSize {
		return nil, nil, false
	}
	at := entryHeaderSize
	switch b[1] {
	case entryTypeMessages:
	case entryTypeMessagesOp:
		if len(b) < at+opLengthSize {
			return nil, nil, false
		}
		n := binary.BigEndian.Uint32(b[at:])
		if uint64(n) > uint64(len(b)-at-opLengthSize) {
			return nil, nil, false
		}
		at += opLengthSize + int(n)
	default:
		return nil, nil, false
	}
	recs, err := decodeRecords(b[at:], true)
	if err != nil {
		return nil, nil, false
	}
	return b[: at+messagesHeaderSize : at+messagesHeaderSize], recs, true
}

// joinRecords is the inverse of splitRecords.
func joinRecords(header []byte, recs [][]byte) []byte {
	if len(recs) == 0 {
		return header
	}
	n := len(header)
	for _, r := range recs {
		n += 4 + len(r)
	}
	b := make([]byte, 0, n)
	b = append(b, header...)
	for _, r := range recs {
		b = binary.BigEndian.AppendUint32(b, uint32(len(r)))
		b = append(b, r...)
	}
	return b
}

// deletesTopic names the topic a metadata entry deletes ("" for any other
// entry): records appended after it start its queues again at offset 0.
func deletesTopic(b []byte) string {
	if len(b) < entryHeaderSize || b[1] != entryTypeMetadata || !bytes.Contains(b, []byte(metadata.OpDeleteTopic)) {
		return ""
	}
	op, err := metadata.DecodeOp(b[entryHeaderSize:])
	if err != nil || op.Kind != metadata.OpDeleteTopic {
		return ""
	}
	return op.Name
}

// stableFileName is the one-log layout's file of raft's term and vote,
// in the raft directory.
const stableFileName = "state.json"

// noRaftWAL refuses the one-log layout on a node whose raft log is
// raft-wal's (its data was written in the other layout).
func noRaftWAL(dir string) error {
	held, err := dirHasEntries(dir)
	if err != nil {
		return err
	}
	if held {
		return fmt.Errorf("%w: %s holds a separate raft log; this node's data is in the two-log layout", store.ErrLayout, dir)
	}
	return nil
}

// newestSnapshotBounds reads the newest snapshot's raft index and where
// its CommitLog data ends, from the snapshot directories (0, 0 if none):
// the store dispatches the entries up to that index at recovery, and lists
// those after it for raft.
func newestSnapshotBounds(dir string) (uint64, int64) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0
	}
	var seq uint64
	var end int64
	for _, e := range ents {
		if !e.IsDir() || strings.HasSuffix(e.Name(), tmpSuffix) {
			continue
		}
		raw, err := readManifestFile(stagedManifestPath(filepath.Join(dir, e.Name())))
		if err != nil {
			continue
		}
		m, err := decodeManifest(raw)
		if err != nil || m.StoreSeq < seq {
			continue
		}
		seq, end = m.StoreSeq, m.CommitLogMax
	}
	return seq, end
}
