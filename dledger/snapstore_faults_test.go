package dledger

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// TestSnapshotStoreFaults: a snapshot whose files cannot be written —
// a received segment on a full disk, a pinned segment's link, the
// finished snapshot's rename or its directory's sync — is discarded with
// the file system's error: its staging directory is removed, the store
// lists no new snapshot, and once the fault is gone the same snapshot is
// taken or received and reads back whole.
func TestSnapshotStoreFaults(t *testing.T) {
	a := newSnapNode(t, t.TempDir())
	a.put(150, 1000) // about 2.5 segments
	meta := a.snapshot(10, 2)
	_, stream := a.read(meta.ID)

	for _, tc := range []struct {
		name  string
		op    vfs.Op
		match func(path string) bool
		errno syscall.Errno
		local bool // a local snapshot (pinned links) rather than a received stream
	}{
		{"received segment, disk full", vfs.OpWrite, isSegmentFile, syscall.ENOSPC, false},
		{"received segment's space", vfs.OpAllocate, isSegmentFile, syscall.ENOSPC, false},
		{"pinned segment's link", vfs.OpLink, isSegmentFile, syscall.EIO, true},
		{"finished snapshot's rename", vfs.OpRename, func(string) bool { return true }, syscall.EIO, false},
		{"snapshot directory's sync", vfs.OpSync, func(p string) bool { return strings.HasSuffix(p, tmpSuffix) }, syscall.EIO, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var on atomic.Bool
			b := &snapNode{t: t, dataDir: t.TempDir()}
			b.cfg = snapStoreConfig(filepath.Join(b.dataDir, "store"))
			b.fs = &vfs.Faulty{Fail: func(op vfs.Op, path string, _ int64) error {
				if on.Load() && op == tc.op && tc.match(path) {
					return tc.errno
				}
				return nil
			}}
			b.open()
			t.Cleanup(b.close)
			b.put(150, 1000)
			before, _ := b.snaps.List()

			take := func() (string, error) {
				if tc.local {
					fs, err := b.fsm.Snapshot()
					if err != nil {
						t.Fatal(err)
					}
					defer fs.Release()
					sink, err := b.snaps.Create(1, 10, 2, raft.Configuration{}, 1, nil)
					if err != nil {
						t.Fatal(err)
					}
					if err := fs.Persist(sink); err != nil {
						return sink.ID(), err
					}
					return sink.ID(), sink.Close()
				}
				sink, err := b.receive(10, 2, stream)
				return sink.ID(), err
			}
			on.Store(true)
			_, err := take()
			on.Store(false)
			if !errors.Is(err, tc.errno) {
				t.Fatalf("snapshot with a failing %s: %v, want %v", tc.op, err, tc.errno)
			}
			if left, _ := filepath.Glob(filepath.Join(b.snaps.dir, "*"+tmpSuffix)); len(left) != 0 {
				t.Fatalf("staging left behind: %v", left)
			}
			if after, _ := b.snaps.List(); len(after) != len(before) {
				t.Fatalf("a failed snapshot is listed: %d snapshots, %d before", len(after), len(before))
			}
			id, err := take()
			if err != nil {
				t.Fatal(err)
			}
			_, got := b.read(id)
			if !tc.local && !bytes.Equal(got, stream) {
				t.Fatal("the snapshot received after the fault reads back differently")
			}
			if tc.local && snapshotManifest(t, got).StoreSeq != b.seq {
				t.Fatalf("the local snapshot after the fault covers seq %d, the store is at %d", snapshotManifest(t, got).StoreSeq, b.seq)
			}
		})
	}
}

// isSegmentFile reports whether path names a CommitLog segment file.
func isSegmentFile(path string) bool {
	base := filepath.Base(path)
	return len(base) == 20 && strings.Trim(base, "0123456789") == ""
}
