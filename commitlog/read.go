package commitlog

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
)

// Ref is a verified entry read in place. It keeps its segment mapped (so
// retention skips the segment) until Release.
type Ref struct {
	seg      *segment
	b        []byte
	released atomic.Bool
}

// Bytes returns the entry's payload (length prefix included, trailer
// excluded). It aliases the mapped file: it must not be modified and must
// not be used after Release.
func (r *Ref) Bytes() []byte { return r.b }

// Release drops the Ref's hold on its segment. It is idempotent and safe for
// concurrent use, also after the Log is closed.
func (r *Ref) Release() {
	if r.released.CompareAndSwap(false, true) {
		r.b = nil
		r.seg.release()
	}
}

// Read returns the entry at offset whose payload is size bytes, after
// checking that its length prefix is size, that it is not an end-of-segment
// marker and that its CRC trailer matches (ErrCorrupt, wrapped with the
// offset, otherwise). An offset below MinOffset, or a range that is not
// inside the written data of one segment, is ErrOutOfRange. The caller must
// Release the Ref. Safe concurrently with everything but Truncate of the
// range read and Close.
func (l *Log) Read(offset int64, size int) (*Ref, error) {
	seg, b, err := l.acquire(offset, size)
	if err != nil {
		return nil, err
	}
	return &Ref{seg: seg, b: b}, nil
}

// ReadAt appends the entry at offset (verified as by Read) to dst and
// returns the extended slice. Safe for concurrent use like Read.
func (l *Log) ReadAt(dst []byte, offset int64, size int) ([]byte, error) {
	seg, b, err := l.acquire(offset, size)
	if err != nil {
		return dst, err
	}
	dst = append(dst, b...)
	seg.release()
	return dst, nil
}

// acquire locates and verifies an entry and returns it with a reference on
// its segment.
func (l *Log) acquire(offset int64, size int) (*segment, []byte, error) {
	if l.closed.Load() {
		return nil, nil, ErrClosed
	}
	if size < MinEntrySize || offset < 0 || int64(size) > l.segSize {
		return nil, nil, fmt.Errorf("%w: offset %d size %d", ErrOutOfRange, offset, size)
	}
	end := offset + int64(size) + TrailerSize
	if end > l.wpos.Load() {
		return nil, nil, fmt.Errorf("%w: offset %d size %d past write position %d", ErrOutOfRange, offset, size, l.wpos.Load())
	}
	l.segMu.RLock()
	if l.closed.Load() {
		l.segMu.RUnlock()
		return nil, nil, ErrClosed
	}
	i := l.segmentAt(offset)
	if i < 0 || end > l.segs[i].end() {
		l.segMu.RUnlock()
		return nil, nil, fmt.Errorf("%w: offset %d size %d (min offset %d)", ErrOutOfRange, offset, size, l.minOff.Load())
	}
	seg := l.segs[i]
	seg.acquire()
	l.segMu.RUnlock()

	pos := int(offset - seg.start)
	b := seg.data[pos : pos+size : pos+size]
	var why error
	switch {
	case binary.BigEndian.Uint32(b) != uint32(size):
		why = errLengthPrefix
	case binary.BigEndian.Uint32(b[4:]) == BlankMagic:
		why = errBadBlank
	case EntryCRC(b) != binary.BigEndian.Uint32(seg.data[pos+size:]):
		why = errChecksum
	}
	if why != nil {
		seg.release()
		return nil, nil, fmt.Errorf("%w (offset %d, size %d)", why, offset, size)
	}
	return seg, b, nil
}

// EntrySize returns the payload size the length prefix at offset claims,
// for callers that know an entry's offset but not its size (a message id
// names only the offset). The size is not verified: pass it to Read or
// ReadAt, which check the length prefix and the CRC.
func (l *Log) EntrySize(offset int64) (int, error) {
	seg, b, err := l.acquireRaw(offset, MinEntrySize)
	if err != nil {
		return 0, err
	}
	defer seg.release()
	size := int(int32(binary.BigEndian.Uint32(b)))
	if size < MinEntrySize || int64(size) > l.segSize {
		return 0, fmt.Errorf("%w: offset %d claims size %d", ErrCorrupt, offset, size)
	}
	return size, nil
}

// acquireRaw returns n unverified bytes at offset inside the written data of
// one segment, with a reference on the segment.
func (l *Log) acquireRaw(offset int64, n int) (*segment, []byte, error) {
	if l.closed.Load() {
		return nil, nil, ErrClosed
	}
	if offset < 0 || offset+int64(n) > l.wpos.Load() {
		return nil, nil, fmt.Errorf("%w: offset %d past write position %d", ErrOutOfRange, offset, l.wpos.Load())
	}
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	if l.closed.Load() {
		return nil, nil, ErrClosed
	}
	i := l.segmentAt(offset)
	if i < 0 || offset+int64(n) > l.segs[i].end() {
		return nil, nil, fmt.Errorf("%w: offset %d (min offset %d)", ErrOutOfRange, offset, l.minOff.Load())
	}
	seg := l.segs[i]
	seg.acquire()
	pos := int(offset - seg.start)
	return seg, seg.data[pos : pos+n : pos+n], nil
}
