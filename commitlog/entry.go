package commitlog

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
)

// BlankMagic is the magic of the end-of-segment marker: when a batch does not
// fit in the rest of a segment, the rest is covered by
// [int32 remaining][uint32 BlankMagic] and the batch goes to the next segment.
// It is RocketMQ's BLANK_MAGIC_CODE; callers must not use it for entries.
const BlankMagic uint32 = 0xCBD43194

// TrailerSize is the size of the CRC-32C trailer that follows every payload.
// It occupies space in the segment but is not part of an entry's size.
const TrailerSize = 4

// MinEntrySize is the smallest payload: its own int32 length and a 32-bit
// magic.
const MinEntrySize = 8

// castagnoli is the CRC-32C table used for entry trailers.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EntryCRC returns the CRC-32C (Castagnoli) of payload, the value stored
// big-endian in the 4 bytes that follow it on disk. It is pure and safe for
// concurrent use.
func EntryCRC(payload []byte) uint32 {
	return crc32.Checksum(payload, castagnoli)
}

// kind is what inspect finds at a position of a segment.
type kind uint8

const (
	kindEntry kind = iota // a well-formed entry whose trailer verifies
	kindBlank             // an end-of-segment marker reaching the segment end exactly
	kindEnd               // fewer than MinEntrySize bytes left: nothing starts here
	kindZero              // a zero length: end of written data, unless data follows
	kindBad               // anything else
)

// inspect classifies the bytes at pos of one segment. b is the readable part
// of the segment (the whole mapping, or for Scan the part below the write
// position) and segLen its full length, so len(b) <= segLen. For kindEntry and
// kindBlank size is the length field; for kindZero and kindBad why says what
// is wrong. inspect never reads outside b and never allocates.
func inspect(b []byte, segLen, pos int) (k kind, size int, why error) {
	if segLen-pos < MinEntrySize {
		return kindEnd, 0, nil
	}
	avail := len(b) - pos
	if avail < MinEntrySize {
		return kindBad, 0, errTruncatedHead
	}
	n := int32(binary.BigEndian.Uint32(b[pos:]))
	magic := binary.BigEndian.Uint32(b[pos+4:])
	switch {
	case n == 0:
		return kindZero, 0, errZeroLength
	case magic == BlankMagic:
		if int64(n) == int64(segLen-pos) {
			return kindBlank, int(n), nil
		}
		return kindBad, 0, errBadBlank
	case n < MinEntrySize:
		return kindBad, 0, errShortLength
	case int64(n) > int64(avail-TrailerSize):
		return kindBad, 0, errLongLength
	}
	size = int(n)
	if EntryCRC(b[pos:pos+size]) != binary.BigEndian.Uint32(b[pos+size:]) {
		return kindBad, 0, errChecksum
	}
	return kindEntry, size, nil
}

// putBlank writes the end-of-segment marker at the start of b, which must be
// the whole rest of the segment and at least MinEntrySize long.
func putBlank(b []byte) {
	putBlankHeader(b, int64(len(b)))
}

// putBlankHeader writes the 8-byte header of an end-of-segment marker that
// covers rest bytes into b.
func putBlankHeader(b []byte, rest int64) {
	binary.BigEndian.PutUint32(b, uint32(rest))
	binary.BigEndian.PutUint32(b[4:], BlankMagic)
}

// checkHeader verifies what a caller wrote into a reserved entry: its length
// prefix must equal the reserved size and its magic must not be BlankMagic.
func checkHeader(dst []byte) error {
	if int64(int32(binary.BigEndian.Uint32(dst))) != int64(len(dst)) {
		return errPrefixMismatch
	}
	if binary.BigEndian.Uint32(dst[4:]) == BlankMagic {
		return errBlankMagicUsed
	}
	return nil
}

// lastNonZero returns the index of the last non-zero byte of b, or -1.
func lastNonZero(b []byte) int {
	i := len(b)
	for ; i >= len(zeroBlock) && bytes.Equal(b[i-len(zeroBlock):i], zeroBlock); i -= len(zeroBlock) {
	}
	for ; i >= 8; i -= 8 {
		if binary.LittleEndian.Uint64(b[i-8:]) != 0 {
			break
		}
	}
	for i--; i >= 0; i-- {
		if b[i] != 0 {
			return i
		}
	}
	return -1
}

// zeroBlock is compared against to skip zeros a page at a time (bytes.Equal
// is vectorised).
var zeroBlock = make([]byte, 4096)

// nextNonZero returns the index of the first non-zero byte of b at or after
// i, or len(b).
func nextNonZero(b []byte, i int) int {
	for ; i+len(zeroBlock) <= len(b) && bytes.Equal(b[i:i+len(zeroBlock)], zeroBlock); i += len(zeroBlock) {
	}
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:]) != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if b[i] != 0 {
			return i
		}
	}
	return len(b)
}
