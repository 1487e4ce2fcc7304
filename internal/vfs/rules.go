package vfs

import (
	"sync"
	"syscall"
)

// Rules are Fail functions for Faulty; a test combines them with its own.

// FullAfter fails every write and every block reservation with ENOSPC
// once budget bytes have been written or reserved in files below dir
// (the one that crosses the budget fails whole), until Reset gives the
// disk room again. Safe for concurrent use.
type FullAfter struct {
	Dir string

	mu     sync.Mutex
	budget int64
	full   bool
}

// NewFullAfter returns a FullAfter for dir with budget bytes left.
func NewFullAfter(dir string, budget int64) *FullAfter {
	return &FullAfter{Dir: dir, budget: budget}
}

// Fail is the Faulty.Fail of the rule.
func (d *FullAfter) Fail(op Op, path string, n int64) error {
	if (op != OpWrite && op != OpAllocate) || !Under(path, d.Dir) {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.full || n > d.budget {
		d.full = true
		return syscall.ENOSPC
	}
	d.budget -= n
	return nil
}

// Full reports whether a write was refused.
func (d *FullAfter) Full() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.full
}

// Reset gives the disk budget bytes of room again.
func (d *FullAfter) Reset(budget int64) {
	d.mu.Lock()
	d.full, d.budget = false, budget
	d.mu.Unlock()
}

// FailSync fails syncs of files below Dir with EIO while it is on (a
// device that lost its write cache, a file system gone read-only).
type FailSync struct {
	Dir string

	mu sync.Mutex
	on bool
	n  int
}

// Set turns the failure on or off.
func (s *FailSync) Set(on bool) {
	s.mu.Lock()
	s.on = on
	s.mu.Unlock()
}

// Failed is how many syncs were failed.
func (s *FailSync) Failed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Fail is the Faulty.Fail of the rule.
func (s *FailSync) Fail(op Op, path string, _ int64) error {
	if op != OpSync || !Under(path, s.Dir) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.on {
		return nil
	}
	s.n++
	return syscall.EIO
}

// Any returns a Fail that asks each of fails in turn and returns the
// first error.
func Any(fails ...func(op Op, path string, n int64) error) func(op Op, path string, n int64) error {
	return func(op Op, path string, n int64) error {
		for _, f := range fails {
			if err := f(op, path, n); err != nil {
				return err
			}
		}
		return nil
	}
}
