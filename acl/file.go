package acl

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/ledgermq/ledgermq/auth"
)

// File is an ACL file kept current: LoadFile reads it, Reload reads it
// again when its modification time or size changed. A file that no longer
// reads or parses leaves the previous rules in force, so an operator's
// half-saved edit never opens or closes the door. Rules is safe for
// concurrent use with Reload; the caller owns the goroutine that calls
// Reload (the broker and the name server both stat every few seconds).
type File struct {
	path string
	cur  atomic.Pointer[fileVersion]
}

// fileVersion is the rules in force and the file version they came from.
type fileVersion struct {
	rules *ACL
	mtime time.Time
	size  int64
}

// LoadFile reads and parses the ACL file at path. Errors wrap
// ErrBadConfig when the file does not parse.
func LoadFile(path string) (*File, error) {
	v, err := readVersion(path)
	if err != nil {
		return nil, err
	}
	f := &File{path: path}
	f.cur.Store(v)
	return f, nil
}

// Path is the file's path.
func (f *File) Path() string { return f.path }

// Rules is the rules in force.
func (f *File) Rules() *ACL { return f.cur.Load().rules }

// Reload reads the file again if its modification time or size changed
// and swaps in its rules. It reports whether new rules are in force; an
// error means the file changed but cannot be used, and the previous rules
// stay. An empty file is such a file: an editor that truncates before it
// writes shows one for a moment, and rules with no account would close the
// door to everyone. A file that changed again while it was read is left for
// the next call.
func (f *File) Reload() (bool, error) {
	cur := f.cur.Load()
	fi, err := os.Stat(f.path)
	if err != nil {
		return false, fmt.Errorf("acl: file: %w", err)
	}
	if sameVersion(fi, cur) {
		return false, nil
	}
	v, err := readVersion(f.path)
	if err != nil {
		return false, err
	}
	if v.size == 0 {
		return false, fmt.Errorf("%w: file %s is empty", ErrBadConfig, f.path)
	}
	if after, err := os.Stat(f.path); err != nil || !sameVersion(after, v) {
		return false, nil
	}
	f.cur.Store(v)
	return true, nil
}

// sameVersion reports whether fi describes the file version v was read from.
func sameVersion(fi os.FileInfo, v *fileVersion) bool {
	return fi.ModTime().Equal(v.mtime) && fi.Size() == v.size
}

func readVersion(path string) (*fileVersion, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("acl: file: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("acl: file: %w", err)
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("%w: file %s of %d bytes, at most %d", ErrBadConfig, path, fi.Size(), MaxFileSize)
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(fh, data); err != nil {
		return nil, fmt.Errorf("acl: file %s: %w", path, err)
	}
	rules, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("acl: file %s: %w", path, err)
	}
	return &fileVersion{rules: rules, mtime: fi.ModTime(), size: fi.Size()}, nil
}

// FirstAdmin is the credentials of the first admin account the file
// lists, if any (what a local cluster's brokers sign their name-server
// requests with).
func (a *ACL) FirstAdmin() (auth.Credentials, bool) {
	if a.firstAdmin == nil {
		return auth.Credentials{}, false
	}
	return auth.Credentials{AccessKey: a.firstAdmin.AccessKey, SecretKey: a.firstAdmin.SecretKey}, true
}
