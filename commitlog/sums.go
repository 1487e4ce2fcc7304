package commitlog

import (
	"hash/crc32"
	"sort"
)

// Running sums: what Checksum knows of the bytes this Log wrote.
//
// Every write of the log's bytes (a batch, and the end-of-segment filler at
// a roll) extends a running CRC-32C over a chain of contiguous bytes that
// starts where the write position stood when Recover (or a Truncate)
// finished. After each write the chain keeps a mark: the offset reached and
// the CRC of the chain's bytes up to it. The CRC of any range [a, b) inside
// the chain then follows from the CRCs of its two ends with CRC algebra
// (resync.go): crc([a, b)) = prefix(b) xor prefix(a)*x^(8(b-a)) mod P, where
// an end between two marks is reached from the mark before it by reading
// the bytes in between from the file (less than one batch).
//
// The sum of a batch is taken from its staging buffer as it goes to the
// file, where it is still in the processor's cache; reading the range back
// to checksum it cost the replica verifier about a tenth of every node's
// processor time under load and held the FSM while it read.
//
// The chain starts at the write position when Recover finishes, is cut
// back at a Truncate, and forgets its oldest half when it holds maxSumMarks marks; a range that
// starts before the chain is read from the files, as ChecksumFiles does.

// resetSums starts the running sums anew at offset (Recover, Truncate).
func (l *Log) resetSums(offset int64) {
	l.sumMu.Lock()
	l.sums.reset(offset)
	l.sumMu.Unlock()
}

// truncateSums ends the running sums at offset (Truncate, which holds
// appendMu): the marks past it go, and one at offset is added from the bytes
// between the last mark and offset, read from the files (less than a
// batch), so that the chain goes on through the truncation.
func (l *Log) truncateSums(offset int64) {
	l.sumMu.Lock()
	defer l.sumMu.Unlock()
	c := &l.sums
	i := sort.Search(len(c.marks), func(i int) bool { return c.marks[i].end > offset })
	c.marks = c.marks[:i]
	if i == 0 {
		c.reset(offset)
		return
	}
	if last := c.marks[i-1]; last.end < offset {
		sum, err := l.crcFiles(last.prefix, last.end, offset)
		if err != nil {
			c.reset(offset)
			return
		}
		c.push(offset, sum)
	}
}

// maxSumMarks bounds the marks kept (16 bytes each).
const maxSumMarks = 1 << 16

// sumMark is one point of the chain: the CRC-32C of the chain's bytes from
// its start up to end.
type sumMark struct {
	end    int64
	prefix uint32
}

// sumChain is the running CRC of the bytes written since the chain began.
// Lock order: after appendMu.
type sumChain struct {
	marks []sumMark // by end; marks[0] is the chain's first point
}

// reset starts the chain anew at offset.
func (c *sumChain) reset(offset int64) {
	c.marks = append(c.marks[:0], sumMark{end: offset})
}

// extend records that b was written at offset start. A write that does not
// continue the chain starts a new chain at start.
func (c *sumChain) extend(start int64, b []byte) {
	last := c.last(start)
	if len(b) == 0 {
		return
	}
	c.push(start+int64(len(b)), crc32.Update(last, castagnoli, b))
}

// extendZeros records that n zero bytes follow the write that ended at start
// (the rest of a segment after its end-of-segment marker).
func (c *sumChain) extendZeros(start, n int64) {
	if n <= 0 {
		return
	}
	c.push(start+n, appendZerosCRC(c.last(start), n))
}

// last returns the chain's CRC up to start, starting a new chain there when
// the chain does not end there.
func (c *sumChain) last(start int64) uint32 {
	if n := len(c.marks); n == 0 || c.marks[n-1].end != start {
		c.reset(start)
	}
	return c.marks[len(c.marks)-1].prefix
}

func (c *sumChain) push(end int64, prefix uint32) {
	if len(c.marks) >= maxSumMarks {
		c.marks = append(c.marks[:0], c.marks[len(c.marks)/2:]...)
	}
	c.marks = append(c.marks, sumMark{end: end, prefix: prefix})
}

// markAt returns the last mark at or before offset, and false when offset
// lies outside the chain.
func (c *sumChain) markAt(offset int64) (sumMark, bool) {
	n := len(c.marks)
	if n == 0 || offset < c.marks[0].end || offset > c.marks[n-1].end {
		return sumMark{}, false
	}
	i := sort.Search(n, func(i int) bool { return c.marks[i].end > offset }) - 1
	return c.marks[i], true
}

// crcBetween returns the CRC-32C of the n bytes between two points a and
// b of a stream from the CRCs of the stream up to each (prefix(b) =
// crc(X||R) = crc(X)*x^(8|R|) xor crc(R)).
func crcBetween(prefixA, prefixB uint32, n int64) uint32 {
	return prefixB ^ shiftCRCLong(prefixA, n)
}

// appendZerosCRC returns the CRC-32C of A followed by n zero bytes, from
// crc(A): the CRC register (crc's complement) times x^(8n).
func appendZerosCRC(crc uint32, n int64) uint32 {
	return ^shiftCRCLong(^crc, n)
}

// shiftCRCLong is shiftCRC for lengths of any size.
func shiftCRCLong(crc uint32, n int64) uint32 {
	const step = 1 << 30
	for ; n > step; n -= step {
		crc = shiftCRC(crc, step)
	}
	return shiftCRC(crc, int(n))
}
