package fsutil

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrLocked is returned by Lock when another process (or another open of the
// same directory in this process) already holds the lock.
var ErrLocked = errors.New("fsutil: directory is locked by another process")

// SyncDir fsyncs a directory so that a created, renamed or removed entry in it
// survives power loss.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsutil: open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsutil: sync dir %s: %w", dir, err)
	}
	return nil
}

// MkdirAll creates dir and its parents and fsyncs the parent of every
// directory it had to create.
func MkdirAll(dir string) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("fsutil: %s is not a directory", dir)
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("fsutil: mkdir %s: %w", dir, err)
	}
	return SyncDir(parent)
}

// DirLock is an exclusive advisory lock on a directory, held through a LOCK
// file inside it. It is released by Release or when the process exits.
type DirLock struct {
	f *os.File
}

// Lock takes the exclusive lock of dir (creating dir/LOCK if needed). It does
// not wait: if the lock is held it returns an error wrapping ErrLocked.
func Lock(dir string) (*DirLock, error) {
	if err := MkdirAll(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("fsutil: open lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("fsutil: flock %s: %w", path, err)
	}
	return &DirLock{f: f}, nil
}

// Release drops the lock. It is safe to call on a nil lock and more than once.
func (l *DirLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// WriteFileAtomic replaces path with data so that after a crash the file holds
// either the old or the new contents in full: it writes a temporary file,
// fsyncs it, renames it over path and fsyncs the directory.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("fsutil: create temp for %s: %w", path, err)
	}
	name := tmp.Name()
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(name)
		return fmt.Errorf("fsutil: write %s: %w", path, werr)
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return fmt.Errorf("fsutil: rename %s: %w", path, err)
	}
	return SyncDir(dir)
}

// RemoveFile removes path and fsyncs its directory. A file that does not
// exist is not an error.
func RemoveFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("fsutil: remove %s: %w", path, err)
	}
	return SyncDir(filepath.Dir(path))
}
