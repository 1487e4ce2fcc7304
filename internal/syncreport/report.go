package syncreport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// FileName is the report's name in the node's data directory.
const FileName = "SYNC_REPORT"

const header = "ledgermq-sync-report 1"

// compactAt is the size past which the report is rewritten with one line
// a path.
const compactAt = 1 << 20

// ErrFormat is a report that cannot be read.
var ErrFormat = errors.New("syncreport: bad report")

// Entry is one file's durable extent: bytes [0, Len) as they are, bytes
// [Len, Size) as zeros.
type Entry struct {
	Len, Size int64
}

// Report is a node's open report. A nil *Report is off: every method is
// then a no-op (sync, for SyncFile), so the parts that sync files hold one
// from their configuration and call it unconditionally.
type Report struct {
	mu      sync.Mutex
	dir     string // paths are recorded relative to it
	path    string
	f       *os.File
	written int64
	dirty   bool // an append failed: rewrite everything next time
	closed  bool // Close was called: nothing more is recorded
	files   map[string]Entry
}

// Enabled reports whether r is on (not nil).
func (r *Report) Enabled() bool { return r != nil }

// Open starts reporting into dir/SYNC_REPORT. The records of an earlier
// process are kept (what it made durable still is, and what it did not
// is not, whatever this process finds in the page cache). One node's
// parts share one Report: two open on the same directory would overwrite
// each other's records.
func Open(dir string) (*Report, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	files, err := Read(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if files == nil {
		files = map[string]Entry{}
	}
	r := &Report{dir: dir, path: filepath.Join(dir, FileName), files: files}
	r.mu.Lock()
	err = r.rewriteLocked()
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Close stops reporting (the broker reports until it exits).
func (r *Report) Close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// Synced records that an fsync or fdatasync of the file at path, which
// was size bytes long when the sync began, returned: the whole file is
// durable as it was then.
func (r *Report) Synced(path string, size int64) {
	if r != nil {
		r.set(path, func(Entry, bool) Entry { return Entry{Len: size, Size: size} })
	}
}

// SyncedExtent records that an fsync of a preallocated file of size
// bytes returned when its data (everything written to it) ended at
// dataEnd: the zeros past it are durable as zeros only, and what is
// written into them later is not durable until the next sync.
func (r *Report) SyncedExtent(path string, dataEnd, size int64) {
	if r != nil {
		r.set(path, func(e Entry, ok bool) Entry {
			if !ok {
				e = Entry{}
			}
			n := min(max(e.Len, dataEnd), size)
			return Entry{Len: n, Size: size}
		})
	}
}

// SyncFile stats f, runs sync and, when it succeeds, records f durable at
// the size it had before the sync. Off, it is sync().
func (r *Report) SyncFile(f NamedFile, sync func() error) error {
	if r == nil {
		return sync()
	}
	fi, serr := f.Stat()
	if err := sync(); err != nil {
		return err
	}
	if serr == nil {
		r.set(f.Name(), func(Entry, bool) Entry { return Entry{Len: fi.Size(), Size: fi.Size()} })
	}
	return nil
}

// NamedFile is what SyncFile asks of a file: an *os.File, or a file of
// the write path's file system seam.
type NamedFile interface {
	Name() string
	Stat() (os.FileInfo, error)
}

// Created records a file that was just created: nothing of it is durable
// but its size (size bytes of zeros, 0 when even that is not durable).
func (r *Report) Created(path string, size int64) {
	if r != nil {
		r.set(path, func(Entry, bool) Entry { return Entry{Len: 0, Size: size} })
	}
}

// Range records that [lo, hi) of a file of size bytes was synced (an
// msync of a mapping): the durable prefix grows to hi when it reached lo;
// a synced range past a gap that was never synced extends nothing.
func (r *Report) Range(path string, lo, hi, size int64) {
	if r != nil {
		r.set(path, func(e Entry, ok bool) Entry {
			if !ok {
				e = Entry{Size: size}
			}
			if lo <= e.Len {
				e.Len = max(e.Len, hi)
			}
			e.Size = size
			return e
		})
	}
}

// Zeroed records that [lo, end of data) of a file of size bytes was
// zeroed and the zeros synced: nothing at or past lo is durable data.
func (r *Report) Zeroed(path string, lo, size int64) {
	if r != nil {
		r.set(path, func(e Entry, ok bool) Entry {
			if !ok {
				return Entry{Len: 0, Size: size}
			}
			return Entry{Len: min(e.Len, lo), Size: size}
		})
	}
}

// Removed forgets a deleted file.
func (r *Report) Removed(path string) {
	if r != nil {
		r.set(path, nil)
	}
}

// set changes path's entry (nil next: remove it) and records the change.
func (r *Report) set(path string, next func(Entry, bool) Entry) {
	rel, ok := r.rel(path)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if next == nil {
		if _, had := r.files[rel]; !had {
			return
		}
		delete(r.files, rel)
		r.appendLocked(fmt.Sprintf("-1 -1 %s\n", rel))
		return
	}
	old, had := r.files[rel]
	e := next(old, had)
	if had && e == old {
		return
	}
	r.files[rel] = e
	r.appendLocked(fmt.Sprintf("%d %d %s\n", e.Len, e.Size, rel))
}

func (r *Report) rel(path string) (string, bool) {
	if !filepath.IsAbs(path) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", false
		}
		path = abs
	}
	rel, err := filepath.Rel(r.dir, path)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") || strings.ContainsAny(rel, "\n") {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

func (r *Report) appendLocked(line string) {
	if r.dirty || r.f == nil || r.written+int64(len(line)) > compactAt {
		if r.rewriteLocked() == nil {
			return
		}
	}
	n, err := r.f.WriteString(line)
	r.written += int64(n)
	if err != nil {
		// A torn line is ignored by Read; the next write rewrites it all.
		r.dirty = true
	}
}

// rewriteLocked writes one line a path to a temporary file and renames it
// over the report (no fsync: see the package doc).
func (r *Report) rewriteLocked() error {
	var b bytes.Buffer
	b.WriteString(header + "\n")
	for _, p := range slices.Sorted(maps.Keys(r.files)) {
		e := r.files[p]
		fmt.Fprintf(&b, "%d %d %s\n", e.Len, e.Size, p)
	}
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		os.Remove(tmp)
		r.dirty = true
		return err
	}
	if err := os.Rename(tmp, r.path); err != nil {
		os.Remove(tmp)
		r.dirty = true
		return err
	}
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		r.dirty = true
		return err
	}
	if r.f != nil {
		r.f.Close()
	}
	r.f, r.written, r.dirty = f, int64(b.Len()), false
	return nil
}

// Read reads dir's report: the last record of every path still recorded.
// A torn last line is ignored; a missing report is fs.ErrNotExist.
func Read(dir string) (map[string]Entry, error) {
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse decodes a report's bytes (see the package doc).
func Parse(data []byte) (map[string]Entry, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	if !sc.Scan() || sc.Text() != header {
		return nil, fmt.Errorf("%w: no header", ErrFormat)
	}
	out := map[string]Entry{}
	complete := bytes.HasSuffix(data, []byte("\n"))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	for i, line := range lines {
		torn := i == len(lines)-1 && !complete
		l, rest, ok1 := strings.Cut(line, " ")
		s, p, ok2 := strings.Cut(rest, " ")
		ln, err1 := strconv.ParseInt(l, 10, 64)
		sz, err2 := strconv.ParseInt(s, 10, 64)
		bad := !ok1 || !ok2 || err1 != nil || err2 != nil || p == "" || !filepath.IsLocal(filepath.FromSlash(p)) ||
			(ln < 0) != (sz < 0) || (ln >= 0 && ln > sz)
		if bad {
			if torn {
				break
			}
			return nil, fmt.Errorf("%w: line %d: %q", ErrFormat, i+2, line)
		}
		if torn {
			break // a whole-looking record without its newline may be cut short
		}
		if ln < 0 {
			delete(out, p)
			continue
		}
		out[p] = Entry{Len: ln, Size: sz}
	}
	return out, nil
}
