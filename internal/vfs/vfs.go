package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// File is an open file: what *os.File offers that the write path uses.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	Name() string
	Stat() (os.FileInfo, error)
	Sync() error
	Truncate(size int64) error
	// Fd is the descriptor, for what only the kernel can tell about the
	// file without changing it (lseek SEEK_DATA, fadvise).
	Fd() uintptr
}

// FS opens, maps, syncs and removes files.
type FS interface {
	// OpenFile is os.OpenFile.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Remove is os.Remove.
	Remove(name string) error
	// RemoveAll is os.RemoveAll.
	RemoveAll(path string) error
	// Rename is os.Rename.
	Rename(oldpath, newpath string) error
	// Link is os.Link: newpath becomes another name of oldpath's file.
	Link(oldpath, newpath string) error
	// Exchange swaps the names a and b atomically (renameat2
	// RENAME_EXCHANGE); both must exist. Where the file system or kernel
	// cannot, the error wraps unix.EINVAL, ENOSYS or EOPNOTSUPP and
	// nothing changed.
	Exchange(a, b string) error
	// Mkdir is os.Mkdir (the caller syncs the parent).
	Mkdir(name string, perm os.FileMode) error
	// MkdirAll creates dir and its parents, and fsyncs the parent of
	// every directory it creates.
	MkdirAll(dir string) error
	// ReadDir is os.ReadDir.
	ReadDir(dir string) ([]os.DirEntry, error)
	// Stat is os.Stat.
	Stat(name string) (os.FileInfo, error)
	// SyncDir fsyncs a directory, so that entries created, renamed or
	// removed in it survive a power loss.
	SyncDir(dir string) error
	// SyncData makes f's data, and what is needed to read it back (its
	// size), durable (fdatasync).
	SyncData(f File) error
	// SyncFS makes every dirty page and inode of the file system holding
	// dir durable in one call (syncfs; since Linux 5.8 it reports
	// writeback errors).
	SyncFS(dir string) error
	// Allocate is fallocate(2) on f: mode 0 reserves [off, off+n),
	// unix.FALLOC_FL_ZERO_RANGE zeroes it.
	Allocate(f File, mode uint32, off, n int64) error
	// Map maps the first size bytes of f, shared and writable; Unmap
	// undoes a mapping.
	Map(f File, size int) ([]byte, error)
	Unmap(b []byte) error
	// SyncMapped writes back the pages of b, a part of a mapping of the
	// file at path starting on a page boundary, and waits (msync
	// MS_SYNC). The path names the file for errors and faults; the
	// mapping may outlive the descriptor it was made from.
	SyncMapped(path string, b []byte) error
	// Populate gives every page of b, a part of a shared writable mapping
	// of the file at path starting on a page boundary, its storage, so
	// that writing through the mapping cannot fault for want of space
	// (madvise MADV_POPULATE_WRITE). A file system that cannot allocate a
	// page fails it (EFAULT, ENOMEM or ENOSPC) where a write through the
	// mapping would raise SIGBUS. On a kernel without the advice (before
	// Linux 5.14) it does nothing and returns nil.
	Populate(path string, b []byte) error
}

// Default is the operating system's file system.
var Default FS = osFS{}

// Or returns fs, or Default when fs is nil (a config's zero value).
func Or(fs FS) FS {
	if fs == nil {
		return Default
	}
	return fs
}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) Mkdir(name string, perm os.FileMode) error { return os.Mkdir(name, perm) }

func (osFS) RemoveAll(path string) error { return os.RemoveAll(path) }

func (osFS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

func (osFS) Link(oldpath, newpath string) error { return os.Link(oldpath, newpath) }

func (osFS) Exchange(a, b string) error {
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		return &os.LinkError{Op: "renameat2", Old: a, New: b, Err: err}
	}
	return nil
}

func (fs osFS) MkdirAll(dir string) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("vfs: %s is not a directory", dir)
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := fs.MkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("vfs: mkdir %s: %w", dir, err)
	}
	return fs.SyncDir(parent)
}

func (osFS) ReadDir(dir string) ([]os.DirEntry, error) { return os.ReadDir(dir) }

func (osFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

func (osFS) SyncData(f File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

func (osFS) SyncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	for {
		err = unix.Syncfs(int(d.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("vfs: open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("vfs: sync dir %s: %w", dir, err)
	}
	return nil
}

func (osFS) Allocate(f File, mode uint32, off, n int64) error {
	return unix.Fallocate(int(f.Fd()), mode, off, n)
}

func (osFS) Map(f File, size int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

func (osFS) Unmap(b []byte) error { return unix.Munmap(b) }

func (osFS) SyncMapped(_ string, b []byte) error { return unix.Msync(b, unix.MS_SYNC) }

// noPopulate is set once the kernel has refused MADV_POPULATE_WRITE.
var noPopulate atomic.Bool

func (osFS) Populate(_ string, b []byte) error {
	if noPopulate.Load() {
		return nil
	}
	for {
		err := unix.Madvise(b, unix.MADV_POPULATE_WRITE)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EINVAL):
			noPopulate.Store(true)
			return nil
		}
		return err
	}
}

// Op is an operation Faulty may fail.
type Op int

const (
	// OpWrite is File.WriteAt.
	OpWrite Op = iota + 1
	// OpCreate is an OpenFile that may create the file (os.O_CREATE).
	OpCreate
	// OpAllocate is FS.Allocate reserving blocks (not zeroing), and
	// FS.Populate.
	OpAllocate
	// OpTruncate is File.Truncate (extending a file sparsely takes no
	// blocks).
	OpTruncate
	// OpSync is File.Sync, FS.SyncData, FS.SyncMapped, FS.SyncDir and
	// FS.SyncFS (the path is the file's, or the directory's).
	OpSync
	// OpRemove is FS.Remove and FS.RemoveAll.
	OpRemove
	// OpRename is FS.Rename (the path is the new name).
	OpRename
	// OpMkdir is FS.Mkdir, and FS.MkdirAll creating a directory.
	OpMkdir
	// OpLink is FS.Link (the path is the new name).
	OpLink
	// OpExchange is FS.Exchange (the path is the second name).
	OpExchange
)

func (o Op) String() string {
	switch o {
	case OpWrite:
		return "write"
	case OpCreate:
		return "create"
	case OpAllocate:
		return "allocate"
	case OpSync:
		return "sync"
	case OpRemove:
		return "remove"
	case OpTruncate:
		return "truncate"
	case OpRename:
		return "rename"
	case OpMkdir:
		return "mkdir"
	case OpLink:
		return "link"
	case OpExchange:
		return "exchange"
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// Faulty is an FS whose operations fail when Fail says so. Fail is asked
// before each operation with the operation, the file's path (a
// directory's for SyncDir) and the bytes it would write or reserve (0
// for the others); a non-nil error (typically a syscall.Errno) fails the
// operation, which then changes nothing, and is returned as the real
// call would return it (an *os.PathError from File's methods, OpenFile
// and Remove, as it is from SyncDir and the mapping calls). Fail is
// called from any goroutine that uses the FS.
type Faulty struct {
	FS   FS
	Fail func(op Op, path string, n int64) error
}

func (f *Faulty) inner() FS { return Or(f.FS) }

// ask returns Fail's verdict on op, as the error itself.
func (f *Faulty) ask(op Op, path string, n int64) error {
	if f.Fail == nil {
		return nil
	}
	return f.Fail(op, path, n)
}

// askPath is ask with the error as an *os.PathError of call.
func (f *Faulty) askPath(op Op, call, path string, n int64) error {
	if err := f.ask(op, path, n); err != nil {
		return &os.PathError{Op: call, Path: path, Err: err}
	}
	return nil
}

func (f *Faulty) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if flag&os.O_CREATE != 0 {
		if _, err := f.inner().Stat(name); errors.Is(err, os.ErrNotExist) {
			if err := f.askPath(OpCreate, "open", name, 0); err != nil {
				return nil, err
			}
		}
	}
	file, err := f.inner().OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: file, fs: f}, nil
}

func (f *Faulty) Remove(name string) error {
	if err := f.askPath(OpRemove, "remove", name, 0); err != nil {
		return err
	}
	return f.inner().Remove(name)
}

func (f *Faulty) RemoveAll(path string) error {
	if err := f.askPath(OpRemove, "unlinkat", path, 0); err != nil {
		return err
	}
	return f.inner().RemoveAll(path)
}

func (f *Faulty) Rename(oldpath, newpath string) error {
	if err := f.ask(OpRename, newpath, 0); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return f.inner().Rename(oldpath, newpath)
}

func (f *Faulty) Link(oldpath, newpath string) error {
	if err := f.ask(OpLink, newpath, 0); err != nil {
		return &os.LinkError{Op: "link", Old: oldpath, New: newpath, Err: err}
	}
	return f.inner().Link(oldpath, newpath)
}

func (f *Faulty) Exchange(a, b string) error {
	if err := f.ask(OpExchange, b, 0); err != nil {
		return &os.LinkError{Op: "renameat2", Old: a, New: b, Err: err}
	}
	return f.inner().Exchange(a, b)
}

func (f *Faulty) Mkdir(name string, perm os.FileMode) error {
	if err := f.askPath(OpMkdir, "mkdir", name, 0); err != nil {
		return err
	}
	return f.inner().Mkdir(name, perm)
}

func (f *Faulty) MkdirAll(dir string) error {
	if _, err := f.inner().Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := f.ask(OpMkdir, dir, 0); err != nil {
			return fmt.Errorf("vfs: mkdir %s: %w", dir, err)
		}
	}
	return f.inner().MkdirAll(dir)
}

func (f *Faulty) ReadDir(dir string) ([]os.DirEntry, error) { return f.inner().ReadDir(dir) }

func (f *Faulty) Stat(name string) (os.FileInfo, error) { return f.inner().Stat(name) }

func (f *Faulty) SyncData(file File) error {
	if err := f.ask(OpSync, file.Name(), 0); err != nil {
		return err
	}
	return f.inner().SyncData(unwrap(file))
}

func (f *Faulty) SyncFS(dir string) error {
	if err := f.ask(OpSync, dir, 0); err != nil {
		return err
	}
	return f.inner().SyncFS(dir)
}

func (f *Faulty) SyncDir(dir string) error {
	if err := f.ask(OpSync, dir, 0); err != nil {
		return fmt.Errorf("vfs: sync dir %s: %w", dir, err)
	}
	return f.inner().SyncDir(dir)
}

func (f *Faulty) Allocate(file File, mode uint32, off, n int64) error {
	if mode&unix.FALLOC_FL_ZERO_RANGE == 0 {
		if err := f.ask(OpAllocate, file.Name(), n); err != nil {
			return err
		}
	}
	return f.inner().Allocate(unwrap(file), mode, off, n)
}

func (f *Faulty) Map(file File, size int) ([]byte, error) { return f.inner().Map(unwrap(file), size) }

func (f *Faulty) Unmap(b []byte) error { return f.inner().Unmap(b) }

func (f *Faulty) SyncMapped(path string, b []byte) error {
	if err := f.ask(OpSync, path, 0); err != nil {
		return err
	}
	return f.inner().SyncMapped(path, b)
}

func (f *Faulty) Populate(path string, b []byte) error {
	if err := f.ask(OpAllocate, path, int64(len(b))); err != nil {
		return err
	}
	return f.inner().Populate(path, b)
}

// faultyFile is a File of a Faulty FS.
type faultyFile struct {
	File
	fs *Faulty
}

func (f *faultyFile) WriteAt(b []byte, off int64) (int, error) {
	if err := f.fs.askPath(OpWrite, "write", f.Name(), int64(len(b))); err != nil {
		return 0, err
	}
	return f.File.WriteAt(b, off)
}

func (f *faultyFile) Sync() error {
	if err := f.fs.askPath(OpSync, "sync", f.Name(), 0); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *faultyFile) Truncate(size int64) error {
	if err := f.fs.askPath(OpTruncate, "truncate", f.Name(), size); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

// unwrap returns the file a Faulty file wraps, or f.
func unwrap(f File) File {
	if ff, ok := f.(*faultyFile); ok {
		return ff.File
	}
	return f
}

// Under reports whether path is dir or lies below it.
func Under(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
