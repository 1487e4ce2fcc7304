//go:build !linux

package consumequeue

import "os"

func fdatasync(f *os.File) error { return f.Sync() }

func syncFS(string) error { return errUnsupported }
