package message

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"net/netip"
	"slices"
)

// Byte positions of the fixed-position fields of a record (doc.go has the
// full table). Fields after BORNHOST move by 12 bytes when the born host is
// IPv6; use RecordView for those.
const (
	PosTotalSize      = 0
	PosMagic          = 4
	PosBodyCRC        = 8
	PosQueueID        = 12
	PosFlag           = 16
	PosQueueOffset    = 20
	PosPhysicalOffset = 28
	PosSysFlag        = 36
	PosBornTimestamp  = 40
	PosBornHost       = 48
)

const (
	// MinRecordSize is the size of a record with IPv4 hosts and an empty
	// body, topic and properties: the fixed fields alone. (A record that can
	// be encoded has a topic, so real records are at least one byte longer.)
	MinRecordSize = 91

	// BlankHeaderSize is the size of the TOTALSIZE + BlankMagic header that
	// starts the filler at the end of a commitlog segment.
	BlankHeaderSize = 8

	ipv4HostLen = 4 + 4
	ipv6HostLen = 16 + 4
)

var be = binary.BigEndian

// BodyCRC returns the BODYCRC of body: CRC32-IEEE(body) & 0x7FFFFFFF, as
// Java's UtilAll.crc32 computes it.
func BodyCRC(body []byte) uint32 { return crc32.ChecksumIEEE(body) & 0x7FFFFFFF }

// hostLen is the encoded length of a host: 4+4 for IPv4, 16+4 otherwise. An
// IPv4-mapped IPv6 address counts as IPv6 (it is stored as 16 bytes); call
// Unmap first to store it as IPv4.
func hostLen(a netip.AddrPort) int {
	if a.Addr().Is4() {
		return ipv4HostLen
	}
	return ipv6HostLen
}

// RecordSize returns the encoded size of e when its encoded properties are
// propertiesLen bytes long. The host lengths follow the address families of
// e.BornHost and e.StoreHost, not e.SysFlag.
func RecordSize(e *Ext, propertiesLen int) int {
	return MinRecordSize - 2*ipv4HostLen + hostLen(e.BornHost) + hostLen(e.StoreHost) +
		len(e.Body) + len(e.Topic) + propertiesLen
}

// checkEncodable validates everything about e except the properties' bytes.
func checkEncodable(e *Ext, propsLen int) error {
	switch {
	case e.Topic == "":
		return ErrEmptyTopic
	case len(e.Topic) > MaxTopicLength:
		return fmt.Errorf("%w: %d bytes", ErrTopicTooLong, len(e.Topic))
	case propsLen > MaxPropertiesLength:
		return fmt.Errorf("%w: %d bytes", ErrPropertiesTooLong, propsLen)
	case !e.BornHost.IsValid():
		return fmt.Errorf("%w: born host is not set", ErrInvalidHost)
	case !e.StoreHost.IsValid():
		return fmt.Errorf("%w: store host is not set", ErrInvalidHost)
	}
	if size := RecordSize(e, propsLen); size > math.MaxInt32 {
		return fmt.Errorf("%w: record of %d bytes does not fit TOTALSIZE", ErrBadSize, size)
	}
	return nil
}

// AppendRecord encodes e as a stored record (magic MagicV1) and appends it to
// dst, encoding e.Properties with EncodeProperties. It computes TOTALSIZE
// and BODYCRC and sets the host bits of SysFlag from the address families
// of BornHost and StoreHost, and writes all three back into e (StoreSize,
// BodyCRC, SysFlag). Every other field is written as it is.
//
// Errors, with dst returned unchanged and e not written: ErrEmptyTopic,
// ErrTopicTooLong, ErrPropertiesTooLong, ErrBadProperties (an empty name, or
// a name or value containing \x01 or \x02), ErrInvalidHost (a zero BornHost
// or StoreHost), ErrBadSize (a record over 2 GiB).
//
// AppendRecord writes to e, so e must not be used concurrently.
func AppendRecord(dst []byte, e *Ext) ([]byte, error) {
	if err := ValidateProperties(e.Properties); err != nil {
		return dst, err
	}
	var stack [16]string
	keys, propsLen := sortedKeys(e.Properties, &stack)
	if err := checkEncodable(e, propsLen); err != nil {
		return dst, err
	}
	size := RecordSize(e, propsLen)
	start := len(dst)
	dst = slices.Grow(dst, size)[:start+size]
	rec := dst[start:]
	propsOff := encodeFixed(rec, e, propsLen)
	// rec[propsOff:propsOff] has exactly propsLen bytes of capacity left
	// inside dst, so this appends in place.
	appendSorted(rec[propsOff:propsOff], e.Properties, keys, propsLen)
	return dst, nil
}

// EncodeRecordInto encodes e into dst, which must be exactly
// RecordSize(e, len(props)) bytes long (for example a window of a mapped
// commitlog segment). props are the already-encoded properties; they are
// validated (ErrBadProperties) but not re-sorted. Otherwise it behaves like
// AppendRecord, including the writes to e. Everything is checked before the
// first byte is written, so on error neither dst nor e has changed.
func EncodeRecordInto(dst []byte, e *Ext, props []byte) error {
	if err := CheckEncodedProperties(props); err != nil {
		return err
	}
	if err := checkEncodable(e, len(props)); err != nil {
		return err
	}
	if size := RecordSize(e, len(props)); len(dst) != size {
		return fmt.Errorf("%w: destination is %d bytes, the record needs %d", ErrBadSize, len(dst), size)
	}
	propsOff := encodeFixed(dst, e, len(props))
	copy(dst[propsOff:], props)
	return nil
}

// encodeFixed writes every field of a validated e into rec, which is exactly
// the record's size, except the properties' bytes, and returns the offset
// where those go.
func encodeFixed(rec []byte, e *Ext, propsLen int) int {
	sysFlag := e.SysFlag &^ (SysFlagBornHostV6 | SysFlagStoreHostV6)
	if !e.BornHost.Addr().Is4() {
		sysFlag |= SysFlagBornHostV6
	}
	if !e.StoreHost.Addr().Is4() {
		sysFlag |= SysFlagStoreHostV6
	}
	crc := BodyCRC(e.Body)
	size := len(rec)

	be.PutUint32(rec[PosTotalSize:], uint32(size))
	be.PutUint32(rec[PosMagic:], MagicV1)
	be.PutUint32(rec[PosBodyCRC:], crc)
	be.PutUint32(rec[PosQueueID:], uint32(e.QueueID))
	be.PutUint32(rec[PosFlag:], uint32(e.Flag))
	be.PutUint64(rec[PosQueueOffset:], uint64(e.QueueOffset))
	be.PutUint64(rec[PosPhysicalOffset:], uint64(e.PhysicalOffset))
	be.PutUint32(rec[PosSysFlag:], uint32(sysFlag))
	be.PutUint64(rec[PosBornTimestamp:], uint64(e.BornTimestamp))
	off := putHost(rec, PosBornHost, e.BornHost)
	be.PutUint64(rec[off:], uint64(e.StoreTimestamp))
	off = putHost(rec, off+8, e.StoreHost)
	be.PutUint32(rec[off:], uint32(e.ReconsumeTimes))
	be.PutUint64(rec[off+4:], uint64(e.PreparedTransactionOffset))
	off += 12
	be.PutUint32(rec[off:], uint32(len(e.Body)))
	off += 4
	off += copy(rec[off:], e.Body)
	rec[off] = byte(len(e.Topic))
	off++
	off += copy(rec[off:], e.Topic)
	be.PutUint16(rec[off:], uint16(propsLen))
	off += 2

	e.StoreSize = int32(size)
	e.BodyCRC = crc
	e.SysFlag = sysFlag
	return off
}

// putHost writes the address bytes and an int32 port at rec[off:] and
// returns the offset after them.
func putHost(rec []byte, off int, ap netip.AddrPort) int {
	a := ap.Addr()
	if a.Is4() {
		ip := a.As4()
		off += copy(rec[off:], ip[:])
	} else {
		ip := a.As16()
		off += copy(rec[off:], ip[:])
	}
	be.PutUint32(rec[off:], uint32(ap.Port()))
	return off + 4
}

// DecodeRecord decodes the record at the front of b and returns it with the
// number of bytes it occupies (its TOTALSIZE). Body, topic and properties
// are copied, so the result does not alias b.
//
// It validates everything ParseView does and also the body CRC. Errors:
// ErrTruncated (b ends before the record does), ErrBadMagic, ErrBadSize
// (TOTALSIZE below the minimum or disagreeing with the field lengths, a
// negative body or properties length, a topic length outside 1..127),
// ErrInvalidHost (a port outside 0..65535), ErrBadProperties, ErrBodyCRC.
// It never panics, whatever b holds.
func DecodeRecord(b []byte) (*Ext, int, error) {
	v, err := ParseView(b)
	if err != nil {
		return nil, 0, err
	}
	if err := v.VerifyBodyCRC(); err != nil {
		return nil, 0, err
	}
	e, err := v.Decode()
	if err != nil {
		return nil, 0, err
	}
	return e, v.Size(), nil
}

// DecodeRecords decodes a concatenation of records (a pull body). It stops at
// the first error and returns the records decoded before it together with
// the error, which names the record's index and byte offset. An empty b
// yields no records and no error.
func DecodeRecords(b []byte) ([]*Ext, error) {
	var out []*Ext
	for off := 0; off < len(b); {
		e, n, err := DecodeRecord(b[off:])
		if err != nil {
			return out, fmt.Errorf("%w (record %d at byte %d)", err, len(out), off)
		}
		out = append(out, e)
		off += n
	}
	return out, nil
}

// PeekSize returns the TOTALSIZE field of the entry at the front of b
// without validating anything else. ErrTruncated if b is shorter than 4.
func PeekSize(b []byte) (int32, error) {
	if len(b) < 4 {
		return 0, fmt.Errorf("%w: need 4 bytes for TOTALSIZE, have %d", ErrTruncated, len(b))
	}
	return int32(be.Uint32(b)), nil
}

// PeekMagic returns the MAGICCODE field of the entry at the front of b
// (MagicV1 for a record, BlankMagic for segment filler, anything else for
// garbage) without validating it. ErrTruncated if b is shorter than 8.
func PeekMagic(b []byte) (uint32, error) {
	if len(b) < BlankHeaderSize {
		return 0, fmt.Errorf("%w: need 8 bytes for MAGICCODE, have %d", ErrTruncated, len(b))
	}
	return be.Uint32(b[PosMagic:]), nil
}

// PutBlank writes the end-of-segment filler header into dst: TOTALSIZE =
// len(dst) and BlankMagic. The rest of dst is left as it is. It fails with
// ErrTruncated if dst is shorter than BlankHeaderSize and ErrBadSize if it
// is longer than an int32 can say.
func PutBlank(dst []byte) error {
	if len(dst) < BlankHeaderSize {
		return fmt.Errorf("%w: a blank needs 8 bytes, have %d", ErrTruncated, len(dst))
	}
	if len(dst) > math.MaxInt32 {
		return fmt.Errorf("%w: blank of %d bytes", ErrBadSize, len(dst))
	}
	be.PutUint32(dst[PosTotalSize:], uint32(len(dst)))
	be.PutUint32(dst[PosMagic:], BlankMagic)
	return nil
}

// PatchOffsets overwrites QUEUEOFFSET and PHYSICALOFFSET in the encoded
// record rec, for a writer that learns them only when the record's place in
// the log is fixed. The body CRC does not cover them, so the record stays
// valid. ErrTruncated if rec is too short to hold those fields.
func PatchOffsets(rec []byte, queueOffset, physicalOffset int64) error {
	if len(rec) < PosSysFlag {
		return fmt.Errorf("%w: need %d bytes to patch offsets, have %d", ErrTruncated, PosSysFlag, len(rec))
	}
	be.PutUint64(rec[PosQueueOffset:], uint64(queueOffset))
	be.PutUint64(rec[PosPhysicalOffset:], uint64(physicalOffset))
	return nil
}
