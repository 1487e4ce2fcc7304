package store

import (
	"encoding/binary"
	"fmt"
)

// A batch marker closes every batch that Put writes to the CommitLog. It
// carries the caller's sequence number (the raft index), so recovery knows
// the last durable sequence number, and the number and first offset of the
// batch's records, so a batch is all-or-nothing: records after the last
// complete marker are a torn batch and are cut off.
//
//	offset size field
//	0      4    total size (= markerSize, RocketMQ's TOTALSIZE convention)
//	4      4    magic 0x4C4D5142 ("LMQB")
//	8      2    version (1)
//	10     2    flags (0)
//	12     4    record count
//	16     8    sequence number
//	24     8    CommitLog offset of the batch's first record (= marker's own
//	            offset when the batch is empty)
//	32          end; the CommitLog adds its CRC trailer
const (
	markerMagic   uint32 = 0x4C4D5142
	markerVersion uint16 = 1
	markerSize           = 32
)

type marker struct {
	count int
	seq   uint64
	first int64
}

func encodeMarker(dst []byte, m marker) {
	binary.BigEndian.PutUint32(dst[0:], markerSize)
	binary.BigEndian.PutUint32(dst[4:], markerMagic)
	binary.BigEndian.PutUint16(dst[8:], markerVersion)
	binary.BigEndian.PutUint16(dst[10:], 0)
	binary.BigEndian.PutUint32(dst[12:], uint32(m.count))
	binary.BigEndian.PutUint64(dst[16:], m.seq)
	binary.BigEndian.PutUint64(dst[24:], uint64(m.first))
}

// isMarker reports whether payload carries the batch-marker magic.
func isMarker(payload []byte) bool {
	return len(payload) >= 8 && binary.BigEndian.Uint32(payload[4:]) == markerMagic
}

func decodeMarker(b []byte) (marker, error) {
	if len(b) < markerSize {
		return marker{}, fmt.Errorf("%w: %d bytes", ErrBadMarker, len(b))
	}
	if size := binary.BigEndian.Uint32(b[0:]); size != markerSize {
		return marker{}, fmt.Errorf("%w: size %d", ErrBadMarker, size)
	}
	if magic := binary.BigEndian.Uint32(b[4:]); magic != markerMagic {
		return marker{}, fmt.Errorf("%w: magic %#x", ErrBadMarker, magic)
	}
	if v := binary.BigEndian.Uint16(b[8:]); v != markerVersion {
		return marker{}, fmt.Errorf("%w: version %d", ErrBadMarker, v)
	}
	m := marker{
		count: int(binary.BigEndian.Uint32(b[12:])),
		seq:   binary.BigEndian.Uint64(b[16:]),
		first: int64(binary.BigEndian.Uint64(b[24:])),
	}
	if m.first < 0 {
		return marker{}, fmt.Errorf("%w: first offset %d", ErrBadMarker, m.first)
	}
	return m, nil
}
