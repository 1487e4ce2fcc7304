package jepsen

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func mountTmpfs(dir string, size int64) error {
	return unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0755", size))
}

// unmountTmpfs unmounts dir; a file system still busy (a process that
// outlived its stop) is detached and goes when it is no longer used.
func unmountTmpfs(dir string) error {
	if err := unix.Unmount(dir, 0); err == nil {
		return nil
	}
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("jepsen: unmount %s: %w", dir, err)
	}
	return nil
}
