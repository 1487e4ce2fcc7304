package vfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrLocked is returned by Lock when another process (or another open of
// the same directory in this process) already holds the lock.
var ErrLocked = errors.New("vfs: directory is locked by another process")

// DirLock is an exclusive advisory lock on a directory, held through a
// LOCK file inside it. It is released by Release or when the process
// exits. It is the operating system's (flock), whatever FS the directory's
// files go through: it excludes other processes, which a test's FS does
// not stand for.
type DirLock struct {
	f *os.File
}

// Lock takes the exclusive lock of dir (creating dir and dir/LOCK if
// needed). It does not wait: if the lock is held it returns an error
// wrapping ErrLocked.
func Lock(dir string) (*DirLock, error) {
	if err := Default.MkdirAll(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("vfs: open lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("vfs: flock %s: %w", path, err)
	}
	return &DirLock{f: f}, nil
}

// Release drops the lock. It is safe to call on a nil lock and more than
// once.
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
