package index

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/ledgermq/ledgermq/message"
)

// Sizes of the three regions of an index file. See doc.go for the layout.
const (
	// HeaderSize is the size of the file header.
	HeaderSize = 40
	// SlotSize is the size of one hash slot.
	SlotSize = 4
	// EntrySize is the size of one index entry.
	EntrySize = 20
)

// MaxKeyLen is the longest key, in bytes, that Put and Query accept.
const MaxKeyLen = 1024

// Header is the decoded 40-byte file header.
//
// IndexCount is the index of the next entry to write; entry 0 is never used,
// so a file holding n entries has IndexCount n+1 (0 is read as 1: a file
// whose header never reached the disk is empty). HashSlotCount counts the
// slots that have been claimed by a first key; it is informational.
type Header struct {
	BeginTimestamp int64 // store time (ms) of the first entry
	EndTimestamp   int64 // largest store time (ms) of any entry
	BeginPhyOffset int64 // commitlog offset of the first entry
	EndPhyOffset   int64 // largest commitlog offset of any entry
	HashSlotCount  int32 // slots in use
	IndexCount     int32 // next entry index (entries used + 1)
}

// entries returns the number of entries the header says are present.
func (h Header) entries() int32 {
	if h.IndexCount <= 1 {
		return 0
	}
	return h.IndexCount - 1
}

// EncodeHeader writes h into dst[0:HeaderSize] in big-endian order. dst must
// be at least HeaderSize bytes long; a shorter dst is a programming error and
// panics like any out-of-range slice access.
func EncodeHeader(dst []byte, h Header) {
	_ = dst[HeaderSize-1]
	binary.BigEndian.PutUint64(dst[0:8], uint64(h.BeginTimestamp))
	binary.BigEndian.PutUint64(dst[8:16], uint64(h.EndTimestamp))
	binary.BigEndian.PutUint64(dst[16:24], uint64(h.BeginPhyOffset))
	binary.BigEndian.PutUint64(dst[24:32], uint64(h.EndPhyOffset))
	binary.BigEndian.PutUint32(dst[32:36], uint32(h.HashSlotCount))
	binary.BigEndian.PutUint32(dst[36:40], uint32(h.IndexCount))
}

// DecodeHeader decodes and validates the header at the start of b for a file
// of slotNum slots and maxEntries entries. It returns an error wrapping
// ErrBadHeader when b is shorter than HeaderSize, a count is negative,
// IndexCount exceeds maxEntries+1, HashSlotCount exceeds slotNum, or (for a
// non-empty file) a begin timestamp or offset lies after the matching end.
// It never panics.
func DecodeHeader(b []byte, slotNum, maxEntries int) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes, need %d", ErrBadHeader, len(b), HeaderSize)
	}
	h := Header{
		BeginTimestamp: int64(binary.BigEndian.Uint64(b[0:8])),
		EndTimestamp:   int64(binary.BigEndian.Uint64(b[8:16])),
		BeginPhyOffset: int64(binary.BigEndian.Uint64(b[16:24])),
		EndPhyOffset:   int64(binary.BigEndian.Uint64(b[24:32])),
		HashSlotCount:  int32(binary.BigEndian.Uint32(b[32:36])),
		IndexCount:     int32(binary.BigEndian.Uint32(b[36:40])),
	}
	switch {
	case h.HashSlotCount < 0:
		return h, fmt.Errorf("%w: negative hashSlotCount %d", ErrBadHeader, h.HashSlotCount)
	case h.IndexCount < 0:
		return h, fmt.Errorf("%w: negative indexCount %d", ErrBadHeader, h.IndexCount)
	case int64(h.IndexCount) > int64(maxEntries)+1:
		return h, fmt.Errorf("%w: indexCount %d exceeds %d entries", ErrBadHeader, h.IndexCount, maxEntries)
	case int64(h.HashSlotCount) > int64(slotNum):
		return h, fmt.Errorf("%w: hashSlotCount %d exceeds %d slots", ErrBadHeader, h.HashSlotCount, slotNum)
	}
	if h.IndexCount > 1 {
		if h.BeginTimestamp > h.EndTimestamp {
			return h, fmt.Errorf("%w: beginTimestamp %d after endTimestamp %d", ErrBadHeader, h.BeginTimestamp, h.EndTimestamp)
		}
		if h.BeginPhyOffset > h.EndPhyOffset {
			return h, fmt.Errorf("%w: beginPhyOffset %d after endPhyOffset %d", ErrBadHeader, h.BeginPhyOffset, h.EndPhyOffset)
		}
	}
	return h, nil
}

// entry is one decoded 20-byte index entry.
type entry struct {
	keyHash   int32
	phyOffset int64
	timeDiff  int32 // seconds since the file's BeginTimestamp
	prevIndex int32 // previous entry in the same slot's chain, 0 = end
}

func encodeEntry(dst []byte, e entry) {
	_ = dst[EntrySize-1]
	binary.BigEndian.PutUint32(dst[0:4], uint32(e.keyHash))
	binary.BigEndian.PutUint64(dst[4:12], uint64(e.phyOffset))
	binary.BigEndian.PutUint32(dst[12:16], uint32(e.timeDiff))
	binary.BigEndian.PutUint32(dst[16:20], uint32(e.prevIndex))
}

// decodeEntry decodes b[0:EntrySize]; the caller guarantees the length.
func decodeEntry(b []byte) entry {
	_ = b[EntrySize-1]
	return entry{
		keyHash:   int32(binary.BigEndian.Uint32(b[0:4])),
		phyOffset: int64(binary.BigEndian.Uint64(b[4:12])),
		timeDiff:  int32(binary.BigEndian.Uint32(b[12:16])),
		prevIndex: int32(binary.BigEndian.Uint32(b[16:20])),
	}
}

// geometry is the shape of every file of one Service.
type geometry struct {
	slotNum    int64
	maxEntries int64
}

func (g geometry) fileSize() int64 {
	return HeaderSize + g.slotNum*SlotSize + g.maxEntries*EntrySize
}

func (g geometry) slotOff(slot int64) int64 {
	return HeaderSize + slot*SlotSize
}

func (g geometry) entryOff(idx int64) int64 {
	return HeaderSize + g.slotNum*SlotSize + idx*EntrySize
}

// slotOf returns the slot of a non-negative key hash.
func (g geometry) slotOf(hash int32) int64 {
	return int64(hash) % g.slotNum
}

// keyHash is the non-negative hash stored in entries: |message.JavaStringHash(key)|,
// with math.MinInt32 (whose absolute value does not fit) mapped to 0.
func keyHash(key string) int32 {
	return nonNegative(message.JavaStringHash(key))
}

// nonNegative is |h|, with math.MinInt32 mapped to 0.
func nonNegative(h int32) int32 {
	switch {
	case h == math.MinInt32:
		return 0
	case h < 0:
		return -h
	}
	return h
}

// asciiHash continues Java's String.hashCode from h over s and reports
// whether s is all ASCII; for a string that is not, the hash is not
// meaningful. For ASCII s, asciiHash(message.JavaStringHash(a), s) is
// message.JavaStringHash(a + s). Four bytes are folded a step, with the
// powers of 31, so the multiplications do not wait on each other.
func asciiHash(h int32, s string) (int32, bool) {
	const p1, p2, p3, p4 = 31, 31 * 31, 31 * 31 * 31, 31 * 31 * 31 * 31
	var high byte
	i := 0
	for ; i+4 <= len(s); i += 4 {
		c0, c1, c2, c3 := s[i], s[i+1], s[i+2], s[i+3]
		high |= c0 | c1 | c2 | c3
		h = h*p4 + int32(c0)*p3 + int32(c1)*p2 + int32(c2)*p1 + int32(c3)
	}
	for ; i < len(s); i++ {
		high |= s[i]
		h = 31*h + int32(s[i])
	}
	return h, high < utf8.RuneSelf
}

// timeDiff returns the whole seconds from begin to ts, clamped to
// [0, MaxInt32]: a store time before the file's begin is stored as 0.
func timeDiff(begin, ts int64) int32 {
	if ts <= begin {
		return 0
	}
	d := (uint64(ts) - uint64(begin)) / 1000
	if d > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(d)
}

// entryWindow returns the store-time range (ms, inclusive) an entry can stand
// for: its time diff has one-second resolution, and no entry can be newer
// than the file's EndTimestamp.
func entryWindow(h Header, diff int32) (lo, hi int64) {
	if diff < 0 {
		diff = 0
	}
	lo = satAdd(h.BeginTimestamp, int64(diff)*1000)
	hi = satAdd(lo, 999)
	if h.EndTimestamp < hi {
		hi = max(h.EndTimestamp, lo)
	}
	return lo, hi
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
