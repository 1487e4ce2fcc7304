//go:build !linux

package syncreport

import "os"

func zeroRange(f *os.File, off, n int64) error { return writeZeros(f, off, n) }
