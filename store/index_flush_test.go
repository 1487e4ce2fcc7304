package store

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestIndexFlushInterval: a checkpoint flushes the IndexFile only every
// IndexFlushInterval and meanwhile records the index as of its last flush;
// after a crash, recovery indexes again from there (across index files
// filled since), and every key is found.
func TestIndexFlushInterval(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	cfg := testConfig(dir)
	cfg.IndexFlushInterval = time.Hour
	cfg.Clock = clock.Now
	s := mustOpen(t, cfg)
	readCk := func() Checkpoint { return mustReadCheckpoint(t, dir) }
	atOpen := readCk().IndexPhyOffset

	n := 0
	putBatches(t, s, "T", 4, 10, 8, 64, &n)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	ck := readCk()
	if ck.IndexPhyOffset != atOpen || ck.CommitLogOffset <= 0 {
		t.Fatalf("checkpoint within the interval: index at %d (want %d, the last flush), log at %d", ck.IndexPhyOffset, atOpen, ck.CommitLogOffset)
	}

	clock.Add(time.Hour)
	putBatches(t, s, "T", 4, 1, 8, 64, &n)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	flushed := readCk().IndexPhyOffset
	if want := s.idx.MaxPhyOffset(); flushed != want || flushed <= atOpen {
		t.Fatalf("checkpoint after the interval: index at %d, want %d", flushed, want)
	}

	// More than one index file (200 entries each, 3 keys a message) is
	// written after the flush, then the node crashes.
	putBatches(t, s, "T", 4, 20, 8, 64, &n)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := readCk().IndexPhyOffset; got != flushed {
		t.Fatalf("checkpoint within the interval: index at %d, want %d", got, flushed)
	}
	s.crash()

	s = mustOpen(t, cfg)
	defer s.Close()
	if rep := s.Recovery(); !rep.RebuiltIndex {
		t.Fatalf("recovery did not index again from the last flush: %+v", rep)
	}
	for i := 0; i < n; i++ {
		got, err := s.QueryByKey("T", fmt.Sprintf("key-%d", i), 4, 0, 1<<62)
		if err != nil || len(got) != 1 || got[0].Flag != int32(i) {
			t.Fatalf("key-%d after recovery: %d messages, %v", i, len(got), err)
		}
	}
	verifyConsistent(t, s, nil)
}

// TestIndexFlushEntries: within the interval, a checkpoint flushes the
// IndexFile once IndexFlushEntries keys were indexed since its last flush.
func TestIndexFlushEntries(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.IndexSlots, cfg.IndexEntries = 4096, 100000
	cfg.IndexFlushInterval = time.Hour
	cfg.IndexFlushEntries = 100 // testMsg indexes 3 keys a message
	s := mustOpen(t, cfg)
	defer s.Close()
	readCk := func() Checkpoint { return mustReadCheckpoint(t, dir) }
	atOpen := readCk().IndexPhyOffset
	n := 0
	putBatches(t, s, "T", 4, 4, 8, 64, &n) // 32 messages, 96 keys
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := readCk().IndexPhyOffset; got != atOpen {
		t.Fatalf("96 keys indexed: index at %d, want %d (no flush)", got, atOpen)
	}
	putBatches(t, s, "T", 4, 1, 2, 64, &n) // 6 more keys
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := readCk().IndexPhyOffset, s.idx.MaxPhyOffset(); got != want {
		t.Fatalf("102 keys indexed: index at %d, want %d (flushed)", got, want)
	}
}

// TestIndexFlushBytes: within the interval and below IndexFlushEntries, a
// checkpoint flushes the IndexFile once the CommitLog has grown
// IndexFlushBytes past what the last flush indexed, so a crash leaves at
// most that many bytes to index again (large messages carry few keys).
func TestIndexFlushBytes(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.SegmentSize = 1 << 20
	cfg.IndexSlots, cfg.IndexEntries = 4096, 100000
	cfg.IndexFlushInterval = time.Hour
	cfg.IndexFlushBytes = 64 << 10
	s := mustOpen(t, cfg)
	readCk := func() Checkpoint { return mustReadCheckpoint(t, dir) }
	atOpen := readCk().IndexPhyOffset
	n := 0
	putBatches(t, s, "T", 4, 4, 4, 2048, &n) // 16 records, ~35 KiB, 48 keys
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := readCk().IndexPhyOffset; got != atOpen {
		t.Fatalf("~35 KiB written: index at %d, want %d (no flush)", got, atOpen)
	}
	putBatches(t, s, "T", 4, 4, 4, 2048, &n) // ~70 KiB in all
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	flushed := readCk().IndexPhyOffset
	if want := s.idx.MaxPhyOffset(); flushed != want {
		t.Fatalf("~70 KiB written: index at %d, want %d (flushed)", flushed, want)
	}
	putBatches(t, s, "T", 4, 2, 4, 2048, &n)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.crash()

	// Recovery indexes again only from the last flush.
	s = mustOpen(t, cfg)
	defer s.Close()
	if rep := s.Recovery(); rep.From < flushed || !rep.RebuiltIndex {
		t.Fatalf("recovery from %d, want from the index's last flush at %d: %+v", rep.From, flushed, rep)
	}
	for i := 0; i < n; i++ {
		got, err := s.QueryByKey("T", fmt.Sprintf("key-%d", i), 4, 0, 1<<62)
		if err != nil || len(got) != 1 || got[0].Flag != int32(i) {
			t.Fatalf("key-%d after recovery: %d messages, %v", i, len(got), err)
		}
	}
	verifyConsistent(t, s, nil)
}

// mustReadCheckpoint reads the checkpoint of the store in dir.
func mustReadCheckpoint(t *testing.T, dir string) Checkpoint {
	t.Helper()
	ck, ok, err := readCheckpoint(filepath.Join(dir, checkpointName))
	if !ok || err != nil {
		t.Fatalf("checkpoint: %v %v", ok, err)
	}
	return ck
}
