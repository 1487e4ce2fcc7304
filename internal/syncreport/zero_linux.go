//go:build linux

package syncreport

import (
	"os"

	"golang.org/x/sys/unix"
)

// zeroRange makes [off, off+n) of f read as zeros without changing its
// size: a punched hole, as a never-written range of a sparse file is.
func zeroRange(f *os.File, off, n int64) error {
	err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
	if err == nil {
		return nil
	}
	return writeZeros(f, off, n)
}
