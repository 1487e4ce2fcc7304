package commitlog

import (
	"fmt"
	"hash/crc32"
	"sync"
)

// checksumChunk is how much a checksum reads from a file at a time.
const checksumChunk = 256 << 10

var checksumBuffers = sync.Pool{New: func() any { b := make([]byte, checksumChunk); return &b }}

// Checksum returns the CRC-32C (Castagnoli) of the log's bytes in [from,
// to): entries, trailers and the filler at segment ends alike, so two logs
// with the same checksum over a range hold the same bytes there. Where the
// range lies inside the running sums (sums.go: the bytes this Log wrote
// since Recover or the last Truncate) it is computed from them, reading from
// the files at most the bytes between each end and the write before it;
// otherwise it is ChecksumFiles. A range below MinOffset or past the write
// position is ErrOutOfRange. Safe for concurrent use with appends (which
// write past the write position).
func (l *Log) Checksum(from, to int64) (uint32, error) {
	if err := l.checkRange(from, to); err != nil {
		return 0, err
	}
	l.sumMu.Lock()
	a, okA := l.sums.markAt(from)
	b, okB := l.sums.markAt(to)
	l.sumMu.Unlock()
	if !okA || !okB {
		return l.ChecksumFiles(from, to)
	}
	prefixFrom, err := l.crcFiles(a.prefix, a.end, from)
	if err != nil {
		return 0, err
	}
	prefixTo, err := l.crcFiles(b.prefix, b.end, to)
	if err != nil {
		return 0, err
	}
	return crcBetween(prefixFrom, prefixTo, to-from), nil
}

// ChecksumFiles is Checksum computed from the bytes the segment files hold
// now, all of them read: it also sees a byte that changed in a file after
// the Log wrote it. It reads with pread in chunks rather than through the
// mapping: the range is mostly bytes no reader has touched, and faulting
// them into the mapping cost more than the copy (and left them counted in
// the process's resident memory). The cost is the range's length.
func (l *Log) ChecksumFiles(from, to int64) (uint32, error) {
	if err := l.checkRange(from, to); err != nil {
		return 0, err
	}
	return l.crcFiles(0, from, to)
}

func (l *Log) checkRange(from, to int64) error {
	if from < 0 || to < from || to > l.wpos.Load() {
		return fmt.Errorf("%w: checksum of [%d, %d) with write position %d", ErrOutOfRange, from, to, l.wpos.Load())
	}
	return nil
}

// crcFiles extends the CRC-32C sum with the bytes [from, to) read from the
// segment files.
func (l *Log) crcFiles(sum uint32, from, to int64) (uint32, error) {
	if from >= to {
		return sum, nil
	}
	bp := checksumBuffers.Get().(*[]byte)
	defer checksumBuffers.Put(bp)
	buf := *bp
	for off := from; off < to; {
		n := min(to-off, l.segSize-off%l.segSize, int64(len(buf)))
		seg, _, err := l.acquireRaw(off, int(n))
		if err != nil {
			return 0, err
		}
		_, err = seg.f.ReadAt(buf[:n], off-seg.start)
		seg.release()
		if err != nil {
			return 0, fmt.Errorf("commitlog: checksum: read %s at %d: %w", seg.path, off-seg.start, err)
		}
		l.checksumRead.Add(n)
		sum = crc32.Update(sum, castagnoli, buf[:n])
		off += n
	}
	return sum, nil
}
