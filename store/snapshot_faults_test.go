package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// TestRestoreFaults: RestoreFrom through a file system that fails one of
// its steps. A link the file system refuses (EXDEV) or an exchange it
// does not support (EINVAL) takes the fallback (a copy, two renames) and
// the restore succeeds. A failure before the swap leaves the store as it
// was, serving reads and writes, with no staging directory behind. A
// failure from the swap on makes the store refuse writes; a store
// reopened from its directory afterwards is consistent (the old log or
// the new one, whole) and a second RestoreFrom succeeds.
func TestRestoreFaults(t *testing.T) {
	const queues, batchSize, body = 4, 4, 700
	a := mustOpen(t, testConfig(t.TempDir()))
	defer a.Close()
	n := 0
	putBatches(t, a, "T", queues, 60, batchSize, body, &n)
	point, seq := a.MaxPhysicalOffset(), a.LastSeq()
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	staged := stageSegments(t, a, point)
	wantLog := logEntries(t, a, point)

	for _, tc := range []struct {
		name  string
		op    vfs.Op
		base  string // the failing path's base name ("": any)
		errno syscall.Errno
		// outcome: "restored" (the fallback worked), "untouched" (failed
		// before the swap), "fenced" (failed from the swap on)
		outcome string
	}{
		{"link refused: copy", vfs.OpLink, "", syscall.EXDEV, "restored"},
		{"exchange unsupported: renames", vfs.OpExchange, commitLogDirName, syscall.EINVAL, "restored"},
		{"copy cannot be created", vfs.OpCreate, "", syscall.ENOSPC, "untouched"},
		{"staging directory sync", vfs.OpSync, restoreDirName, syscall.EIO, "untouched"},
		{"exchange fails", vfs.OpExchange, commitLogDirName, syscall.EIO, "fenced"},
		{"store directory sync after the swap", vfs.OpSync, "", syscall.EIO, "fenced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var on atomic.Bool
			cfg := testConfig(dir)
			cfg.FS = &vfs.Faulty{Fail: func(op vfs.Op, path string, _ int64) error {
				if !on.Load() || op != tc.op {
					return nil
				}
				switch {
				case tc.name == "copy cannot be created" && op == vfs.OpCreate:
					if filepath.Base(filepath.Dir(path)) != restoreDirName {
						return nil
					}
				case tc.name == "store directory sync after the swap":
					if path != dir {
						return nil
					}
				case tc.base != "" && filepath.Base(path) != tc.base:
					return nil
				}
				return tc.errno
			}}
			if tc.name == "copy cannot be created" {
				// The copy is what is being failed: links are refused too.
				inner := cfg.FS.(*vfs.Faulty).Fail
				cfg.FS.(*vfs.Faulty).Fail = func(op vfs.Op, path string, sz int64) error {
					if on.Load() && op == vfs.OpLink {
						return syscall.EXDEV
					}
					return inner(op, path, sz)
				}
			}
			b := mustOpen(t, cfg)
			defer func() { _ = b.Close() }()
			m := 0
			own := putBatches(t, b, "T", queues, 25, batchSize, body, &m)
			ownLog := logEntries(t, b, 1<<62)

			on.Store(true)
			err := b.RestoreFrom(staged, seq)
			on.Store(false)
			switch tc.outcome {
			case "restored":
				if err != nil {
					t.Fatal(err)
				}
				if got := logEntries(t, b, 1<<62); !bytes.Equal(got, wantLog) {
					t.Fatal("the restored log differs from the source's")
				}
				verifyConsistent(t, b, nil)
				return
			case "untouched":
				if !errors.Is(err, ErrRestore) || !errors.Is(err, tc.errno) {
					t.Fatalf("RestoreFrom: %v, want ErrRestore wrapping %v", err, tc.errno)
				}
				if _, serr := os.Stat(filepath.Join(dir, restoreDirName)); !errors.Is(serr, os.ErrNotExist) {
					t.Fatalf("staging directory left behind: %v", serr)
				}
				if got := logEntries(t, b, 1<<62); !bytes.Equal(got, ownLog) {
					t.Fatal("a restore that failed before the swap changed the log")
				}
				if _, err := b.Put(own[len(own)-1].seq+1, batchMsgs("T", queues, batchSize, body, m)); err != nil {
					t.Fatalf("put after a restore that failed before the swap: %v", err)
				}
				verifyConsistent(t, b, nil)
			case "fenced":
				if !errors.Is(err, ErrRestore) || !errors.Is(err, tc.errno) {
					t.Fatalf("RestoreFrom: %v, want ErrRestore wrapping %v", err, tc.errno)
				}
				if _, err := b.Put(seq+1, batchMsgs("T", queues, batchSize, body, 0)); err == nil {
					t.Fatal("a store whose restore failed after the swap took a put")
				}
				_ = b.Close()
				b = mustOpen(t, cfg)
				got := logEntries(t, b, 1<<62)
				if !bytes.Equal(got, ownLog) && !bytes.Equal(got, wantLog) {
					t.Fatal("reopened after a failed restore, the log is neither the old one nor the new one")
				}
				verifyConsistent(t, b, nil)
			}
			// The restore, done again on the same store, succeeds.
			if err := b.RestoreFrom(staged, seq); err != nil {
				t.Fatal(err)
			}
			if got := logEntries(t, b, 1<<62); !bytes.Equal(got, wantLog) {
				t.Fatal("the restored log differs from the source's")
			}
			verifyConsistent(t, b, nil)
		})
	}
}
