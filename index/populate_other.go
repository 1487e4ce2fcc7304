//go:build !linux

package index

// populate does nothing where MADV_POPULATE_WRITE does not exist.
func populate([]byte) error { return nil }
