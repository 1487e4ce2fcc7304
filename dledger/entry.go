package dledger

import (
	"encoding/binary"
	"fmt"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
)

// Raft entry (LogCommand data) layout, big-endian:
//
//	offset size field
//	0      1    format version the entry needs: 1 for types 1 to 3, 2 for
//	            type 4, 3 for a type-2 entry carrying an "acl" op (a node
//	            stops on a version it does not apply)
//	1      1    type: 1 messages, 2 metadata op, 3 messages and an op,
//	            4 replica checkpoint
//	2           payload
//
// messages payload:  count uint32, then count × (length uint32, record)
//
//	where record is a RocketMQ stored-message record stamped by the leader
//	(store time, store host, UNIQ_KEY) with queue and physical offsets 0;
//	the FSM assigns those at apply.
//
// metadata payload:  a metadata.Op as JSON.
//
// messages-and-op payload: op length uint32, the op as JSON, then a
// messages payload. Both parts are applied or neither (work whose
// progress must move with its output, such as delayed deliveries).
//
// checkpoint payload (20 bytes): from int64, to int64, CRC-32C uint32 of
// the leader's CommitLog bytes in [from, to).
const (
	entryVersion        byte = 1
	entryTypeMessages   byte = 1
	entryTypeMetadata   byte = 2
	entryTypeMessagesOp byte = 3
	entryTypeCheckpoint byte = 4
	checkpointVersion   byte = 2
	checkpointSize           = entryHeaderSize + 20
	entryHeaderSize          = 2
	messagesHeaderSize       = 4
	opLengthSize             = 4
	maxEntryOpSize           = 1 << 20
)

// encodeMessagesEntry concatenates encoded records into one entry.
func encodeMessagesEntry(records [][]byte) []byte {
	size := entryHeaderSize + messagesHeaderSize
	for _, r := range records {
		size += 4 + len(r)
	}
	b := make([]byte, 0, size)
	b = append(b, entryVersion, entryTypeMessages)
	b = binary.BigEndian.AppendUint32(b, uint32(len(records)))
	for _, r := range records {
		b = binary.BigEndian.AppendUint32(b, uint32(len(r)))
		b = append(b, r...)
	}
	return b
}

// checkRecord checks what DecodeRecord would check of one record without
// decoding it: its structure, that it is exactly rec long, and its body CRC.
func checkRecord(rec []byte) error {
	v, err := message.ParseView(rec)
	if err != nil {
		return err
	}
	if v.Size() != len(rec) {
		return fmt.Errorf("record of %d bytes in a frame of %d", v.Size(), len(rec))
	}
	return v.VerifyBodyCRC()
}

// encodeMessagesOpEntry builds a messages-and-op entry.
func encodeMessagesOpEntry(records [][]byte, op metadata.Op) ([]byte, error) {
	if metadataEntryVersion(op) != entryVersion {
		return nil, fmt.Errorf("%w: a %s op travels alone", metadata.ErrBadOp, op.Kind)
	}
	p, err := metadata.EncodeOp(op)
	if err != nil {
		return nil, err
	}
	msgs := encodeMessagesEntry(records)
	b := make([]byte, 0, entryHeaderSize+opLengthSize+len(p)+len(msgs)-entryHeaderSize)
	b = append(b, entryVersion, entryTypeMessagesOp)
	b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
	b = append(b, p...)
	return append(b, msgs[entryHeaderSize:]...), nil
}

func encodeMetadataEntry(op metadata.Op) ([]byte, error) {
	p, err := metadata.EncodeOp(op)
	if err != nil {
		return nil, err
	}
	return append([]byte{metadataEntryVersion(op), entryTypeMetadata}, p...), nil
}

// metadataEntryVersion is the version byte of a metadata entry carrying
// op: the format version that introduced its kind (or, for a putGroup of
// a FIFO group, the field it sets), so that a binary that does not know it
// stops on the version ("run a newer binary") rather than on an unknown
// kind, or applies it without the field.
func metadataEntryVersion(op metadata.Op) byte {
	switch op.Kind {
	case metadata.OpACL:
		return aclVersion
	case metadata.OpPop:
		return popVersion
	case metadata.OpRaftLog:
		return raftLogVersion
	case metadata.OpPutGroup:
		if op.Group != nil && op.Group.ConsumeMessageOrderly {
			return fifoVersion
		}
	}
	return entryVersion
}

// entry is a decoded raft entry.
type entry struct {
	typ byte
	// recs are the records of a messages entry, checked (structure, body
	// CRC) but not decoded; they alias the entry's bytes. The store copies
	// them into the CommitLog as they are (store.PutEncoded).
	recs [][]byte
	op   metadata.Op
	// from, to and sum are a checkpoint's.
	from, to int64
	sum      uint32
}

// encodeCheckpointEntry builds a replica checkpoint entry.
func encodeCheckpointEntry(from, to int64, sum uint32) []byte {
	b := make([]byte, 0, checkpointSize)
	b = append(b, checkpointVersion, entryTypeCheckpoint)
	b = binary.BigEndian.AppendUint64(b, uint64(from))
	b = binary.BigEndian.AppendUint64(b, uint64(to))
	return binary.BigEndian.AppendUint32(b, sum)
}

// decodeEntry parses an entry and checks its records (structure, body
// CRC). It never panics; damage is ErrBadEntry.
func decodeEntry(b []byte) (entry, error) { return decodeEntryChecked(b, false) }

// decodeEntryChecked is decodeEntry; with checked, the records are known to
// be sound (this node encoded and checked them: appendRecords) and are
// framed but not checked again.
func decodeEntryChecked(b []byte, checked bool) (entry, error) {
	if len(b) < entryHeaderSize {
		return entry{}, fmt.Errorf("%w: %d bytes", ErrBadEntry, len(b))
	}
	e := entry{typ: b[1]}
	want := entryVersion
	if e.typ == entryTypeCheckpoint {
		want = checkpointVersion
	}
	if e.typ == entryTypeMetadata && (b[0] == aclVersion || b[0] == popVersion || b[0] == fifoVersion || b[0] == raftLogVersion) {
		want = b[0]
	}
	if b[0] != want {
		return entry{}, fmt.Errorf("%w: version %d of type %d", ErrBadEntry, b[0], b[1])
	}
	p := b[entryHeaderSize:]
	switch e.typ {
	case entryTypeCheckpoint:
		if len(b) != checkpointSize {
			return entry{}, fmt.Errorf("%w: checkpoint of %d bytes", ErrBadEntry, len(b))
		}
		e.from = int64(binary.BigEndian.Uint64(p))
		e.to = int64(binary.BigEndian.Uint64(p[8:]))
		e.sum = binary.BigEndian.Uint32(p[16:])
		if e.from < 0 || e.to < e.from {
			return entry{}, fmt.Errorf("%w: checkpoint of [%d, %d)", ErrBadEntry, e.from, e.to)
		}
	case entryTypeMessages:
		recs, err := decodeRecords(p, checked)
		if err != nil {
			return entry{}, err
		}
		e.recs = recs
	case entryTypeMessagesOp:
		if len(p) < opLengthSize {
			return entry{}, fmt.Errorf("%w: short op length", ErrBadEntry)
		}
		n := binary.BigEndian.Uint32(p)
		if n > maxEntryOpSize || uint64(n) > uint64(len(p)-opLengthSize) {
			return entry{}, fmt.Errorf("%w: op of %d bytes", ErrBadEntry, n)
		}
		op, err := metadata.DecodeOp(p[opLengthSize : opLengthSize+n])
		if err != nil {
			return entry{}, fmt.Errorf("%w: %v", ErrBadEntry, err)
		}
		if metadataEntryVersion(op) != entryVersion {
			return entry{}, fmt.Errorf("%w: a %s op with messages", ErrBadEntry, op.Kind)
		}
		recs, err := decodeRecords(p[opLengthSize+n:], checked)
		if err != nil {
			return entry{}, err
		}
		e.op, e.recs = op, recs
	case entryTypeMetadata:
		op, err := metadata.DecodeOp(p)
		if err != nil {
			return entry{}, fmt.Errorf("%w: %v", ErrBadEntry, err)
		}
		if b[0] != metadataEntryVersion(op) {
			return entry{}, fmt.Errorf("%w: a %s op in an entry of version %d", ErrBadEntry, op.Kind, b[0])
		}
		e.op = op
	default:
		return entry{}, fmt.Errorf("%w: type %d", ErrBadEntry, e.typ)
	}
	return e, nil
}

// decodeRecords parses a messages payload: count, then length-prefixed
// records, each checked (structure, body CRC) unless checked says they
// were, aliasing p.
func decodeRecords(p []byte, checked bool) ([][]byte, error) {
	if len(p) < messagesHeaderSize {
		return nil, fmt.Errorf("%w: short messages header", ErrBadEntry)
	}
	n := binary.BigEndian.Uint32(p)
	p = p[messagesHeaderSize:]
	if uint64(n)*(4+message.MinRecordSize) > uint64(len(p)) {
		return nil, fmt.Errorf("%w: %d messages in %d bytes", ErrBadEntry, n, len(p))
	}
	recs := make([][]byte, 0, n)
	for i := uint32(0); i < n; i++ {
		if len(p) < 4 {
			return nil, fmt.Errorf("%w: message %d: truncated", ErrBadEntry, i)
		}
		l := binary.BigEndian.Uint32(p)
		if uint64(l) > uint64(len(p)-4) {
			return nil, fmt.Errorf("%w: message %d: length %d", ErrBadEntry, i, l)
		}
		rec := p[4 : 4+l : 4+l]
		if !checked {
			if err := checkRecord(rec); err != nil {
				return nil, fmt.Errorf("%w: message %d: %v", ErrBadEntry, i, err)
			}
		}
		recs = append(recs, rec)
		p = p[4+l:]
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrBadEntry, len(p))
	}
	return recs, nil
}
