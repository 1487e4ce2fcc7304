package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ledgermq/ledgermq/commitlog"
	"github.com/ledgermq/ledgermq/message"
)

// checkAcked asserts that every message of the given batches reads back
// byte for byte at the offsets its Put returned.
func checkAcked(t *testing.T, s *Store, batches []acked) {
	t.Helper()
	for _, b := range batches {
		for i, r := range b.results {
			got, err := s.MessageAt(r.PhysicalOffset)
			if err != nil {
				t.Fatalf("seq %d message %d at %d: %v", b.seq, i, r.PhysicalOffset, err)
			}
			if !bytes.Equal(got.Body, b.msgs[i].Body) || got.QueueOffset != r.QueueOffset {
				t.Fatalf("seq %d message %d differs after recovery", b.seq, i)
			}
		}
	}
}

func reopen(t *testing.T, s *Store) *Store {
	t.Helper()
	return mustOpen(t, s.cfg)
}

func TestRecoverCleanRestartReplaysNothing(t *testing.T) {
	s := mustOpen(t, testConfig(t.TempDir()))
	n := 0
	batches := putBatches(t, s, "T", 3, 30, 4, 500, &n)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s)
	defer s.Close()
	rep := s.Recovery()
	if !rep.Clean || rep.Replayed != 0 || rep.TruncatedBytes != 0 || rep.Seq != 30 {
		t.Fatalf("clean restart report: %+v", rep)
	}
	checkAcked(t, s, batches)
	verifyConsistent(t, s, nil)
	// Writing continues where it stopped.
	more := putBatches(t, s, "T", 3, 2, 4, 500, &n)
	if more[0].seq != 31 || more[0].results[0].QueueOffset != 40 {
		t.Fatalf("after restart: seq %d queue offset %d", more[0].seq, more[0].results[0].QueueOffset)
	}
}

func TestRecoverCrashWithoutCheckpointReplaysTail(t *testing.T) {
	s := mustOpen(t, testConfig(t.TempDir()))
	n := 0
	first := putBatches(t, s, "T", 3, 10, 4, 500, &n)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	second := putBatches(t, s, "T", 3, 10, 4, 500, &n)
	s.crash()
	s = reopen(t, s)
	defer s.Close()
	rep := s.Recovery()
	// The 40 records after the checkpoint get their queue units again;
	// index files written since it are dropped and their keys re-indexed.
	if rep.Clean || rep.From != 0 || rep.Replayed < 40 || rep.Seq != 20 {
		t.Fatalf("report: %+v", rep)
	}
	checkAcked(t, s, append(first, second...))
	verifyConsistent(t, s, nil)
}

func TestRecoverTornTail(t *testing.T) {
	cases := []struct {
		name string
		// damage gets the last batch and changes files; it returns how many
		// trailing batches are expected to be lost.
		damage func(t *testing.T, s *Store, last acked) int
	}{
		{"torn last record", func(t *testing.T, s *Store, last acked) int {
			r := last.results[len(last.results)-1]
			// Cut the last record in half: zero from its middle to the end.
			from := r.PhysicalOffset + int64(r.Size)/2
			zeroFrom(t, s, from)
			return 1
		}},
		{"zeroed tail inside the batch", func(t *testing.T, s *Store, last acked) int {
			zeroFrom(t, s, last.results[1].PhysicalOffset)
			return 1
		}},
		{"marker lost", func(t *testing.T, s *Store, last acked) int {
			r := last.results[len(last.results)-1]
			zeroFrom(t, s, r.PhysicalOffset+int64(r.Size)+commitlog.TrailerSize)
			return 1
		}},
		{"garbage after the last batch", func(t *testing.T, s *Store, last acked) int {
			r := last.results[len(last.results)-1]
			end := r.PhysicalOffset + int64(r.Size) + commitlog.TrailerSize + markerSize + commitlog.TrailerSize
			patchFile(t, segmentPath(s, end), end%s.cfg.SegmentSize, []byte{0, 0, 1, 0, 0xDA, 0xA3, 0x20, 0xA7, 9, 9})
			return 0
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := mustOpen(t, testConfig(t.TempDir()))
			n := 0
			batches := putBatches(t, s, "T", 2, 12, 4, 700, &n)
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			batches = append(batches, putBatches(t, s, "T", 2, 3, 4, 700, &n)...)
			s.crash()
			lost := c.damage(t, s, batches[len(batches)-1])
			s = reopen(t, s)
			defer s.Close()
			kept := batches[:len(batches)-lost]
			if got, want := s.LastSeq(), kept[len(kept)-1].seq; got != want {
				t.Fatalf("LastSeq %d, want %d", got, want)
			}
			checkAcked(t, s, kept)
			verifyConsistent(t, s, nil)
			if lost > 0 {
				for _, r := range batches[len(batches)-1].results {
					if _, err := s.MessageAt(r.PhysicalOffset); err == nil {
						t.Fatalf("a record of the torn batch is still served")
					}
				}
			}
			// The store goes on: the lost batch can be applied again.
			if _, err := s.Put(s.LastSeq()+1, []*message.Ext{testMsg("T", 0, 999, 100)}); err != nil {
				t.Fatal(err)
			}
			verifyConsistent(t, s, nil)
		})
	}
}

// zeroFrom zeroes the CommitLog from offset to the end of its segment and
// removes later segments, as a power loss that never wrote them would.
func zeroFrom(t *testing.T, s *Store, off int64) {
	t.Helper()
	p := segmentPath(s, off)
	at := off % s.cfg.SegmentSize
	patchFile(t, p, at, make([]byte, s.cfg.SegmentSize-at))
	start := off - at
	for seg := start + s.cfg.SegmentSize; ; seg += s.cfg.SegmentSize {
		q := segmentPath(s, seg)
		if _, err := os.Stat(q); err != nil {
			break
		}
		if err := os.Remove(q); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRecoverSegmentBoundary(t *testing.T) {
	s := mustOpen(t, testConfig(t.TempDir()))
	n := 0
	var batches []acked
	// Write until the log has rolled into a second segment.
	for s.cl.MaxOffset() < s.cfg.SegmentSize {
		batches = append(batches, putBatches(t, s, "T", 2, 1, 3, 900, &n)...)
	}
	firstInNext := len(batches) - 1
	if batches[firstInNext].results[0].PhysicalOffset != s.cfg.SegmentSize {
		t.Fatalf("first batch of the second segment at %d", batches[firstInNext].results[0].PhysicalOffset)
	}
	s.crash()

	t.Run("record cut at the start of the new segment", func(t *testing.T) {
		dir := copyStore(t, s.cfg.Dir)
		cfg := s.cfg
		cfg.Dir = dir
		c := mustOpen(t, cfg)
		c.crash()
		zeroFrom(t, c, s.cfg.SegmentSize+10)
		c = mustOpen(t, cfg)
		defer c.Close()
		checkAcked(t, c, batches[:firstInNext])
		if c.LastSeq() != batches[firstInNext-1].seq {
			t.Fatalf("LastSeq %d, want %d", c.LastSeq(), batches[firstInNext-1].seq)
		}
		verifyConsistent(t, c, nil)
	})
	t.Run("last record of a full segment damaged while the next holds data", func(t *testing.T) {
		dir := copyStore(t, s.cfg.Dir)
		cfg := s.cfg
		cfg.Dir = dir
		c := mustOpen(t, cfg)
		c.crash()
		prev := batches[firstInNext-1]
		r := prev.results[len(prev.results)-1]
		patchFile(t, segmentPath(c, r.PhysicalOffset), r.PhysicalOffset%cfg.SegmentSize+int64(r.Size)-3, []byte{0xFF})
		c = mustOpen(t, cfg)
		defer c.Close()
		// Corruption in the middle is reported, not cut: the batch after it survives.
		if c.LastSeq() != batches[len(batches)-1].seq {
			t.Fatalf("LastSeq %d, want %d", c.LastSeq(), batches[len(batches)-1].seq)
		}
		checkAcked(t, c, batches[firstInNext:])
		if _, err := c.MessageAt(r.PhysicalOffset); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("damaged record: got %v, want ErrCorrupt", err)
		}
	})
}

// copyStore copies a store directory (files only) for a variant of a test.
func copyStore(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestRecoverFlippedByteInOldRecord(t *testing.T) {
	for _, clean := range []bool{true, false} {
		name := map[bool]string{true: "after clean stop", false: "after crash"}[clean]
		t.Run(name, func(t *testing.T) {
			s := mustOpen(t, testConfig(t.TempDir()))
			n := 0
			batches := putBatches(t, s, "T", 2, 20, 4, 400, &n)
			if clean {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				s.crash()
			}
			victim := batches[5].results[2]
			patchFile(t, segmentPath(s, victim.PhysicalOffset), victim.PhysicalOffset%s.cfg.SegmentSize+int64(victim.Size)-20, []byte{0x5A})
			s = reopen(t, s)
			defer s.Close()
			if s.LastSeq() != 20 {
				t.Fatalf("LastSeq %d, want 20", s.LastSeq())
			}
			// Read the whole queue: the flipped record is never returned.
			q := batches[5].msgs[2].QueueID
			off, got := int64(0), 0
			for {
				res, err := s.Get("T", q, off, 8, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res.Records {
					if r.PhysicalOffset == victim.PhysicalOffset {
						t.Fatal("corrupt record returned by Get")
					}
					if _, _, err := message.DecodeRecord(r.Bytes); err != nil {
						t.Fatal(err)
					}
					got++
				}
				off = res.NextBeginOffset
				res.Release()
				if res.Status == OffsetOverflowOne {
					break
				}
			}
			if got != 39 {
				t.Fatalf("read %d messages of queue %d, want 39 (40 less the corrupt one)", got, q)
			}
			found := false
			for _, c := range s.CorruptRanges() {
				if c.Offset == victim.PhysicalOffset {
					found = true
				}
			}
			if !found {
				t.Fatalf("corruption at %d not reported: %+v", victim.PhysicalOffset, s.CorruptRanges())
			}
			if _, err := s.MessageAt(victim.PhysicalOffset); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("MessageAt: got %v, want ErrCorrupt", err)
			}
			var rest []acked
			for i, b := range batches {
				if i != 5 {
					rest = append(rest, b)
				}
			}
			checkAcked(t, s, rest)
			verifyConsistent(t, s, map[int64]bool{victim.PhysicalOffset: true})
		})
	}
}

func TestRecoverMissingConsumeQueueFile(t *testing.T) {
	for _, which := range []string{"first", "middle", "last", "whole queue"} {
		t.Run(which, func(t *testing.T) {
			s := mustOpen(t, testConfig(t.TempDir()))
			n := 0
			batches := putBatches(t, s, "T", 2, 20, 4, 200, &n) // 40 units per queue, 4 files
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			qdir := filepath.Join(s.cfg.Dir, "consumequeue", "T", "1")
			ents, err := os.ReadDir(qdir)
			if err != nil || len(ents) != 4 {
				t.Fatalf("queue files: %v %v", ents, err)
			}
			switch which {
			case "first":
				err = os.Remove(filepath.Join(qdir, ents[0].Name()))
			case "middle":
				err = os.Remove(filepath.Join(qdir, ents[2].Name()))
			case "last":
				err = os.Remove(filepath.Join(qdir, ents[3].Name()))
			default:
				err = os.RemoveAll(qdir)
			}
			if err != nil {
				t.Fatal(err)
			}
			s = reopen(t, s)
			defer s.Close()
			// After a clean stop the damage is found on the queue's first use.
			res, err := s.Get("T", 1, 0, 64, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Records) != 40 {
				t.Fatalf("queue 1 after rebuild: %d records, want 40", len(res.Records))
			}
			res.Release()
			if s.RebuiltQueues() == 0 {
				t.Fatalf("nothing rebuilt: %+v", s.Recovery())
			}
			checkAcked(t, s, batches)
			verifyConsistent(t, s, nil)
		})
	}
}

func TestRecoverStaleAndDamagedCheckpoint(t *testing.T) {
	for _, mode := range []string{"stale", "damaged", "missing"} {
		t.Run(mode, func(t *testing.T) {
			s := mustOpen(t, testConfig(t.TempDir()))
			n := 0
			batches := putBatches(t, s, "T", 3, 8, 4, 300, &n)
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			ckPath := filepath.Join(s.cfg.Dir, checkpointName)
			old, err := os.ReadFile(ckPath)
			if err != nil {
				t.Fatal(err)
			}
			batches = append(batches, putBatches(t, s, "T", 3, 8, 4, 300, &n)...)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			switch mode {
			case "stale":
				err = os.WriteFile(ckPath, old, 0o644)
			case "damaged":
				b, _ := os.ReadFile(ckPath)
				b[10] ^= 0xFF
				err = os.WriteFile(ckPath, b, 0o644)
			default:
				err = os.Remove(ckPath)
			}
			if err != nil {
				t.Fatal(err)
			}
			s = reopen(t, s)
			defer s.Close()
			if s.LastSeq() != 16 {
				t.Fatalf("LastSeq %d, want 16", s.LastSeq())
			}
			checkAcked(t, s, batches)
			verifyConsistent(t, s, nil)
			// Queue offsets continue without duplicates or holes.
			more := putBatches(t, s, "T", 3, 1, 3, 10, &n)
			for i, r := range more[0].results {
				qid := more[0].msgs[i].QueueID
				max, _ := s.MaxOffset("T", qid)
				if r.QueueOffset != max-1 || r.QueueOffset != int64(n-3+i)/3 {
					t.Fatalf("queue %d: new message at %d, max %d", qid, r.QueueOffset, max)
				}
			}
			verifyConsistent(t, s, nil)
		})
	}
}

func TestRecoverQueueAheadOfCommitLog(t *testing.T) {
	// A queue unit reached disk but the CommitLog record it points at did
	// not (power loss): recovery must cut the unit.
	s := mustOpen(t, testConfig(t.TempDir()))
	n := 0
	batches := putBatches(t, s, "T", 1, 10, 2, 300, &n)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	batches = append(batches, putBatches(t, s, "T", 1, 2, 2, 300, &n)...)
	if err := s.Flush(); err != nil { // the queue files now hold the last units
		t.Fatal(err)
	}
	s.crash()
	// Lose the last batch from the CommitLog only, and roll the checkpoint
	// back so recovery cannot rely on it.
	zeroFrom(t, s, batches[len(batches)-1].results[0].PhysicalOffset)
	s = reopen(t, s)
	defer s.Close()
	if s.LastSeq() != 11 {
		t.Fatalf("LastSeq %d, want 11", s.LastSeq())
	}
	if max, _ := s.MaxOffset("T", 0); max != 22 {
		t.Fatalf("queue max %d, want 22", max)
	}
	verifyConsistent(t, s, nil)
}

func TestStoreLockExcludesSecondOpen(t *testing.T) {
	s := mustOpen(t, testConfig(t.TempDir()))
	defer s.Close()
	if _, err := Open(s.cfg); err == nil {
		t.Fatal("a second Open of the same directory succeeded")
	}
}
