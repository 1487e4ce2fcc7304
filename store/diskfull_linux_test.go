package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFullDiskThenRedeliveryKeepsReplicasIdentical: a replica whose disk
// fills up fails a Put part-way (the CommitLog took the batch, its index
// could not) and stops; once space is back it reopens and the raft log
// delivers again every entry above LastSeq. Its CommitLog must then be
// byte for byte the one of a replica whose disk never filled (docs/invariants.md
// I2). It needs a tmpfs of its own, so it runs where mounting is
// permitted (root).
func TestFullDiskThenRedeliveryKeepsReplicasIdentical(t *testing.T) {
	disk := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", disk, "tmpfs", 0, "size=4m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(disk, unix.MNT_DETACH) })
	cfgOf := func(dir string) Config {
		c := testConfig(dir)
		c.SegmentSize = 1 << 20
		c.Preallocate = true // the CommitLog has its space: the index is what fails
		c.IndexSlots = 1 << 14
		c.IndexEntries = 1 << 16 // 1.3 MiB, sparse: its pages are allocated as entries arrive
		return c
	}
	ref := mustOpen(t, cfgOf(t.TempDir()))
	defer ref.Close()
	cfg := cfgOf(filepath.Join(disk, "store"))
	s := mustOpen(t, cfg)
	const total = 400
	for seq := uint64(1); seq <= total; seq++ {
		if _, err := ref.Put(seq, replicaBatch(seq)); err != nil {
			t.Fatal(err)
		}
	}
	filler := filepath.Join(disk, "filler")
	failed := uint64(0)
	for seq := uint64(1); seq <= total; seq++ {
		if seq == 20 {
			f, err := os.Create(filler)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 4096)
			for {
				if _, err := f.Write(buf); err != nil {
					break
				}
			}
			f.Close()
		}
		if _, err := s.Put(seq, replicaBatch(seq)); err != nil {
			if !errors.Is(err, ErrWriteFailed) {
				t.Fatalf("put %d on a full disk: %v", seq, err)
			}
			failed = seq
			t.Logf("put %d: %v", seq, err)
			break
		}
	}
	if failed == 0 {
		t.Fatal("the disk never filled")
	}
	// Space comes back while the node stops (its Close writes its
	// checkpoint then); it starts again.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	s = mustOpen(t, cfg)
	defer s.Close()
	if got := s.LastSeq(); got >= failed {
		t.Logf("LastSeq %d after the failed put of %d", got, failed)
	}
	redeliverAndCompare(t, s, ref, total)
}
