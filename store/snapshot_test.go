package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ledgermq/ledgermq/message"
)

// stageSegments copies src's segments that hold data below point into a
// new directory the way a snapshot install stages them: the bytes below
// point, then zeros up to the segment size.
func stageSegments(t *testing.T, src *Store, point int64) string {
	t.Helper()
	dir := t.TempDir()
	for _, seg := range src.SegmentPaths() {
		if seg.Start >= point {
			continue
		}
		b, err := os.ReadFile(seg.Path)
		if err != nil {
			t.Fatal(err)
		}
		n := min(seg.Size, point-seg.Start)
		out := make([]byte, seg.Size)
		copy(out, b[:n])
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(seg.Path)), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// logEntries renders a store's CommitLog entries below limit through the
// public API.
func logEntries(t *testing.T, s *Store, limit int64) []byte {
	t.Helper()
	var out []byte
	err := s.ScanCommitLog(s.MinPhysicalOffset(), func(off int64, p []byte) error {
		if off < limit {
			out = fmt.Appendf(out, "%d:", off)
			out = append(out, p...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// batchMsgs rebuilds the messages putBatches numbered from n.
func batchMsgs(topic string, queues, batchSize, bodySize, n int) []*message.Ext {
	msgs := make([]*message.Ext, batchSize)
	for i := range msgs {
		msgs[i] = testMsg(topic, int32((n+i)%queues), n+i, bodySize)
	}
	return msgs
}

func TestStoreRestoreFrom(t *testing.T) {
	const queues, batchSize, body = 4, 4, 700
	for _, tc := range []struct {
		name  string
		ahead int // batches B already holds (a prefix of A's)
	}{
		{"empty store", 0},
		{"store behind", 25},
		{"store on another log", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := mustOpen(t, testConfig(t.TempDir()))
			defer a.Close()
			n := 0
			putBatches(t, a, "T", queues, 60, batchSize, body, &n)
			point, seq, nAt := a.MaxPhysicalOffset(), a.LastSeq(), n
			after := putBatches(t, a, "T", queues, 10, batchSize, body, &n)
			if err := a.Flush(); err != nil {
				t.Fatal(err)
			}
			if len(a.SegmentPaths()) < 3 {
				t.Fatalf("want several segments, have %d", len(a.SegmentPaths()))
			}
			staged := stageSegments(t, a, point)

			bCfg := testConfig(t.TempDir())
			b := mustOpen(t, bCfg)
			defer func() { b.Close() }()
			switch {
			case tc.ahead > 0:
				m := 0
				putBatches(t, b, "T", queues, tc.ahead, batchSize, body, &m)
			case tc.ahead < 0:
				m := 1000
				putBatches(t, b, "Other", 2, 90, 2, 900, &m)
			}
			if err := b.RestoreFrom(staged, seq); err != nil {
				t.Fatal(err)
			}
			if b.LastSeq() != seq {
				t.Fatalf("LastSeq = %d, want %d", b.LastSeq(), seq)
			}
			if got, want := logEntries(t, b, 1<<62), logEntries(t, a, point); !bytes.Equal(got, want) {
				t.Fatalf("restored commitlog (%d bytes) differs from the source below %d (%d bytes)", len(got), point, len(want))
			}
			verifyConsistent(t, b, nil)
			if topics, _ := b.Topics(); len(topics) != 1 || topics[0] != "T" {
				t.Fatalf("topics after restore: %v", topics)
			}
			// B goes on exactly where A went on.
			if _, err := b.Put(seq, batchMsgs("T", queues, batchSize, body, nAt)); !errors.Is(err, ErrSeqApplied) {
				t.Fatalf("put at the restored seq: %v", err)
			}
			res, err := b.Put(after[0].seq, batchMsgs("T", queues, batchSize, body, nAt))
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res {
				if w := after[0].results[i]; r.PhysicalOffset != w.PhysicalOffset || r.QueueOffset != w.QueueOffset {
					t.Fatalf("message %d after restore at %d/%d, the source put it at %d/%d", i,
						r.PhysicalOffset, r.QueueOffset, w.PhysicalOffset, w.QueueOffset)
				}
			}
			// And it survives a restart.
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			b = mustOpen(t, bCfg)
			if b.LastSeq() != after[0].seq {
				t.Fatalf("LastSeq after reopen = %d, want %d", b.LastSeq(), after[0].seq)
			}
			verifyConsistent(t, b, nil)
		})
	}
}

func TestStoreRestoreFromRejectsBadSegments(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := mustOpen(t, cfg)
	defer s.Close()
	n := 0
	putBatches(t, s, "T", 2, 10, 2, 100, &n)
	seq := s.LastSeq()
	full := make([]byte, cfg.SegmentSize)
	for _, tc := range []struct {
		name  string
		files map[string][]byte
	}{
		{"short segment", map[string][]byte{"00000000000000000000": full[:100]}},
		{"gap", map[string][]byte{"00000000000000000000": full, fmt.Sprintf("%020d", 2*cfg.SegmentSize): full}},
		{"misaligned", map[string][]byte{fmt.Sprintf("%020d", 100): full}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, b := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.RestoreFrom(dir, 1); !errors.Is(err, ErrRestore) {
				t.Fatalf("RestoreFrom: %v, want ErrRestore", err)
			}
			if s.LastSeq() != seq {
				t.Fatalf("a rejected restore changed LastSeq to %d", s.LastSeq())
			}
		})
	}
	// Data that does not end at the promised sequence number is reported.
	staged := stageSegments(t, s, s.MaxPhysicalOffset())
	if err := s.RestoreFrom(staged, seq+5); !errors.Is(err, ErrRestore) {
		t.Fatalf("RestoreFrom with a wrong seq: %v", err)
	}
	if _, err := s.Put(0, batchMsgs("T", 2, 2, 100, n)); err != nil {
		t.Fatalf("put after a rejected restore: %v", err)
	}
}

// TestStoreRestoreFromRacesReaders runs every read method while the data
// is replaced under them: each answers with an error or with a record that
// is what its queue slot says, never a crash.
func TestStoreRestoreFromRacesReaders(t *testing.T) {
	a := mustOpen(t, testConfig(t.TempDir()))
	defer a.Close()
	n := 0
	batches := putBatches(t, a, "T", 2, 15, 4, 300, &n)
	midPoint, midSeq := a.MaxPhysicalOffset(), a.LastSeq()
	batches = append(batches, putBatches(t, a, "T", 2, 15, 4, 300, &n)...)
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	stagedA := stageSegments(t, a, a.MaxPhysicalOffset())
	stagedB := stageSegments(t, a, midPoint)

	s := mustOpen(t, testConfig(t.TempDir()))
	defer s.Close()
	if err := s.RestoreFrom(stagedA, a.LastSeq()); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var reads atomic.Int64
	var wg sync.WaitGroup
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				q := int32(i % 2)
				off := int64(i % 40)
				switch (i + r) % 6 {
				case 0:
					res, err := s.Get("T", q, off, 8, nil)
					if err == nil {
						for _, rec := range res.Records {
							v, perr := message.ParseView(rec.Bytes)
							if perr != nil || v.Topic() != "T" || v.QueueID() != q || v.QueueOffset() != rec.QueueOffset {
								t.Errorf("Get returned a record that is not its slot's: %v", perr)
							}
						}
						res.Release()
					}
				case 1:
					if m, err := s.MessageAt(batches[i%len(batches)].results[0].PhysicalOffset); err == nil && m.Topic != "T" {
						t.Errorf("MessageAt returned topic %q", m.Topic)
					}
				case 2:
					_, _ = s.QueryByKey("T", fmt.Sprintf("UNIQ%028d", i%n), 2, 0, 1<<62)
				case 3:
					_, _ = s.MinOffset("T", q)
					_, _ = s.MaxOffset("T", q)
				case 4:
					_, _ = s.OffsetByTime("T", q, 1_700_000_000_000+int64(i%n))
				case 5:
					_ = s.MinPhysicalOffset()
					_ = s.MaxPhysicalOffset()
					_ = s.SegmentPaths()
				}
				reads.Add(1)
			}
		}(r)
	}
	for i := 0; i < 6; i++ {
		dir, seq := stagedA, a.LastSeq()
		if i%2 == 0 {
			dir, seq = stagedB, midSeq
		}
		if err := s.RestoreFrom(dir, seq); err != nil {
			t.Fatal(err)
		}
		// Let the readers run against the restored data.
		for start := reads.Load(); reads.Load() < start+50; {
			runtime.Gosched()
		}
	}
	stop.Store(true)
	wg.Wait()
	verifyConsistent(t, s, nil)
}
