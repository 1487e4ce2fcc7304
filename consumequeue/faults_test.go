package consumequeue

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// The file system failing under the queues (internal/vfs.Faulty): a
// failed operation is an error to the writer, it publishes nothing, and
// once the file system works again the writer goes on where it stopped.

// openFaulty opens a store in dir whose file system fails what fail says;
// its queues write each Put at once (tail_test.go fails the buffered
// writes).
func openFaulty(t *testing.T, dir string, upf int, fail func(vfs.Op, string, int64) error) *Store {
	t.Helper()
	s, err := Open(Config{Dir: dir, UnitsPerFile: upf, WriteBuffer: -1, Logger: hclog.NewNullLogger(),
		FS: &vfs.Faulty{Fail: fail}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// switchedFault fails op with err while the returned switch is on.
func switchedFault(op vfs.Op, err error) (func(vfs.Op, string, int64) error, *atomic.Bool) {
	on := new(atomic.Bool)
	return func(o vfs.Op, _ string, _ int64) error {
		if o == op && on.Load() {
			return err
		}
		return nil
	}, on
}

// TestPutFailures: a unit write that fails (EIO, a full disk), a new
// queue whose directory cannot be made, a file that cannot be created:
// each Put fails with the file system's error, MaxOffset stays, and the
// same Put succeeds once the file system works again; a reopen reads
// every unit that was acknowledged.
func TestPutFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   vfs.Op
		err  error
		// at is the offset the failing Put writes (upf 4: 4 starts a file).
		at int64
	}{
		{"write fails", vfs.OpWrite, syscall.EIO, 2},
		{"disk full", vfs.OpWrite, syscall.ENOSPC, 3},
		{"next file cannot be created", vfs.OpCreate, syscall.ENOSPC, 4},
		{"queue directory cannot be made", vfs.OpMkdir, syscall.ENOSPC, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fail, failing := switchedFault(tc.op, tc.err)
			s := openFaulty(t, dir, 4, fail)
			q := mustQueue(t, s, "T", 1)
			putRange(t, q, 0, tc.at)
			failing.Store(true)
			err := q.Put(tc.at, unitAt(tc.at))
			failing.Store(false)
			if !errors.Is(err, tc.err) {
				t.Fatalf("Put %d while %s: %v, want %v", tc.at, tc.name, err, tc.err)
			}
			if got := q.MaxOffset(); got != tc.at {
				t.Fatalf("MaxOffset %d after a failed Put, want %d", got, tc.at)
			}
			putRange(t, q, tc.at, tc.at+6)
			checkQueue(t, q, 0, tc.at+6)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openStore(t, dir, 4, 0)
			checkQueue(t, mustQueue(t, s, "T", 1), 0, tc.at+6)
		})
	}
}

// TestFlushSyncFailureIsRetried: a Flush whose syncs fail (one file at a
// time, or the whole file system at once) returns the error and keeps the
// work: the next Flush, once syncs work, syncs what the failed one did
// not.
func TestFlushSyncFailureIsRetried(t *testing.T) {
	for _, queues := range []int32{1, syncfsThreshold + 2} {
		dir := t.TempDir()
		fail := &vfs.FailSync{Dir: dir}
		var syncs atomic.Int64
		s := openFaulty(t, dir, 4, vfs.Any(fail.Fail, func(op vfs.Op, _ string, _ int64) error {
			if op == vfs.OpSync {
				syncs.Add(1)
			}
			return nil
		}))
		for id := range queues {
			putRange(t, mustQueue(t, s, "T", id), 0, 3)
		}
		fail.Set(true)
		if err := s.Flush(); !errors.Is(err, syscall.EIO) {
			t.Fatalf("%d queues: Flush with failing syncs: %v, want EIO", queues, err)
		}
		fail.Set(false)
		before := syncs.Load()
		if err := s.Flush(); err != nil {
			t.Fatalf("%d queues: Flush once syncs work: %v", queues, err)
		}
		if syncs.Load() == before {
			t.Fatalf("%d queues: the Flush after a failed one synced nothing", queues)
		}
		// Nothing is left to sync now.
		before = syncs.Load()
		if err := s.Flush(); err != nil || syncs.Load() != before {
			t.Fatalf("%d queues: an idle Flush: %v, %d syncs", queues, err, syncs.Load()-before)
		}
	}
}

// TestDeleteTopicRenameFails: a topic whose directory cannot be moved
// aside is not deleted: DeleteTopic fails, and a reopen still has every
// unit of it.
func TestDeleteTopicRenameFails(t *testing.T) {
	dir := t.TempDir()
	s := openFaulty(t, dir, 4, func(op vfs.Op, path string, _ int64) error {
		if op == vfs.OpRename && filepath.Dir(path) == dir {
			return syscall.EIO
		}
		return nil
	})
	putRange(t, mustQueue(t, s, "T", 0), 0, 9)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTopic("T"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("DeleteTopic with a failing rename: %v, want EIO", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, 4, 0)
	checkQueue(t, mustQueue(t, s, "T", 0), 0, 9)
}
