//go:build linux

package consumequeue

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync flushes f's data, and the metadata needed to read it back (its
// size), to stable storage.
func fdatasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// syncFS flushes every dirty page and inode of the file system holding dir
// in one call. Since Linux 5.8 it reports writeback errors.
func syncFS(dir string) error {
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
