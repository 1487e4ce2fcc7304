package commitlog

import (
	"fmt"
	"hash/crc32"
)

// Checksum returns the CRC-32C (Castagnoli) of the log's bytes in [from,
// to) as they are in the segment files now: entries, trailers and the
// filler at segment ends alike, so two logs with the same checksum over a
// range hold the same bytes there. It reads the mapped files in place,
// segment by segment; the cost is the range's length. A range below
// MinOffset or past the write position is ErrOutOfRange. Safe for
// concurrent use with appends (which write past the write position).
func (l *Log) Checksum(from, to int64) (uint32, error) {
	if from < 0 || to < from || to > l.wpos.Load() {
		return 0, fmt.Errorf("%w: checksum of [%d, %d) with write position %d", ErrOutOfRange, from, to, l.wpos.Load())
	}
	var sum uint32
	for off := from; off < to; {
		n := to - off
		if rest := l.segSize - off%l.segSize; n > rest {
			n = rest
		}
		seg, b, err := l.acquireRaw(off, int(n))
		if err != nil {
			return 0, err
		}
		sum = crc32.Update(sum, castagnoli, b)
		seg.release()
		off += n
	}
	return sum, nil
}
