package vfs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// WriteFileAtomic replaces path with data on fs so that after a crash the
// file holds either the old or the new contents in full: it writes a
// temporary file beside it, fsyncs it, renames it over path and fsyncs the
// directory. The file is created readable and writable by its owner only
// (0600, as os.CreateTemp creates it): some of these files are secrets. A
// failure leaves path as it was and removes the temporary file.
func WriteFileAtomic(fs FS, path string, data []byte) error {
	dir := filepath.Dir(path)
	var f File
	var tmp string
	for {
		tmp = path + ".tmp" + strconv.FormatUint(rand.Uint64(), 36)
		var err error
		f, err = fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("vfs: create temp for %s: %w", path, err)
		}
		break
	}
	_, werr := f.WriteAt(data, 0)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = fs.Remove(tmp) // the write's error is the one to report
		return fmt.Errorf("vfs: write %s: %w", path, werr)
	}
	if err := fs.Rename(tmp, path); err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("vfs: rename %s: %w", path, err)
	}
	return fs.SyncDir(dir)
}

// RemoveFile removes path from fs and fsyncs its directory. A file that
// does not exist is not an error.
func RemoveFile(fs FS, path string) error {
	if err := fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("vfs: remove %s: %w", path, err)
	}
	return fs.SyncDir(filepath.Dir(path))
}
