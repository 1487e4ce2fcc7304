package syncreport

import "os"

// writeZeros writes zeros over [off, off+n) of f.
func writeZeros(f *os.File, off, n int64) error {
	buf := make([]byte, min(n, 1<<20))
	for n > 0 {
		k := min(n, int64(len(buf)))
		if _, err := f.WriteAt(buf[:k], off); err != nil {
			return err
		}
		off += k
		n -= k
	}
	return nil
}
