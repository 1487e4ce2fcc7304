package commitlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/ledgermq/ledgermq/internal/syncreport"
	"github.com/ledgermq/ledgermq/internal/vfs"
)

// segmentNameLen is the length of a segment file name: the start offset as a
// 20-digit zero-padded decimal.
const segmentNameLen = 20

// SegmentName is the file name of the segment starting at start: 20
// zero-padded decimal digits.
func SegmentName(start int64) string {
	return fmt.Sprintf("%020d", start)
}

// ParseSegmentName returns the start offset encoded in name, or false if
// name is not a segment file name.
func ParseSegmentName(name string) (int64, bool) {
	if len(name) != segmentNameLen {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(name, 10, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// segment is one mapped file. Its mapping lives as long as refs is positive:
// the Log's list holds one reference, and every Ref, Scan and flush holds one
// more while it touches the bytes. A reference may only be taken while the
// segment is in the list and the list's lock is held (read or write), so a
// segment whose count was seen at 1 under the write lock has no other user.
type segment struct {
	start int64
	path  string
	fs    vfs.FS
	f     vfs.File
	size  int64  // len(data), kept apart so it can be read after unmapping
	data  []byte // the mapping; valid while refs > 0
	refs  atomic.Int32
	log   hclog.Logger
	// syncs records the segment's syncs (Config.SyncReport; nil: off).
	syncs *syncreport.Report
}

// SegmentInfo describes one segment file.
type SegmentInfo struct {
	Start   int64     // offset of the segment's first byte
	Size    int64     // file size (SegmentSize)
	Path    string    // file path
	Sealed  bool      // true for every segment but the last (active) one
	ModTime time.Time // file modification time: the time of the last write
}

// openSegment maps an existing segment file. If size is larger than the file
// (a segment whose creation was cut short by a crash) the file is extended
// first; the caller decides whether that is allowed.
func openSegment(fs vfs.FS, path string, start, size int64, prealloc bool, log hclog.Logger) (*segment, error) {
	f, err := fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("commitlog: open segment: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("commitlog: stat segment: %w", err)
	}
	if fi.Size() < size {
		if err := allocate(fs, f, size, prealloc); err != nil {
			f.Close()
			return nil, err
		}
	}
	return mapSegment(fs, f, path, start, size, log)
}

// createSegment creates, pre-allocates and maps a new segment file. The
// caller fsyncs the directory.
func createSegment(fs vfs.FS, dir string, start, size int64, prealloc bool, log hclog.Logger) (*segment, error) {
	path := filepath.Join(dir, SegmentName(start))
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("commitlog: create segment: %w", err)
	}
	if err := allocate(fs, f, size, prealloc); err != nil {
		f.Close()
		removeQuietly(fs, path, log)
		return nil, err
	}
	s, err := mapSegment(fs, f, path, start, size, log)
	if err != nil {
		removeQuietly(fs, path, log)
		return nil, err
	}
	return s, nil
}

// allocate extends f to size and fsyncs the new size. With prealloc the
// blocks are reserved (fallocate; ftruncate on file systems without it);
// otherwise the file is sparse and takes space as it is written. Segments
// are written with pwrite and only read through the mapping, so a disk
// that fills up fails a write with an error either way.
func allocate(fs vfs.FS, f vfs.File, size int64, prealloc bool) error {
	var err error
	if prealloc {
		err = fs.Allocate(f, 0, 0, size)
	}
	if !prealloc || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		err = f.Truncate(size)
	}
	if err != nil {
		return fmt.Errorf("commitlog: allocate %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("commitlog: sync %s: %w", f.Name(), err)
	}
	return nil
}

func mapSegment(fs vfs.FS, f vfs.File, path string, start, size int64, log hclog.Logger) (*segment, error) {
	data, err := fs.Map(f, int(size))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("commitlog: mmap %s: %w", path, err)
	}
	s := &segment{start: start, path: path, fs: fs, f: f, size: size, data: data, log: log}
	s.refs.Store(1)
	return s, nil
}

func (s *segment) end() int64 { return s.start + s.size }

// acquire takes a reference. The caller holds the Log's segment lock.
func (s *segment) acquire() { s.refs.Add(1) }

// release drops a reference; the last one unmaps the file and closes it.
func (s *segment) release() {
	if s.refs.Add(-1) != 0 {
		return
	}
	if err := s.fs.Unmap(s.data); err != nil {
		s.log.Error("munmap segment", "path", s.path, "error", err)
	}
	s.data = nil
	if err := s.f.Close(); err != nil {
		s.log.Error("close segment", "path", s.path, "error", err)
	}
}

// writeAt writes b at offset off of the file (pwrite). On failure it zeroes
// the range again, best effort, so that nothing past the write position is
// left non-zero, and returns ErrWrite.
func (s *segment) writeAt(b []byte, off int64) error {
	if off < 0 || off+int64(len(b)) > s.size {
		return fmt.Errorf("%w: %d bytes at %d of %s (%d bytes)", ErrWrite, len(b), off, s.path, s.size)
	}
	if _, err := s.f.WriteAt(b, off); err != nil {
		if zerr := s.fs.Allocate(s.f, unix.FALLOC_FL_ZERO_RANGE|unix.FALLOC_FL_KEEP_SIZE, off, int64(len(b))); zerr != nil {
			s.log.Error("cannot zero a failed write", "path", s.path, "offset", off, "error", zerr)
		}
		return fmt.Errorf("%w: %s: %w", ErrWrite, s.path, err)
	}
	return nil
}

// sync makes data[lo:hi] durable with msync(MS_SYNC). On Linux that writes
// the dirty pages of the range back through the file and waits, like
// fdatasync restricted to the range.
func (s *segment) sync(lo, hi int) error {
	if err := s.msync(lo, hi); err != nil {
		return err
	}
	s.syncs.Range(s.path, int64(lo), int64(hi), s.size)
	return nil
}

// syncZeroed is sync for a range that was just zeroed (a truncation): the
// durable data of the file now ends at lo at most.
func (s *segment) syncZeroed(lo, hi int) error {
	if err := s.msync(lo, hi); err != nil {
		return err
	}
	s.syncs.Zeroed(s.path, int64(lo), s.size)
	return nil
}

func (s *segment) msync(lo, hi int) error {
	if hi <= lo {
		return nil
	}
	page := os.Getpagesize()
	lo -= lo % page
	if err := s.fs.SyncMapped(s.f.Name(), s.data[lo:hi]); err != nil {
		return fmt.Errorf("%w: msync %s: %w", ErrFlush, s.path, err)
	}
	return nil
}

// modTime returns the file's modification time, or the zero time if it
// cannot be read.
func (s *segment) modTime() time.Time {
	fi, err := s.f.Stat()
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// removeQuietly removes a file this package created and could not finish;
// a failure is logged: a leftover is found (and reported) at the next
// open.
func removeQuietly(fs vfs.FS, path string, log hclog.Logger) {
	if err := fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Warn("cannot remove an unfinished segment", "path", path, "error", err)
	}
}
