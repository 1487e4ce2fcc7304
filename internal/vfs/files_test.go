package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestLockExcludesSecondOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	l1, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: got %v, want ErrLocked", err)
	}
	if err := l1.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := Lock(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	_ = l2.Release()
	_ = l2.Release()
}

func TestWriteFileAtomicReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b", "f")
	if err := Default.MkdirAll(filepath.Dir(p)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"one", "two"} {
		if err := WriteFileAtomic(Default, p, []byte(want)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != want {
			t.Fatalf("got %q %v, want %q", got, err, want)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("the file's mode: %v %v, want 0600", fi.Mode(), err)
		}
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Fatalf("temp files left behind: %v", ents)
	}
	if err := RemoveFile(Default, p); err != nil {
		t.Fatal(err)
	}
	if err := RemoveFile(Default, p); err != nil {
		t.Fatalf("removing a missing file: %v", err)
	}
}

// TestWriteFileAtomicFailures: a replacement whose temporary file cannot
// be created, written, synced or renamed fails with that error and
// leaves the old contents and no temporary file; one whose directory
// cannot be synced reports it (the new contents are in place).
func TestWriteFileAtomicFailures(t *testing.T) {
	for _, op := range []Op{OpCreate, OpWrite, OpSync, OpRename} {
		t.Run(op.String(), func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f")
			if err := WriteFileAtomic(Default, p, []byte("old")); err != nil {
				t.Fatal(err)
			}
			fs := &Faulty{Fail: func(o Op, path string, _ int64) error {
				if o == op && path != dir {
					return syscall.EIO
				}
				return nil
			}}
			if err := WriteFileAtomic(fs, p, []byte("new")); !errors.Is(err, syscall.EIO) {
				t.Fatalf("WriteFileAtomic: %v, want EIO", err)
			}
			if got, err := os.ReadFile(p); err != nil || string(got) != "old" {
				t.Fatalf("after a failed replacement the file holds %q, %v", got, err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Fatalf("a failed replacement left files: %v", ents)
			}
		})
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	fs := &Faulty{Fail: func(o Op, path string, _ int64) error {
		if o == OpSync && path == dir {
			return syscall.EIO
		}
		return nil
	}}
	if err := WriteFileAtomic(fs, p, []byte("new")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("a replacement whose directory cannot be synced: %v, want EIO", err)
	}
	if err := RemoveFile(fs, p); !errors.Is(err, syscall.EIO) {
		t.Fatalf("a removal whose directory cannot be synced: %v, want EIO", err)
	}
}
