package commitlog

import (
	"errors"
	"os"
	"sort"

	"golang.org/x/sys/unix"
)

// extent is a range [lo, hi) of a segment that may hold data.
type extent struct{ lo, hi int }

// extents lists, in order and without overlap, the ranges of a segment that
// may hold non-zero bytes; every byte outside them reads as zero (a hole of
// a sparse file, or an unwritten preallocated block). A nil list says
// nothing is known: every byte may be data. Recovery uses it to prove that
// nothing follows the end of the data without reading, and so without
// faulting into the mapping, the unwritten part of a segment.
type extents []extent

// maxExtents bounds the list of one segment: the rest of a file more
// fragmented than this is taken as data.
const maxExtents = 4096

// dataExtents asks the file system where s's file holds data
// (lseek SEEK_DATA / SEEK_HOLE, which cost no reads). On a file system that
// cannot tell, or on any error, it returns nil: everything may be data.
func (s *segment) dataExtents() extents {
	fd := int(s.f.Fd())
	size := s.size
	ext := extents{}
	for off := int64(0); off < size; {
		lo, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) { // no data at or after off
			break
		}
		if err != nil {
			return nil
		}
		if lo >= size {
			break
		}
		hi, err := unix.Seek(fd, lo, unix.SEEK_HOLE)
		if err != nil {
			return nil
		}
		if hi <= lo || hi > size {
			hi = size
		}
		if len(ext) == maxExtents-1 {
			hi = size
		}
		ext = append(ext, extent{int(lo), int(hi)})
		off = hi
	}
	return ext
}

// find returns the index of the first extent that ends after i.
func (e extents) find(i int) int {
	return sort.Search(len(e), func(k int) bool { return e[k].hi > i })
}

// nextNonZero is nextNonZero(b, i) that skips what e says is zero without
// reading it.
func (e extents) nextNonZero(b []byte, i int) int {
	if e == nil {
		return nextNonZero(b, i)
	}
	for k := e.find(i); k < len(e) && e[k].lo < len(b); k++ {
		lo, hi := max(i, e[k].lo), min(e[k].hi, len(b))
		if j := nextNonZero(b[:hi], lo); j < hi {
			return j
		}
	}
	return len(b)
}

// lastNonZero returns the index of the last non-zero byte of b[from:], or
// -1, reading only what e says may be data.
func (e extents) lastNonZero(b []byte, from int) int {
	if e == nil {
		if i := lastNonZero(b[from:]); i >= 0 {
			return from + i
		}
		return -1
	}
	for k := len(e) - 1; k >= 0 && e[k].hi > from; k-- {
		lo, hi := max(from, e[k].lo), min(e[k].hi, len(b))
		if lo >= hi {
			continue
		}
		if j := lastNonZero(b[lo:hi]); j >= 0 {
			return lo + j
		}
	}
	return -1
}

// dontNeed drops the mapping's pages of data[lo:hi] (rounded inwards to
// pages) from this process (madvise MADV_DONTNEED). The segment is a shared
// file mapping, so nothing is lost: the bytes stay in the page cache (dirty
// ones are still written back) and a later read faults them in again. It
// releases what recovery read and segments that are no longer written.
func (s *segment) dontNeed(lo, hi int) {
	page := os.Getpagesize()
	lo = (lo + page - 1) / page * page
	hi = min(hi, len(s.data))
	if hi < len(s.data) {
		hi -= hi % page
	}
	if hi <= lo {
		return
	}
	if err := unix.Madvise(s.data[lo:hi], unix.MADV_DONTNEED); err != nil {
		s.log.Warn("cannot release mapped pages", "path", s.path, "error", err)
	}
}

// dropCache asks the kernel to drop the file's bytes [lo, hi) from the page
// cache (fadvise DONTNEED). Clean pages that no process maps leave at once;
// dirty ones are only queued for writeback, so the caller drops durable
// bytes after unmapping them (dontNeed).
func (s *segment) dropCache(lo, hi int64) {
	if hi <= lo {
		return
	}
	if err := unix.Fadvise(int(s.f.Fd()), lo, hi-lo, unix.FADV_DONTNEED); err != nil {
		s.log.Warn("cannot drop cached pages", "path", s.path, "error", err)
	}
}
