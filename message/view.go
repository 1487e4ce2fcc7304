package message

import (
	"fmt"
	"net/netip"
)

// RecordView is a read-only accessor over one encoded record that decodes
// fields on demand, for the hot paths (dispatch to the consume queue and
// index, pull filtering) that must not allocate per record.
//
// A RecordView aliases the bytes it was parsed from: it is valid only while
// they are unchanged and still mapped, and slices it returns (Body,
// TopicBytes, PropertiesBytes, Property) alias them too. Its methods only
// read, so any number of goroutines may use one view concurrently.
type RecordView struct {
	b          []byte // exactly the record: b[:TOTALSIZE]
	storeTSOff int    // STORETIMESTAMP
	reconOff   int    // RECONSUMETIMES
	bodyOff    int    // first body byte
	bodyLen    int
	topicOff   int // first topic byte
	topicLen   int
	propsOff   int // first properties byte; properties run to the end
}

// ParseView validates the structure of the record at the front of b and
// returns a view of it. It checks the same things as DecodeRecord (magic,
// TOTALSIZE against every length field, topic length 1..127, ports, the
// properties' framing) with the same errors, except the body CRC: the
// commitlog already verified that on recovery, so the dispatch path skips
// it. Call VerifyBodyCRC where it matters. ParseView does not allocate
// unless it returns an error, and never panics.
func ParseView(b []byte) (RecordView, error) {
	if len(b) < BlankHeaderSize {
		return RecordView{}, fmt.Errorf("%w: need 8 header bytes, have %d", ErrTruncated, len(b))
	}
	if m := be.Uint32(b[PosMagic:]); m != MagicV1 {
		return RecordView{}, fmt.Errorf("%w: 0x%08X", ErrBadMagic, m)
	}
	size32 := int32(be.Uint32(b[PosTotalSize:]))
	if size32 < MinRecordSize {
		return RecordView{}, fmt.Errorf("%w: TOTALSIZE %d is below the minimum %d", ErrBadSize, size32, MinRecordSize)
	}
	size := int(size32)
	if len(b) < size {
		return RecordView{}, fmt.Errorf("%w: TOTALSIZE %d but only %d bytes", ErrTruncated, size, len(b))
	}
	rec := b[:size:size]
	sysFlag := int32(be.Uint32(rec[PosSysFlag:]))
	bornLen, storeLen := ipv4HostLen, ipv4HostLen
	if sysFlag&SysFlagBornHostV6 != 0 {
		bornLen = ipv6HostLen
	}
	if sysFlag&SysFlagStoreHostV6 != 0 {
		storeLen = ipv6HostLen
	}
	v := RecordView{b: rec}
	v.storeTSOff = PosBornHost + bornLen
	v.reconOff = v.storeTSOff + 8 + storeLen
	bodyLenOff := v.reconOff + 4 + 8
	v.bodyOff = bodyLenOff + 4
	// The fixed part: everything but the body, topic and properties bytes.
	if fixed := v.bodyOff + 1 + 2; size < fixed {
		return RecordView{}, fmt.Errorf("%w: TOTALSIZE %d is below the %d bytes of fixed fields for sysFlag 0x%X", ErrBadSize, size, fixed, sysFlag)
	}
	bodyLen := int32(be.Uint32(rec[bodyLenOff:]))
	if bodyLen < 0 || int(bodyLen) > size-v.bodyOff-3 {
		return RecordView{}, fmt.Errorf("%w: body length %d at byte %d does not fit TOTALSIZE %d", ErrBadSize, bodyLen, bodyLenOff, size)
	}
	v.bodyLen = int(bodyLen)
	topicLenOff := v.bodyOff + v.bodyLen
	v.topicLen = int(rec[topicLenOff])
	v.topicOff = topicLenOff + 1
	if v.topicLen == 0 || v.topicLen > MaxTopicLength {
		return RecordView{}, fmt.Errorf("%w: topic length %d at byte %d is outside 1..%d", ErrBadSize, v.topicLen, topicLenOff, MaxTopicLength)
	}
	if v.topicLen > size-v.topicOff-2 {
		return RecordView{}, fmt.Errorf("%w: topic of %d bytes at byte %d does not fit TOTALSIZE %d", ErrBadSize, v.topicLen, v.topicOff, size)
	}
	propsLenOff := v.topicOff + v.topicLen
	propsLen := int16(be.Uint16(rec[propsLenOff:]))
	v.propsOff = propsLenOff + 2
	if propsLen < 0 || v.propsOff+int(propsLen) != size {
		return RecordView{}, fmt.Errorf("%w: properties length %d at byte %d: fields end at byte %d but TOTALSIZE is %d",
			ErrBadSize, propsLen, propsLenOff, v.propsOff+int(propsLen), size)
	}
	if p := int32(be.Uint32(rec[v.storeTSOff-4:])); p < 0 || p > 0xFFFF {
		return RecordView{}, fmt.Errorf("%w: born host port %d", ErrInvalidHost, p)
	}
	if p := int32(be.Uint32(rec[v.reconOff-4:])); p < 0 || p > 0xFFFF {
		return RecordView{}, fmt.Errorf("%w: store host port %d", ErrInvalidHost, p)
	}
	if err := CheckEncodedProperties(rec[v.propsOff:]); err != nil {
		return RecordView{}, fmt.Errorf("%w (properties start at record byte %d)", err, v.propsOff)
	}
	return v, nil
}

// Bytes returns the whole encoded record.
func (v RecordView) Bytes() []byte { return v.b }

// Size returns TOTALSIZE, the record's length in bytes.
func (v RecordView) Size() int { return len(v.b) }

// BodyCRC returns the stored BODYCRC field.
func (v RecordView) BodyCRC() uint32 { return be.Uint32(v.b[PosBodyCRC:]) }

// QueueID returns QUEUEID.
func (v RecordView) QueueID() int32 { return int32(be.Uint32(v.b[PosQueueID:])) }

// Flag returns the user FLAG.
func (v RecordView) Flag() int32 { return int32(be.Uint32(v.b[PosFlag:])) }

// QueueOffset returns QUEUEOFFSET.
func (v RecordView) QueueOffset() int64 { return int64(be.Uint64(v.b[PosQueueOffset:])) }

// PhysicalOffset returns PHYSICALOFFSET.
func (v RecordView) PhysicalOffset() int64 { return int64(be.Uint64(v.b[PosPhysicalOffset:])) }

// SysFlag returns SYSFLAG.
func (v RecordView) SysFlag() int32 { return int32(be.Uint32(v.b[PosSysFlag:])) }

// BornTimestamp returns BORNTIMESTAMP (ms).
func (v RecordView) BornTimestamp() int64 { return int64(be.Uint64(v.b[PosBornTimestamp:])) }

// BornHost returns BORNHOST.
func (v RecordView) BornHost() netip.AddrPort { return readHost(v.b[PosBornHost:v.storeTSOff]) }

// StoreTimestamp returns STORETIMESTAMP (ms).
func (v RecordView) StoreTimestamp() int64 { return int64(be.Uint64(v.b[v.storeTSOff:])) }

// StoreHost returns STOREHOST.
func (v RecordView) StoreHost() netip.AddrPort { return readHost(v.b[v.storeTSOff+8 : v.reconOff]) }

// ReconsumeTimes returns RECONSUMETIMES.
func (v RecordView) ReconsumeTimes() int32 { return int32(be.Uint32(v.b[v.reconOff:])) }

// PreparedTransactionOffset returns PREPARED TRANSACTION OFFSET.
func (v RecordView) PreparedTransactionOffset() int64 {
	return int64(be.Uint64(v.b[v.reconOff+4:]))
}

// Body returns the stored body (compressed if SysFlagCompressed is set).
func (v RecordView) Body() []byte { return v.b[v.bodyOff : v.bodyOff+v.bodyLen : v.bodyOff+v.bodyLen] }

// Topic returns the topic as a new string (one small allocation); use
// TopicBytes on allocation-free paths (a map lookup m[string(b)] does not
// allocate).
func (v RecordView) Topic() string { return string(v.TopicBytes()) }

// TopicBytes returns the topic's bytes.
func (v RecordView) TopicBytes() []byte {
	return v.b[v.topicOff : v.topicOff+v.topicLen : v.topicOff+v.topicLen]
}

// PropertiesBytes returns the encoded properties.
func (v RecordView) PropertiesBytes() []byte { return v.b[v.propsOff:] }

// Property returns the value of the named property without allocating (see
// FindProperty).
func (v RecordView) Property(name string) ([]byte, bool) {
	return FindProperty(v.PropertiesBytes(), name)
}

// TagsHashCode returns the consume-queue tag code of the record's TAGS
// property (0 if it has none), without allocating.
func (v RecordView) TagsHashCode() int64 {
	tags, _ := v.Property(PropertyTags)
	return int64(javaHashBytes(tags))
}

// VerifyBodyCRC checks the stored BODYCRC against the body; ErrBodyCRC if
// they differ.
func (v RecordView) VerifyBodyCRC() error {
	if got, want := v.BodyCRC(), BodyCRC(v.Body()); got != want {
		return fmt.Errorf("%w: stored 0x%08X, body has 0x%08X", ErrBodyCRC, got, want)
	}
	return nil
}

// Decode materialises the record as an Ext. Body, topic and properties are
// copied, so the Ext outlives the view's bytes. An empty body decodes as a
// nil Body; the Properties map is never nil.
func (v RecordView) Decode() (*Ext, error) {
	props, err := DecodeProperties(v.PropertiesBytes())
	if err != nil {
		return nil, err
	}
	e := &Ext{
		Message: Message{
			Topic:      v.Topic(),
			Flag:       v.Flag(),
			Properties: props,
		},
		StoreSize:                 int32(v.Size()),
		QueueID:                   v.QueueID(),
		QueueOffset:               v.QueueOffset(),
		PhysicalOffset:            v.PhysicalOffset(),
		SysFlag:                   v.SysFlag(),
		BornTimestamp:             v.BornTimestamp(),
		BornHost:                  v.BornHost(),
		StoreTimestamp:            v.StoreTimestamp(),
		StoreHost:                 v.StoreHost(),
		ReconsumeTimes:            v.ReconsumeTimes(),
		PreparedTransactionOffset: v.PreparedTransactionOffset(),
		BodyCRC:                   v.BodyCRC(),
	}
	if v.bodyLen > 0 {
		e.Body = append([]byte(nil), v.Body()...)
	}
	return e, nil
}

// readHost decodes address bytes (4 or 16) followed by an int32 port. The
// caller has checked that the port fits in 16 bits.
func readHost(b []byte) netip.AddrPort {
	n := len(b) - 4
	port := uint16(be.Uint32(b[n:]))
	if n == 4 {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[:4])), port)
	}
	return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[:16])), port)
}
