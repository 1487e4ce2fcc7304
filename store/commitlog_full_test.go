package store

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
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
	fillReplica(t, ref, total)
	failed := putUntilFull(t, s, full, total, 3000) // about two more batches fit
	if got := s.LastSeq(); got >= failed {
		t.Fatalf("LastSeq %d covers the failed put %d", got, failed)
	}
	full.Reset(1 << 40)
	_ = s.Close()
	s = mustOpen(t, cfg)
	defer s.Close()
	redeliverAndCompare(t, s, ref, total)
}

// fillReplica puts the batches 1..total into a replica whose disk never
// fills.
func fillReplica(t *testing.T, ref *Store, total uint64) {
	t.Helper()
	for seq := uint64(1); seq <= total; seq++ {
		if _, err := ref.Put(seq, replicaBatch(seq)); err != nil {
			t.Fatal(err)
		}
	}
}

// putUntilFull puts the batches from 1 on into s, leaving the disk behind
// full budget bytes once 39 are in, until a Put fails; that Put must be
// ErrWriteFailed saying the disk is full. It returns the failed Put's seq.
func putUntilFull(t *testing.T, s *Store, full *vfs.FullAfter, total uint64, budget int64) uint64 {
	t.Helper()
	for seq := uint64(1); seq <= total; seq++ {
		if seq == 40 {
			full.Reset(budget)
		}
		if _, err := s.Put(seq, replicaBatch(seq)); err != nil {
			if !errors.Is(err, ErrWriteFailed) || !strings.Contains(err.Error(), syscall.ENOSPC.Error()) {
				t.Fatalf("put %d on a full disk: %v, want ErrWriteFailed saying %v", seq, err, syscall.ENOSPC)
			}
			if !full.Full() {
				t.Fatalf("put %d failed before the disk filled: %v", seq, err)
			}
			return seq
		}
	}
	t.Fatal("the disk never filled")
	return 0
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
	a, err := s.CommitLogChecksum(0, s.MaxPhysicalOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ref.CommitLogChecksum(0, ref.MaxPhysicalOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("CommitLogs differ: CRC %08x here, %08x on the other replica", a, b)
	}
}

// TestIndexDiskFullThenRecovery: the IndexFile's disk fills up. The Put
// whose index entries cannot be given storage fails with ErrWriteFailed
// (its records are in the CommitLog, its keys not all indexed) and the
// store refuses writes until it reopens; the reopened store dispatches
// that Put from the CommitLog again, takes the redelivered entries after
// it, holds the CommitLog of a replica whose disk never filled, and finds
// every message by its key.
func TestIndexDiskFullThenRecovery(t *testing.T) {
	ref := mustOpen(t, testConfig(t.TempDir()))
	defer ref.Close()
	dir := t.TempDir()
	full := vfs.NewFullAfter(filepath.Join(dir, "index"), 1<<40)
	cfg := testConfig(dir)
	cfg.FS = &vfs.Faulty{Fail: full.Fail}
	s := mustOpen(t, cfg)
	const total = 200
	fillReplica(t, ref, total)
	failed := putUntilFull(t, s, full, total, 2*4096) // two more pages of index entries
	if _, err := s.Put(failed+1, replicaBatch(failed+1)); !errors.Is(err, ErrWriteFailed) {
		t.Fatalf("a put after a failed dispatch: %v, want ErrWriteFailed", err)
	}
	full.Reset(1 << 40)
	_ = s.Close()
	s = mustOpen(t, cfg)
	defer s.Close()
	if got := s.LastSeq(); got < failed {
		t.Fatalf("after reopening LastSeq is %d: the put %d in the CommitLog was not dispatched again", got, failed)
	}
	redeliverAndCompare(t, s, ref, total)
	for seq := uint64(1); seq <= total; seq++ {
		for i := range 4 {
			n := int(seq)*4 + i
			got, err := s.QueryByKey("T", fmt.Sprintf("key-%d", n), 4, 0, math.MaxInt64)
			if err != nil || len(got) != 1 || got[0].Flag != int32(n) {
				t.Fatalf("message %d of put %d by its key: %d found, %v", n, seq, len(got), err)
			}
		}
	}
}

// TestCheckpointWriteFails: a checkpoint whose file cannot be replaced
// (its temporary file cannot be written, synced or renamed) fails Flush
// and leaves the previous checkpoint whole; the next Flush writes it; and
// a store reopened after the failure holds every put.
func TestCheckpointWriteFails(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, checkpointName)
	for _, op := range []vfs.Op{vfs.OpWrite, vfs.OpSync, vfs.OpRename} {
		t.Run(op.String(), func(t *testing.T) {
			var on atomic.Bool
			cfg := testConfig(dir)
			cfg.FS = &vfs.Faulty{Fail: func(o vfs.Op, path string, _ int64) error {
				if on.Load() && o == op && strings.HasPrefix(filepath.Base(path), checkpointName) {
					return syscall.EIO
				}
				return nil
			}}
			s := mustOpen(t, cfg)
			defer func() { _ = s.Close() }()
			base := s.LastSeq()
			put := func(seq uint64) {
				if _, err := s.Put(seq, replicaBatch(seq)); err != nil {
					t.Fatal(err)
				}
			}
			put(base + 1)
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			before, err := readCheckpointFile(ckpt)
			if err != nil {
				t.Fatal(err)
			}
			put(base + 2)
			on.Store(true)
			if err := s.Flush(); !errors.Is(err, syscall.EIO) {
				t.Fatalf("Flush whose checkpoint cannot be written: %v, want EIO", err)
			}
			if after, err := readCheckpointFile(ckpt); err != nil || after.Seq != before.Seq {
				t.Fatalf("after a failed checkpoint the file says seq %d (%v), it said %d", after.Seq, err, before.Seq)
			}
			if ents, _ := os.ReadDir(dir); slices.ContainsFunc(ents, func(e os.DirEntry) bool { return strings.Contains(e.Name(), ".tmp") }) {
				t.Fatalf("a failed checkpoint left its temporary file: %v", ents)
			}
			on.Store(false)
			if err := s.Flush(); err != nil {
				t.Fatalf("the next Flush: %v", err)
			}
			if after, err := readCheckpointFile(ckpt); err != nil || after.Seq != base+2 {
				t.Fatalf("the next checkpoint says seq %d (%v), want %d", after.Seq, err, base+2)
			}
			on.Store(true)
			put(base + 3)
			_ = s.Flush()
			_ = s.Close()
			on.Store(false)
			s = mustOpen(t, cfg)
			if got := s.LastSeq(); got != base+3 {
				t.Fatalf("reopened after a failed checkpoint: LastSeq %d, want %d", got, base+3)
			}
		})
	}
}

// readCheckpointFile reads and decodes the checkpoint at path.
func readCheckpointFile(path string) (Checkpoint, error) {
	c, ok, err := readCheckpoint(path)
	if err == nil && !ok {
		err = os.ErrNotExist
	}
	return c, err
}
