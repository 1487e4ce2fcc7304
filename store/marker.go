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
// Version 1 (the store as the raft log's state machine, Put):
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
//
// Version 2 (the CommitLog as the raft log, AppendEntries: see entries.go)
// closes one raft entry: its records, then this marker, which also holds
// what raft needs to give the entry back (GetLog) and what is not a
// message record:
//
//	offset size field
//	0-31        as version 1, version 2
//	32     8    raft term of the entry
//	40     1    raft log type (raft.LogType)
//	41     3    reserved (0)
//	44     4    header length h
//	48     h    the entry's header: its bytes without the records (all of
//	            them for an entry that carries no records)
//	48+h        end; the CommitLog adds its CRC trailer
const (
	markerMagic     uint32 = 0x4C4D5142
	markerVersion   uint16 = 1
	markerVersion2  uint16 = 2
	markerSize             = 32
	markerV2Fixed          = 48
	maxMarkerHeader        = 16 << 20
)

type marker struct {
	count int
	seq   uint64
	first int64
	// Version 2 only.
	v2      bool
	term    uint64
	logType uint8
	header  []byte // aliases the decoded bytes
}

// size is the encoded size of m.
func (m marker) size() int {
	if !m.v2 {
		return markerSize
	}
	return markerV2Fixed + len(m.header)
}

func encodeMarker(dst []byte, m marker) {
	binary.BigEndian.PutUint32(dst[0:], uint32(m.size()))
	binary.BigEndian.PutUint32(dst[4:], markerMagic)
	v := markerVersion
	if m.v2 {
		v = markerVersion2
	}
	binary.BigEndian.PutUint16(dst[8:], v)
	binary.BigEndian.PutUint16(dst[10:], 0)
	binary.BigEndian.PutUint32(dst[12:], uint32(m.count))
	binary.BigEndian.PutUint64(dst[16:], m.seq)
	binary.BigEndian.PutUint64(dst[24:], uint64(m.first))
	if !m.v2 {
		return
	}
	binary.BigEndian.PutUint64(dst[32:], m.term)
	dst[40] = m.logType
	dst[41], dst[42], dst[43] = 0, 0, 0
	binary.BigEndian.PutUint32(dst[44:], uint32(len(m.header)))
	copy(dst[markerV2Fixed:], m.header)
}

// isMarker reports whether payload carries the batch-marker magic.
func isMarker(payload []byte) bool {
	return len(payload) >= 8 && binary.BigEndian.Uint32(payload[4:]) == markerMagic
}

func decodeMarker(b []byte) (marker, error) {
	if len(b) < markerSize {
		return marker{}, fmt.Errorf("%w: %d bytes", ErrBadMarker, len(b))
	}
	size := binary.BigEndian.Uint32(b[0:])
	if magic := binary.BigEndian.Uint32(b[4:]); magic != markerMagic {
		return marker{}, fmt.Errorf("%w: magic %#x", ErrBadMarker, magic)
	}
	m := marker{
		count: int(binary.BigEndian.Uint32(b[12:])),
		seq:   binary.BigEndian.Uint64(b[16:]),
		first: int64(binary.BigEndian.Uint64(b[24:])),
	}
	switch v := binary.BigEndian.Uint16(b[8:]); v {
	case markerVersion:
		if size != markerSize {
			return marker{}, fmt.Errorf("%w: size %d", ErrBadMarker, size)
		}
	case markerVersion2:
		if len(b) < markerV2Fixed || int(size) != len(b) {
			return marker{}, fmt.Errorf("%w: version 2 of %d bytes (size %d)", ErrBadMarker, len(b), size)
		}
		h := binary.BigEndian.Uint32(b[44:])
		if h > maxMarkerHeader || int(h) != len(b)-markerV2Fixed {
			return marker{}, fmt.Errorf("%w: header of %d bytes in a marker of %d", ErrBadMarker, h, len(b))
		}
		m.v2 = true
		m.term = binary.BigEndian.Uint64(b[32:])
		m.logType = b[40]
		m.header = b[markerV2Fixed:]
	default:
		return marker{}, fmt.Errorf("%w: version %d", ErrBadMarker, v)
	}
	if m.first < 0 {
		return marker{}, fmt.Errorf("%w: first offset %d", ErrBadMarker, m.first)
	}
	return m, nil
}
