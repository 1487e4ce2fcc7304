package commitlog

import (
	"encoding/binary"
	"hash/crc32"
)

// Resynchronisation after a corrupt entry.
//
// When the entry at some position does not verify, the scan looks for the
// first later position of the same segment where a well-formed entry with a
// valid trailer (or a valid end-of-segment marker) starts. It cannot trust
// the bad entry's length (a flipped length byte would make it jump over good
// entries), so it tries every position, skipping runs of zeros quickly.
//
// Checking a candidate of length n naively costs a CRC over n bytes, and in
// random-looking data about a quarter of all positions carry a plausible
// length, many of them hundreds of megabytes long: the naive search is
// quadratic. Instead the search keeps checkpoints of the running CRC from its
// starting point and derives the CRC of any sub-range from two running values
// with CRC algebra (crc(B) = crc(A||B) xor crc(A)*x^(8|B|) mod P), so each
// candidate costs at most two short CRC runs and a few polynomial products,
// whatever its length. The whole search is linear in the bytes it passes.

// crcStride is the distance between two checkpoints of the running CRC.
const crcStride = 512

// directCRCMax is the length up to which a candidate is checked with a plain
// CRC, which is cheaper than the algebra for short entries.
const directCRCMax = 2 * crcStride

// gfMul returns a*b modulo the Castagnoli polynomial, both operands in the
// bit-reversed representation the table-driven CRC uses (bit 31 holds the
// coefficient of x^0, bit 0 that of x^31).
func gfMul(a, b uint32) uint32 {
	var r uint32
	for ; a != 0; a <<= 1 {
		// The top bit of a is the coefficient of the current power of x.
		r ^= b & -(a >> 31)
		// b = b*x mod P: a right shift multiplies by x; the coefficient of
		// x^31 moving out becomes x^32, which is P without its top term.
		b = b>>1 ^ crc32.Castagnoli&-(b&1)
	}
	return r
}

// xPow8 holds x^(8*v*256^k) mod P at [k][v], so that x^(8n) for any 32-bit n
// is the product of four table entries.
var xPow8 = makeXPow8()

func makeXPow8() *[4][256]uint32 {
	var t [4][256]uint32
	base := uint32(1) << (31 - 8) // x^8: one byte of shift
	for k := range t {
		t[k][0] = 1 << 31 // x^0
		for v := 1; v < 256; v++ {
			t[k][v] = gfMul(t[k][v-1], base)
		}
		base = gfMul(t[k][255], base) // x^(8*256^(k+1))
	}
	return &t
}

// shiftCRC returns crc multiplied by x^(8n) mod P: the contribution of a
// prefix with checksum crc to the checksum of that prefix followed by n more
// bytes.
func shiftCRC(crc uint32, n int) uint32 {
	u := uint32(n)
	p := gfMul(gfMul(xPow8[0][u&0xff], xPow8[1][u>>8&0xff]), gfMul(xPow8[2][u>>16&0xff], xPow8[3][u>>24]))
	return gfMul(p, crc)
}

// prefixCRC answers "what is EntryCRC(b[c:c+n])" for c >= origin in time that
// does not depend on n, from checkpoints of the running CRC of b[origin:]
// taken every crcStride bytes. Checkpoints are computed lazily, so a search
// that ends early pays only for the bytes it looked at.
type prefixCRC struct {
	b      []byte
	origin int
	marks  []uint32 // marks[i] = EntryCRC(b[origin : origin+i*crcStride])
}

func newPrefixCRC(b []byte, origin int) *prefixCRC {
	return &prefixCRC{b: b, origin: origin, marks: []uint32{0}}
}

// running returns EntryCRC(b[origin:x]) for origin <= x <= len(b).
func (p *prefixCRC) running(x int) uint32 {
	i := (x - p.origin) / crcStride
	for len(p.marks) <= i {
		j := len(p.marks) - 1
		lo := p.origin + j*crcStride
		p.marks = append(p.marks, crc32.Update(p.marks[j], castagnoli, p.b[lo:lo+crcStride]))
	}
	lo := p.origin + i*crcStride
	return crc32.Update(p.marks[i], castagnoli, p.b[lo:x])
}

// rangeCRC returns EntryCRC(b[c:c+n]) for origin <= c and c+n <= len(b).
func (p *prefixCRC) rangeCRC(c, n int) uint32 {
	if n <= directCRCMax {
		return EntryCRC(p.b[c : c+n])
	}
	return crcBetween(p.running(c), p.running(c+n), int64(n))
}

// resync returns the first position q >= from of b (the readable part of a
// segment of length segLen) where inspect would find an entry or an
// end-of-segment marker, or -1 if there is none.
func resync(b []byte, segLen, from int) int {
	s := searcher{b: b, segLen: segLen}
	return s.next(from)
}

// searcher runs resynchronisation searches over one segment, sharing the
// running-CRC checkpoints between them so that many damaged places in one
// segment cost one pass of CRC, not one pass each.
type searcher struct {
	b      []byte
	segLen int
	ext    extents    // where b may hold data; nil: anywhere
	pc     *prefixCRC // origin 0, created on first need
}

// next is resync(s.b, s.segLen, from).
func (s *searcher) next(from int) int {
	b := s.b
	if from < 0 {
		from = 0
	}
	last := len(b) - MinEntrySize // the last position where a header fits
	if s.ext != nil {
		// Skip a hole without reading it: a length field needs a
		// non-zero byte.
		from = max(from, s.ext.nextNonZero(b, from)-3)
	}
	for c := from; c <= last; c++ {
		if b[c]|b[c+1]|b[c+2]|b[c+3] == 0 {
			// A zero length starts nothing; jump so that the next
			// candidate's length field holds the next non-zero byte.
			c = s.ext.nextNonZero(b, c+4) - 4
			continue
		}
		n := int32(binary.BigEndian.Uint32(b[c:]))
		if binary.BigEndian.Uint32(b[c+4:]) == BlankMagic {
			if int64(n) == int64(s.segLen-c) {
				return c
			}
			continue
		}
		if n < MinEntrySize || int64(n) > int64(len(b)-c-TrailerSize) {
			continue
		}
		if s.pc == nil {
			s.pc = newPrefixCRC(b, 0)
		}
		size := int(n)
		if s.pc.rangeCRC(c, size) == binary.BigEndian.Uint32(b[c+size:]) {
			return c
		}
	}
	return -1
}
