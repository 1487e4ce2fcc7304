package store

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/ledgermq/ledgermq/internal/vfs"
	"github.com/ledgermq/ledgermq/message"
)

// TestCommitLogDiskFullThenRedelivery: the CommitLog's disk fills up
// (internal/vfs: no file system of its own needed, so it runs everywhere).
// The Put that does not fit fails with ErrWriteFailed; once space is back
// the node reopens and the entries above LastSeq are delivered again, and
// its CommitLog is byte for byte the one of a replica whose disk never
// filled.
func TestCommitLogDiskFullThenRedelivery(t *testing.T) {
	cfgOf := func(dir string) Config {
		c := testConfig(dir)
		c.SegmentSize = 1 << 20
		return c
	}
	ref := mustOpen(t, cfgOf(t.TempDir()))
	defer ref.Close()
	dir := t.TempDir()
	full := vfs.NewFullAfter(filepath.Join(dir, "commitlog"), 1<<40)
	cfg := cfgOf(dir)
	cfg.FS = &vfs.Faulty{Fail: full.Fail}
	s := mustOpen(t, cfg)
	const total = 300
	for seq := uint64(1); seq <= total; seq++ {
		if _, err := ref.Put(seq, replicaBatch(seq)); err != nil {
			t.Fatal(err)
		}
	}
	failed := uint64(0)
	for seq := uint64(1); seq <= total; seq++ {
		if seq == 40 {
			full.Reset(3000) // about two more batches fit
		}
		if _, err := s.Put(seq, replicaBatch(seq)); err != nil {
			if !errors.Is(err, ErrWriteFailed) {
				t.Fatalf("put %d on a full disk: %v", seq, err)
			}
			failed = seq
			break
		}
	}
	if failed == 0 || !full.Full() {
		t.Fatalf("the disk never filled (failed put %d)", failed)
	}
	if got := s.LastSeq(); got >= failed {
		t.Fatalf("LastSeq %d covers the failed put %d", got, failed)
	}
	full.Reset(1 << 40)
	_ = s.Close()
	s = mustOpen(t, cfg)
	defer s.Close()
	redeliverAndCompare(t, s, ref, total)
}

// replicaBatch is the Put of raft index seq in the replica tests: four
// messages of 200 bytes, one per queue.
func replicaBatch(seq uint64) []*message.Ext {
	var msgs []*message.Ext
	for i := range 4 {
		msgs = append(msgs, testMsg("T", int32(i), int(seq)*4+i, 200))
	}
	return msgs
}

// redeliverAndCompare puts the batches above s's LastSeq up to total, as
// the raft log delivers them again after a restart, and checks that s's
// CommitLog is then byte for byte ref's.
func redeliverAndCompare(t *testing.T, s, ref *Store, total uint64) {
	t.Helper()
	for seq := s.LastSeq() + 1; seq <= total; seq++ {
		if _, err := s.Put(seq, replicaBatch(seq)); err != nil {
			t.Fatalf("put %d after space came back: %v", seq, err)
		}
	}
	if a, b := s.MaxPhysicalOffset(), ref.MaxPhysicalOffset(); a != b {
		t.Fatalf("CommitLog ends at %d, the other replica's at %d", a, b)
	}
	a, err := s.CommitLogChecksum(0, s.MaxPhysicalOffset())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ref.CommitLogChecksum(0, ref.MaxPhysicalOffset())
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("CommitLogs differ: CRC %08x here, %08x on the other replica", a, b)
	}
}
