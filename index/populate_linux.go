package index

import (
	"errors"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noPopulate is set once the kernel has refused MADV_POPULATE_WRITE
// (before Linux 5.14): puts then write through the mapping as they are.
var noPopulate atomic.Bool

// populate allocates b's pages for writing, or says why it cannot (EFAULT
// where a write would have raised SIGBUS, ENOMEM).
func populate(b []byte) error {
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
