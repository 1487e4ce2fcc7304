package commitlog

import (
	"fmt"
	"hash/crc32"
	"sync"
)

// checksumChunk is how much Checksum reads at a time.
const checksumChunk = 256 << 10

var checksumBuffers = sync.Pool{New: func() any { b := make([]byte, checksumChunk); return &b }}

// Checksum returns the CRC-32C (Castagnoli) of the log's bytes in [from,
// to) as they are in the segment files now: entries, trailers and the
// filler at segment ends alike, so two logs with the same checksum over a
// range hold the same bytes there. It reads the segment files with pread in
// chunks rather than through the mapping: the range is mostly bytes no
// reader has touched, and faulting them into the mapping cost more than
// the copy (and left them counted in the process's resident memory). The
// cost is the range's length. A range below MinOffset or past the write
// position is ErrOutOfRange. Safe for concurrent use with appends (which
// write past the write position).
func (l *Log) Checksum(from, to int64) (uint32, error) {
	if from < 0 || to < from || to > l.wpos.Load() {
		return 0, fmt.Errorf("%w: checksum of [%d, %d) with write position %d", ErrOutOfRange, from, to, l.wpos.Load())
	}
	bp := checksumBuffers.Get().(*[]byte)
	defer checksumBuffers.Put(bp)
	buf := *bp
	var sum uint32
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
		sum = crc32.Update(sum, castagnoli, buf[:n])
		off += n
	}
	return sum, nil
}
