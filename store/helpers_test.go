package store

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/commitlog"
	"github.com/ledgermq/ledgermq/consumequeue"
	"github.com/ledgermq/ledgermq/message"
)

var (
	testStoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
	testBornHost  = netip.MustParseAddrPort("127.0.0.1:40000")
)

// testConfig is a store with small files so tests cross every boundary.
func testConfig(dir string) Config {
	c := DefaultConfig(dir)
	c.SegmentSize = 64 << 10
	c.UnitsPerQueueFile = 10
	c.MaxOpenQueueFiles = 16
	c.IndexSlots = 64
	c.IndexEntries = 200
	c.MaxMessageSize = 16 << 10
	c.CheckpointInterval = 1 << 40 // checkpoints only when a test asks
	c.CleanInterval = 1 << 40
	// Deletion by disk use would depend on the test machine's disk (one at
	// 80 % deletes old segments at once); tests that want it set it.
	c.DiskMaxUsedSpaceRatio = 1
	return c
}

func mustOpen(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

// crash stops the store the way kill -9 would: nothing is flushed beyond
// what already is, no clean checkpoint is written. The page cache keeps
// what was written to the mapped files, as it does when a process dies.
func (s *Store) crash() {
	_ = s.CloseUnclean()
}

// testMsg builds message n of a test: topic, queue and tag cycle.
func testMsg(topic string, queue int32, n int, bodySize int) *message.Ext {
	body := make([]byte, bodySize)
	for i := range body {
		body[i] = byte('a' + (n+i)%26)
	}
	m := &message.Ext{
		Message:        message.Message{Topic: topic, Body: body, Flag: int32(n)},
		QueueID:        queue,
		BornTimestamp:  1_700_000_000_000 + int64(n),
		BornHost:       testBornHost,
		StoreTimestamp: 1_700_000_000_000 + int64(n),
		StoreHost:      testStoreHost,
	}
	tag := "TagA"
	if n%3 == 1 {
		tag = "TagB"
	} else if n%3 == 2 {
		tag = "TagC"
	}
	m.SetProperty(message.PropertyTags, tag)
	m.SetProperty(message.PropertyKeys, fmt.Sprintf("key-%d k%d", n, n%7))
	m.SetProperty(message.PropertyUniqKey, fmt.Sprintf("UNIQ%028d", n))
	return m
}

// acked is what the test knows was stored: the batch's seq and each
// message's result.
type acked struct {
	seq     uint64
	results []PutResult
	msgs    []*message.Ext
}

// putBatches writes nBatches batches of batchSize messages spread over
// queues of topic, numbering messages from *n.
func putBatches(t testing.TB, s *Store, topic string, queues, nBatches, batchSize, bodySize int, n *int) []acked {
	t.Helper()
	var out []acked
	for b := 0; b < nBatches; b++ {
		msgs := make([]*message.Ext, batchSize)
		for i := range msgs {
			msgs[i] = testMsg(topic, int32(*n%queues), *n, bodySize)
			*n++
		}
		seq := s.LastSeq() + 1
		res, err := s.Put(seq, msgs)
		if err != nil {
			t.Fatalf("put batch %d: %v", b, err)
		}
		out = append(out, acked{seq: seq, results: res, msgs: msgs})
	}
	return out
}

// logRecord is a message record found by scanning the CommitLog.
type logRecord struct {
	d   dispatchReq
	raw []byte
}

// scanLog returns every message record in a complete batch, in log order,
// and the last batch's seq, by an independent walk of the CommitLog.
func scanLog(t testing.TB, s *Store) ([]logRecord, uint64) {
	t.Helper()
	var (
		out, pending []logRecord
		seq          uint64
	)
	err := s.cl.Scan(s.cl.MinOffset(), func(off int64, p []byte) error {
		if isMarker(p) {
			m, err := decodeMarker(p)
			if err != nil {
				return err
			}
			seq = m.seq
			out = append(out, pending...)
			pending = nil
			return nil
		}
		d, err := dispatchFromRecord(off, p)
		if err != nil {
			return nil // corrupt: skipped like recovery does
		}
		pending = append(pending, logRecord{d: d, raw: append([]byte(nil), p...)})
		return nil
	}, func(commitlog.CorruptRange) {})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	return out, seq
}

// verifyConsistent checks that the ConsumeQueues and the IndexFile match
// the CommitLog exactly: every queue holds exactly the units the log's
// records call for, in order, and every UNIQ_KEY is found by the index.
func verifyConsistent(t testing.TB, s *Store, skipCorrupt map[int64]bool) {
	t.Helper()
	recs, seq := scanLog(t, s)
	if got := s.LastSeq(); got != seq {
		t.Errorf("LastSeq = %d, last batch marker in the log says %d", got, seq)
	}
	want := map[queueKey][]consumequeue.Unit{}
	start := map[queueKey]int64{}
	for _, r := range recs {
		k := queueKey{r.d.topic, r.d.queueID}
		if _, ok := start[k]; !ok {
			start[k] = r.d.queueOffset
		}
		want[k] = append(want[k], consumequeue.Unit{Offset: r.d.phy, Size: r.d.size, TagsCode: message.TagsHashCode(r.d.tags)})
	}
	ids, err := s.cq.Queues()
	if err != nil {
		t.Fatal(err)
	}
	have := map[queueKey]bool{}
	for _, id := range ids {
		have[queueKey{id.Topic, id.QueueID}] = true
	}
	keys := make([]queueKey, 0, len(want))
	for k := range want {
		keys = append(keys, k)
		if !have[k] {
			t.Errorf("queue %v missing", k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	for _, k := range keys {
		q, err := s.cq.Queue(k.topic, k.id)
		if err != nil {
			t.Fatal(err)
		}
		units, err := q.Get(start[k], len(want[k])+10)
		if err != nil {
			t.Fatalf("queue %v: %v", k, err)
		}
		w := want[k]
		// Slots of corrupt records point at the corrupt range; compare the rest.
		var got []consumequeue.Unit
		for _, u := range units {
			if !skipCorrupt[u.Offset] {
				got = append(got, u)
			}
		}
		if len(got) != len(w) {
			t.Errorf("queue %v: %d units, log has %d records", k, len(got), len(w))
			continue
		}
		for i := range w {
			if got[i] != w[i] {
				t.Errorf("queue %v unit %d = %+v, log says %+v", k, i, got[i], w[i])
				break
			}
		}
		if q.MaxOffset() != start[k]+int64(len(units)) {
			t.Errorf("queue %v max offset %d, want %d", k, q.MaxOffset(), start[k]+int64(len(units)))
		}
	}
	for k := range have {
		if _, ok := want[k]; !ok {
			q, _ := s.cq.Queue(k.topic, k.id)
			if q.MaxOffset() > q.MinOffset() {
				t.Errorf("queue %v has units but the log has no records for it", k)
			}
		}
	}
	for _, r := range recs {
		uniq, ok := strings.CutPrefix(r.d.uniqKey, r.d.topic+"#")
		if !ok {
			if r.d.uniqKey != "" {
				t.Errorf("index key %q of a record of %s", r.d.uniqKey, r.d.topic)
			}
			continue
		}
		got, err := s.QueryByKey(r.d.topic, uniq, 4, 0, 1<<62)
		if err != nil || len(got) != 1 || got[0].PhysicalOffset != r.d.phy {
			t.Errorf("index: key %s: got %d results (err %v), want the record at %d", uniq, len(got), err, r.d.phy)
			return
		}
	}
}

// segmentPath is the path of the CommitLog segment holding offset.
func segmentPath(s *Store, off int64) string {
	start := off - off%s.cfg.SegmentSize
	return filepath.Join(s.cfg.Dir, "commitlog", fmt.Sprintf("%020d", start))
}

// patchFile overwrites bytes of a file at a file offset.
func patchFile(t testing.TB, path string, at int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}
