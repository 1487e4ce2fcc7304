package consumequeue

import (
	"encoding/binary"
	"fmt"
)

// UnitSize is the size in bytes of one ConsumeQueue unit.
const UnitSize = 20

// DefaultUnitsPerFile is the number of units a queue file holds by default
// (6 000 000 bytes), as in RocketMQ.
const DefaultUnitsPerFile = 300000

// Unit is one ConsumeQueue entry: where a message's record sits in the
// CommitLog and the hash of its tag, for filtering without reading the
// record.
type Unit struct {
	Offset   int64 // physical CommitLog offset of the record
	Size     int32 // size of the record in bytes; > 0 in a valid unit
	TagsCode int64 // hash code of the message's tag (0 without a tag)
}

// Valid reports whether u can point at a record: Size > 0 and Offset ≥ 0.
// The all-zero unit (a slot never written) is not valid.
func (u Unit) Valid() bool { return u.Size > 0 && u.Offset >= 0 }

// EncodeUnit writes u into dst[:UnitSize], big-endian:
// Offset (8 bytes) | Size (4) | TagsCode (8). dst must hold at least
// UnitSize bytes. It does not validate u.
func EncodeUnit(dst []byte, u Unit) {
	_ = dst[UnitSize-1]
	binary.BigEndian.PutUint64(dst[0:8], uint64(u.Offset))
	binary.BigEndian.PutUint32(dst[8:12], uint32(u.Size))
	binary.BigEndian.PutUint64(dst[12:20], uint64(u.TagsCode))
}

// appendUnit appends u, encoded as EncodeUnit does, to b.
func appendUnit(b []byte, u Unit) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(u.Offset))
	b = binary.BigEndian.AppendUint32(b, uint32(u.Size))
	return binary.BigEndian.AppendUint64(b, uint64(u.TagsCode))
}

// DecodeUnit decodes the unit in b[:UnitSize]. It returns ErrShortUnit if b
// is shorter than UnitSize and ErrBadUnit (with the decoded unit) if the
// unit is not valid (Size ≤ 0 or Offset < 0). Bytes after UnitSize are
// ignored.
func DecodeUnit(b []byte) (Unit, error) {
	if len(b) < UnitSize {
		return Unit{}, fmt.Errorf("%w: %d bytes", ErrShortUnit, len(b))
	}
	u := rawUnit(b)
	if !u.Valid() {
		return u, fmt.Errorf("%w: offset %d size %d", ErrBadUnit, u.Offset, u.Size)
	}
	return u, nil
}

// rawUnit decodes b[:UnitSize] without validation. len(b) ≥ UnitSize.
func rawUnit(b []byte) Unit {
	return Unit{
		Offset:   int64(binary.BigEndian.Uint64(b[0:8])),
		Size:     int32(binary.BigEndian.Uint32(b[8:12])),
		TagsCode: int64(binary.BigEndian.Uint64(b[12:20])),
	}
}
