package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestUnder(t *testing.T) {
	for _, tc := range []struct {
		path, dir string
		want      bool
	}{
		{"/a/b/c", "/a/b", true},
		{"/a/b", "/a/b", true},
		{"/a/bc", "/a/b", false},
		{"/a", "/a/b", false},
		{"/a/b/../c", "/a/b", false},
		{"/a/..b/c", "/a", true},
	} {
		if got := Under(tc.path, tc.dir); got != tc.want {
			t.Errorf("Under(%q, %q) = %v, want %v", tc.path, tc.dir, got, tc.want)
		}
	}
}

// TestFaultyPassesThrough: with no failure a Faulty file system creates,
// writes, maps, syncs and removes real files as the OS one does.
func TestFaultyPassesThrough(t *testing.T) {
	for name, fs := range map[string]FS{"os": Default, "faulty": &Faulty{}} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(8192); err != nil {
				t.Fatal(err)
			}
			if err := fs.Allocate(f, 0, 0, 8192); err != nil && !errors.Is(err, syscall.EOPNOTSUPP) {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte("hello"), 4096); err != nil {
				t.Fatal(err)
			}
			m, err := fs.Map(f, 8192)
			if err != nil {
				t.Fatal(err)
			}
			if string(m[4096:4101]) != "hello" {
				t.Fatalf("mapping reads %q", m[4096:4101])
			}
			if err := fs.Populate(f.Name(), m[:4096]); err != nil {
				t.Fatal(err)
			}
			m[0] = 'h'
			if err := fs.SyncMapped(f.Name(), m); err != nil {
				t.Fatal(err)
			}
			var one [1]byte
			if _, err := f.ReadAt(one[:], 0); err != nil || one[0] != 'h' {
				t.Fatalf("a write through a populated mapping reads back %q, %v", one[:], err)
			}
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			if err := fs.SyncData(f); err != nil {
				t.Fatal(err)
			}
			if err := fs.SyncFS(dir); err != nil {
				t.Fatal(err)
			}
			if err := fs.Unmap(m); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if es, err := fs.ReadDir(dir); err != nil || len(es) != 1 {
				t.Fatalf("ReadDir: %v %v", es, err)
			}
			if err := fs.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := fs.Remove(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("removing a file that is gone: %v", err)
			}
			if err := fs.SyncDir(dir); err != nil {
				t.Fatal(err)
			}
			sub := filepath.Join(dir, "a", "b")
			if err := fs.MkdirAll(sub); err != nil {
				t.Fatal(err)
			}
			if err := fs.Mkdir(filepath.Join(sub, "c"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := fs.Rename(filepath.Join(sub, "c"), filepath.Join(dir, "c")); err != nil {
				t.Fatal(err)
			}
			if fi, err := fs.Stat(filepath.Join(dir, "c")); err != nil || !fi.IsDir() {
				t.Fatalf("Stat after Rename: %v %v", fi, err)
			}
			if err := fs.RemoveAll(filepath.Join(dir, "a")); err != nil {
				t.Fatal(err)
			}
			if _, err := fs.Stat(sub); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("RemoveAll left %s: %v", sub, err)
			}
			// Link, and Exchange of two directories.
			x, y := filepath.Join(dir, "x"), filepath.Join(dir, "y")
			for i, d := range []string{x, y} {
				if err := fs.MkdirAll(d); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, "file"), []byte{byte('0' + i)}, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := fs.Link(filepath.Join(x, "file"), filepath.Join(dir, "linked")); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "linked")); err != nil || string(b) != "0" {
				t.Fatalf("linked file reads %q, %v", b, err)
			}
			switch err := fs.Exchange(x, y); {
			case errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.ENOSYS), errors.Is(err, syscall.EOPNOTSUPP):
				t.Logf("this file system cannot exchange names: %v", err)
			case err != nil:
				t.Fatal(err)
			default:
				if b, err := os.ReadFile(filepath.Join(x, "file")); err != nil || string(b) != "1" {
					t.Fatalf("after Exchange x holds %q, %v", b, err)
				}
			}
		})
	}
}

// TestFaultyFails: each operation Fail refuses fails with the error a
// real call returns and changes nothing on disk.
func TestFaultyFails(t *testing.T) {
	dir := t.TempDir()
	var refuse Op
	fs := &Faulty{Fail: func(op Op, _ string, _ int64) error {
		if op == refuse {
			return syscall.EIO
		}
		return nil
	}}
	path := filepath.Join(dir, "f")
	refuse = OpCreate
	if _, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644); !isPathErr(err, "open") {
		t.Fatalf("create: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused create made the file: %v", err)
	}
	refuse = 0
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// An existing file opened with O_CREATE is not a creation.
	refuse = OpCreate
	if g, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		t.Fatalf("reopening an existing file with O_CREATE: %v", err)
	} else {
		g.Close()
	}
	refuse = OpWrite
	if _, err := f.WriteAt([]byte("x"), 0); !isPathErr(err, "write") {
		t.Fatalf("write: %v", err)
	}
	if fi, _ := f.Stat(); fi.Size() != 0 {
		t.Fatalf("a refused write changed the file: size %d", fi.Size())
	}
	refuse = OpTruncate
	if err := f.Truncate(4096); !isPathErr(err, "truncate") {
		t.Fatalf("truncate: %v", err)
	}
	refuse = OpAllocate
	if err := fs.Allocate(f, 0, 0, 4096); !errors.Is(err, syscall.EIO) {
		t.Fatalf("allocate: %v", err)
	}
	if err := f.Truncate(4096); err != nil {
		t.Fatal(err)
	}
	m, err := fs.Map(f, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Unmap(m)
	refuse = OpAllocate
	if err := fs.Populate(path, m); !errors.Is(err, syscall.EIO) {
		t.Fatalf("populate: %v", err)
	}
	refuse = OpSync
	if err := fs.SyncMapped(path, m); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync mapped: %v", err)
	}
	if err := f.Sync(); !isPathErr(err, "sync") {
		t.Fatalf("sync: %v", err)
	}
	if err := fs.SyncDir(dir); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync dir: %v", err)
	}
	if err := fs.SyncData(f); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync data: %v", err)
	}
	if err := fs.SyncFS(dir); !errors.Is(err, syscall.EIO) {
		t.Fatalf("syncfs: %v", err)
	}
	refuse = OpRemove
	if err := fs.Remove(path); !isPathErr(err, "remove") {
		t.Fatalf("remove: %v", err)
	}
	if err := fs.RemoveAll(path); !errors.Is(err, syscall.EIO) {
		t.Fatalf("remove all: %v", err)
	}
	refuse = OpRename
	if err := fs.Rename(path, path+".new"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("rename: %v", err)
	}
	refuse = OpLink
	var le *os.LinkError
	if err := fs.Link(path, path+".link"); !errors.As(err, &le) || le.Op != "link" || !errors.Is(err, syscall.EIO) {
		t.Fatalf("link: %v", err)
	}
	if _, err := os.Stat(path + ".link"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused link made the name: %v", err)
	}
	refuse = OpExchange
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("o"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fs.Exchange(path, other); !errors.As(err, &le) || le.Op != "renameat2" || !errors.Is(err, syscall.EIO) {
		t.Fatalf("exchange: %v", err)
	}
	if b, err := os.ReadFile(other); err != nil || string(b) != "o" {
		t.Fatalf("a refused exchange swapped the names: %q, %v", b, err)
	}
	refuse = OpMkdir
	if err := fs.Mkdir(filepath.Join(dir, "d"), 0o755); !isPathErr(err, "mkdir") {
		t.Fatalf("mkdir: %v", err)
	}
	if err := fs.MkdirAll(filepath.Join(dir, "e", "f")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("mkdir all: %v", err)
	}
	if err := fs.MkdirAll(dir); err != nil {
		t.Fatalf("MkdirAll of a directory that exists: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("a refused remove removed the file: %v", err)
	}
}

func isPathErr(err error, op string) bool {
	var pe *os.PathError
	return errors.As(err, &pe) && pe.Op == op && errors.Is(err, syscall.EIO)
}

func TestFullAfter(t *testing.T) {
	d := NewFullAfter("/data", 100)
	if err := d.Fail(OpWrite, "/data/a", 60); err != nil {
		t.Fatal(err)
	}
	if err := d.Fail(OpWrite, "/other/a", 1000); err != nil {
		t.Fatalf("a write outside the directory was refused: %v", err)
	}
	if err := d.Fail(OpTruncate, "/data/a", 1<<30); err != nil {
		t.Fatalf("a sparse extension was refused: %v", err)
	}
	if err := d.Fail(OpWrite, "/data/a", 41); !errors.Is(err, syscall.ENOSPC) || !d.Full() {
		t.Fatalf("a write past the budget: %v (full %v)", err, d.Full())
	}
	if err := d.Fail(OpWrite, "/data/a", 1); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a full disk took a byte: %v", err)
	}
	d.Reset(10)
	if err := d.Fail(OpAllocate, "/data/b", 10); err != nil || d.Full() {
		t.Fatalf("after Reset: %v (full %v)", err, d.Full())
	}
}

func TestFailSyncAndAny(t *testing.T) {
	s := &FailSync{Dir: "/data"}
	full := NewFullAfter("/data", 0)
	fail := Any(s.Fail, full.Fail)
	if err := fail(OpSync, "/data/a", 0); err != nil {
		t.Fatalf("sync while off: %v", err)
	}
	s.Set(true)
	if err := fail(OpSync, "/data/a", 0); !errors.Is(err, syscall.EIO) || s.Failed() != 1 {
		t.Fatalf("sync while on: %v (failed %d)", err, s.Failed())
	}
	if err := fail(OpSync, "/elsewhere", 0); err != nil {
		t.Fatalf("a sync outside the directory: %v", err)
	}
	if err := fail(OpWrite, "/data/a", 1); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Any did not ask the second rule: %v", err)
	}
}
