package timerwheel

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"golang.org/x/sys/unix"
)

// segment is one log file: the records of queue offsets [base,
// base+records), written with pwrite and read through a read-only shared
// mapping (a full disk then fails a write with an error instead of a
// fault on a mapped page).
type segment struct {
	base    int64
	records int64
	path    string
	f       *os.File
	data    []byte
	dirty   bool
	// maxDue is the latest due time of the records written in it (0:
	// none): the segment may be deleted once the progress is past it.
	maxDue int64
}

func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

func parseSegmentName(name string) (int64, bool) {
	if len(name) != 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(name, 10, 64)
	return n, err == nil && n >= 0
}

// openSegment opens (creating it if needed) the segment of base, sized for
// records records.
func openSegment(dir string, base, records int64) (*segment, error) {
	path := filepath.Join(dir, segmentName(base))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("timerwheel: open segment: %w", err)
	}
	size := records * RecordSize
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("timerwheel: stat segment: %w", err)
	}
	if fi.Size() != size {
		if err := f.Truncate(size); err != nil {
			f.Close()
			return nil, fmt.Errorf("timerwheel: size segment %s: %w", path, err)
		}
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("timerwheel: mmap %s: %w", path, err)
	}
	return &segment{base: base, records: records, path: path, f: f, data: data}, nil
}

func (s *segment) end() int64 { return s.base + s.records }

// at returns the bytes of record q (base <= q < end).
func (s *segment) at(q int64) []byte {
	off := (q - s.base) * RecordSize
	return s.data[off : off+RecordSize]
}

// write writes encoded records starting at queue offset q.
func (s *segment) write(q int64, b []byte) error {
	if _, err := s.f.WriteAt(b, (q-s.base)*RecordSize); err != nil {
		return fmt.Errorf("timerwheel: write %s: %w", s.path, err)
	}
	s.dirty = true
	return nil
}

func (s *segment) sync() error {
	if !s.dirty {
		return nil
	}
	if err := unix.Fdatasync(int(s.f.Fd())); err != nil {
		return fmt.Errorf("timerwheel: sync %s: %w", s.path, err)
	}
	s.dirty = false
	return nil
}

func (s *segment) close() error {
	err := unix.Munmap(s.data)
	s.data = nil
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// listSegments returns the bases of the segment files in dir, ascending.
func listSegments(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("timerwheel: list %s: %w", dir, err)
	}
	var out []int64
	for _, e := range ents {
		if b, ok := parseSegmentName(e.Name()); ok && e.Type().IsRegular() {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}
