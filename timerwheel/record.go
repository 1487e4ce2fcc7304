package timerwheel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Errors of the package; compare with errors.Is.
var (
	// ErrCorrupt: bytes read from disk are not a valid record or
	// checkpoint (bad magic, version, CRC or field).
	ErrCorrupt = errors.New("timerwheel: corrupt data")
	// ErrOrder: Append was given a timer out of queue-offset order.
	ErrOrder = errors.New("timerwheel: timers must be appended in queue-offset order")
	// ErrRange: a queue offset outside what the wheel holds.
	ErrRange = errors.New("timerwheel: queue offset out of range")
	// ErrClosed: the wheel was closed.
	ErrClosed = errors.New("timerwheel: closed")
)

// Record layout (see doc.go).
const (
	// RecordSize is the size of one timer record on disk.
	RecordSize = 48
	// recordMagic marks a written record ("LMTW").
	recordMagic uint32 = 0x4C4D5457
	// recordVersion is the only version this package writes and reads.
	recordVersion uint16 = 1
	// flagGone marks a parked message that cannot be delivered (its due
	// time does not parse, or the store no longer holds it): it is in the
	// log, so queue offsets stay positions, but in no slot.
	flagGone uint16 = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Timer is one parked message as the wheel knows it.
type Timer struct {
	// Q is the parked message's offset in the parked topic's queue: the
	// timer's identity, the same on every replica.
	Q int64
	// Due is when it is to be delivered, Unix milliseconds (> 0 unless
	// Gone).
	Due int64
	// Phy and Size locate the parked record in the CommitLog.
	Phy  int64
	Size int32
	// Gone: the parked message cannot be delivered (see flagGone).
	Gone bool
}

// Key orders timers: by due time, then by queue offset. The order is the
// same on every replica, so a progress cursor in it means the same set of
// timers everywhere.
type Key struct {
	Due int64
	Q   int64
}

// Less reports whether k sorts before o.
func (k Key) Less(o Key) bool {
	if k.Due != o.Due {
		return k.Due < o.Due
	}
	return k.Q < o.Q
}

// Key is the timer's position in the delivery order.
func (t Timer) Key() Key { return Key{Due: t.Due, Q: t.Q} }

// Next is the smallest key after t's: a cursor that has delivered t.
func (t Timer) Next() Key { return Key{Due: t.Due, Q: t.Q + 1} }

// appendRecord encodes t, whose slot predecessor is prev (-1: none), to
// dst.
func appendRecord(dst []byte, t Timer, prev int64) []byte {
	var b [RecordSize]byte
	binary.BigEndian.PutUint32(b[0:], recordMagic)
	binary.BigEndian.PutUint16(b[4:], recordVersion)
	var flags uint16
	if t.Gone {
		flags |= flagGone
	}
	binary.BigEndian.PutUint16(b[6:], flags)
	binary.BigEndian.PutUint64(b[8:], uint64(t.Q))
	binary.BigEndian.PutUint64(b[16:], uint64(t.Due))
	binary.BigEndian.PutUint64(b[24:], uint64(prev))
	binary.BigEndian.PutUint64(b[32:], uint64(t.Phy))
	binary.BigEndian.PutUint32(b[40:], uint32(t.Size))
	binary.BigEndian.PutUint32(b[44:], crc32.Checksum(b[:44], castagnoli))
	return append(dst, b[:]...)
}

// decodeRecord decodes the record of queue offset q from b. It checks
// everything a reader relies on: magic, version, CRC, the offset, a
// predecessor strictly before q (so a chain walk always ends), and sane
// fields. Nothing in b can make it panic.
func decodeRecord(b []byte, q int64) (Timer, int64, error) {
	if len(b) < RecordSize {
		return Timer{}, 0, fmt.Errorf("%w: record of %d bytes", ErrCorrupt, len(b))
	}
	b = b[:RecordSize]
	if m := binary.BigEndian.Uint32(b[0:]); m != recordMagic {
		return Timer{}, 0, fmt.Errorf("%w: record %d: magic %#x", ErrCorrupt, q, m)
	}
	if v := binary.BigEndian.Uint16(b[4:]); v != recordVersion {
		return Timer{}, 0, fmt.Errorf("%w: record %d: version %d", ErrCorrupt, q, v)
	}
	if got, want := binary.BigEndian.Uint32(b[44:]), crc32.Checksum(b[:44], castagnoli); got != want {
		return Timer{}, 0, fmt.Errorf("%w: record %d: crc %#x, want %#x", ErrCorrupt, q, got, want)
	}
	flags := binary.BigEndian.Uint16(b[6:])
	t := Timer{
		Q:    int64(binary.BigEndian.Uint64(b[8:])),
		Due:  int64(binary.BigEndian.Uint64(b[16:])),
		Phy:  int64(binary.BigEndian.Uint64(b[32:])),
		Size: int32(binary.BigEndian.Uint32(b[40:])),
		Gone: flags&flagGone != 0,
	}
	prev := int64(binary.BigEndian.Uint64(b[24:]))
	switch {
	case flags&^flagGone != 0:
		return Timer{}, 0, fmt.Errorf("%w: record %d: flags %#x", ErrCorrupt, q, flags)
	case t.Q != q:
		return Timer{}, 0, fmt.Errorf("%w: record at %d says it is %d", ErrCorrupt, q, t.Q)
	case prev < -1 || prev >= q:
		return Timer{}, 0, fmt.Errorf("%w: record %d: predecessor %d", ErrCorrupt, q, prev)
	case t.Phy < 0 || t.Size < 0:
		return Timer{}, 0, fmt.Errorf("%w: record %d: location %d+%d", ErrCorrupt, q, t.Phy, t.Size)
	case !t.Gone && t.Due <= 0:
		return Timer{}, 0, fmt.Errorf("%w: record %d: due %d", ErrCorrupt, q, t.Due)
	}
	return t, prev, nil
}

// DecodeRecord decodes one on-disk record that claims queue offset q: the
// decoder the wheel uses for every record it reads, exported for tools
// and fuzzing. prev is the queue offset of the previous timer of the same
// second (-1: none).
func DecodeRecord(b []byte, q int64) (t Timer, prev int64, err error) {
	return decodeRecord(b, q)
}

// secondOf is the wheel second (slot) of a due time in milliseconds.
func secondOf(dueMs int64) int64 {
	s := dueMs / 1000
	if dueMs%1000 != 0 && dueMs < 0 {
		s--
	}
	return s
}
