package dledger

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// TestFileStableWriteFails: raft's state whose file cannot be replaced
// (its temporary file cannot be written, synced or renamed) fails Set
// with the file system's error and keeps the previous value, in memory
// and on disk; the next Set writes it.
func TestFileStableWriteFails(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpWrite, vfs.OpSync, vfs.OpRename} {
		t.Run(op.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), stableFileName)
			var on atomic.Bool
			fs := &vfs.Faulty{Fail: func(o vfs.Op, _ string, _ int64) error {
				if on.Load() && o == op {
					return syscall.EIO
				}
				return nil
			}}
			s, err := openFileStable(fs, path)
			if err != nil {
				t.Fatal(err)
			}
			key := []byte("CurrentTerm")
			if err := s.SetUint64(key, 7); err != nil {
				t.Fatal(err)
			}
			on.Store(true)
			if err := s.SetUint64(key, 8); !errors.Is(err, syscall.EIO) {
				t.Fatalf("Set whose file cannot be replaced: %v, want EIO", err)
			}
			on.Store(false)
			if v, _ := s.GetUint64(key); v != 7 {
				t.Fatalf("term %d after a failed Set, want 7", v)
			}
			if r, err := openFileStable(nil, path); err != nil {
				t.Fatal(err)
			} else if v, _ := r.GetUint64(key); v != 7 {
				t.Fatalf("the file says term %d after a failed Set, want 7", v)
			}
			if err := s.SetUint64(key, 8); err != nil {
				t.Fatal(err)
			}
			if r, _ := openFileStable(nil, path); r == nil {
				t.Fatal("reopen")
			} else if v, _ := r.GetUint64(key); v != 8 {
				t.Fatalf("term %d after the next Set, want 8", v)
			}
		})
	}
}
