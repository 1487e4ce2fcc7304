package syncreport

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// CutStats is what Cut did.
type CutStats struct {
	Files     int   // recorded files that were cut
	Dropped   int64 // bytes truncated or zeroed that were not zero
	Missing   int   // recorded files no longer there (deleted later)
	Untracked int   // files in dir the report does not record (left as they are)
}

// Cut applies a power loss to dir, whose node has been killed: every
// file the report records is cut back to its durable extent (truncated to
// Size, [Len, Size) zeroed), then every file under dir is fsynced and
// the report rewritten so that each recorded file's entry is what it now
// holds: its data to Len, zeros to its size. Files the report does not record are left as they are (see the
// package doc). It must not run while the node runs.
func Cut(dir string) (CutStats, error) {
	var st CutStats
	files, err := Read(dir)
	if err != nil {
		return st, fmt.Errorf("syncreport: cut %s: %w", dir, err)
	}
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		e := files[rel]
		path := filepath.Join(dir, filepath.FromSlash(rel))
		n, err := cutFile(path, e)
		if errors.Is(err, fs.ErrNotExist) {
			st.Missing++
			delete(files, rel)
			continue
		}
		if err != nil {
			return st, err
		}
		st.Files++
		st.Dropped += n
		fi, err := os.Stat(path)
		if err != nil {
			return st, err
		}
		// The file now is its durable extent: data to Len, zeros to its
		// size. Whatever is written into the zeros later is not durable
		// until a sync says so.
		files[rel] = Entry{Len: min(e.Len, fi.Size()), Size: fi.Size()}
	}
	// What is on disk now is what the next process starts from.
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(dir, p); !d.IsDir() && d.Type().IsRegular() {
			if _, ok := files[filepath.ToSlash(rel)]; !ok && rel != FileName {
				st.Untracked++
			}
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		return syncPath(p)
	})
	if err != nil {
		return st, fmt.Errorf("syncreport: cut %s: sync: %w", dir, err)
	}
	var b bytes.Buffer
	b.WriteString(header + "\n")
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		e := files[rel]
		fmt.Fprintf(&b, "%d %d %s\n", e.Len, e.Size, rel)
	}
	tmp := filepath.Join(dir, FileName+".tmp")
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return st, err
	}
	return st, os.Rename(tmp, filepath.Join(dir, FileName))
}

// cutFile cuts one file to e and returns how many non-zero bytes it
// dropped.
func cutFile(path string, e Entry) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	var dropped int64
	if size > e.Size {
		n, err := nonZero(f, e.Size, size)
		if err != nil {
			return 0, err
		}
		dropped += n
		if err := f.Truncate(e.Size); err != nil {
			return 0, fmt.Errorf("syncreport: truncate %s: %w", path, err)
		}
		size = e.Size
	}
	if size > e.Len {
		n, err := nonZero(f, e.Len, size)
		if err != nil {
			return 0, err
		}
		if n > 0 {
			dropped += n
			if err := zeroRange(f, e.Len, size-e.Len); err != nil {
				return 0, fmt.Errorf("syncreport: zero %s [%d, %d): %w", path, e.Len, size, err)
			}
		}
	}
	return dropped, nil
}

// nonZero counts the non-zero bytes of f in [lo, hi).
func nonZero(f *os.File, lo, hi int64) (int64, error) {
	buf := make([]byte, 1<<20)
	var n int64
	for off := lo; off < hi; {
		k := int(min(int64(len(buf)), hi-off))
		got, err := f.ReadAt(buf[:k], off)
		for _, c := range buf[:got] {
			if c != 0 {
				n++
			}
		}
		off += int64(got)
		if err != nil {
			if got == 0 {
				return n, nil // shorter than it was: nothing more to count
			}
			continue
		}
	}
	return n, nil
}

func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	defer f.Close()
	return f.Sync()
}
