package message

import (
	"net/netip"
	"strconv"
	"strings"
)

// Message is what a producer sends: a topic, a user flag, an opaque body and
// string properties. The zero value is an empty message with no properties.
//
// A Message is a plain value: it is not safe for concurrent mutation, but any
// number of goroutines may read one that nobody writes.
type Message struct {
	Topic      string
	Flag       int32
	Body       []byte
	Properties map[string]string

	// encoded is Properties' encoding when a caller recorded it
	// (SetEncodedProperties), and encodedN the number of properties
	// it holds.
	encoded  []byte
	encodedN int
}

// SetEncodedProperties records enc as EncodeProperties(m.Properties), made
// by the caller from bytes it already held (a send request's properties),
// so that EncodedProperties returns it instead of encoding the map again.
// The caller guarantees the equality. SetProperty and ClearProperty forget
// it, and so does EncodedProperties when the map's size changed; a caller
// that otherwise changes Properties must call SetEncodedProperties(nil).
func (m *Message) SetEncodedProperties(enc []byte) {
	m.encoded, m.encodedN = enc, len(m.Properties)
}

// EncodedProperties returns EncodeProperties(m.Properties) after
// ValidateProperties, or the encoding SetEncodedProperties recorded while
// it still applies. The result must not be modified.
func (m *Message) EncodedProperties() ([]byte, error) {
	if m.encoded != nil && m.encodedN == len(m.Properties) {
		return m.encoded, nil
	}
	if err := ValidateProperties(m.Properties); err != nil {
		return nil, err
	}
	return EncodeProperties(m.Properties), nil
}

// Property returns the value of the named property, or "" if it is absent.
func (m *Message) Property(name string) string { return m.Properties[name] }

// SetProperty sets a property, allocating the map if it is nil.
func (m *Message) SetProperty(name, value string) {
	if m.Properties == nil {
		m.Properties = make(map[string]string)
	}
	m.Properties[name] = value
	m.encoded = nil
}

// ClearProperty removes a property; it is a no-op if the property is absent.
func (m *Message) ClearProperty(name string) {
	delete(m.Properties, name)
	m.encoded = nil
}

// Tags returns the TAGS property (a single tag, the filtering key).
func (m *Message) Tags() string { return m.Properties[PropertyTags] }

// Keys returns the KEYS property split on spaces, with empty items dropped.
// It returns nil when there are no keys.
func (m *Message) Keys() []string { return SplitKeys(m.Properties[PropertyKeys]) }

// UniqKey returns the UNIQ_KEY property (the client-side message id).
func (m *Message) UniqKey() string { return m.Properties[PropertyUniqKey] }

// DelayLevel returns the DELAY property as an integer, or 0 if it is absent,
// not a decimal integer, or not positive. Clamping to the broker's level
// table is the caller's business.
func (m *Message) DelayLevel() int {
	v, ok := m.Properties[PropertyDelayLevel]
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// SplitKeys splits a KEYS property value on spaces, dropping empty items
// (so runs of spaces and leading or trailing spaces yield no empty keys).
func SplitKeys(keys string) []string {
	if keys == "" {
		return nil
	}
	var out []string
	for k := range strings.SplitSeq(keys, " ") {
		if k != "" {
			out = append(out, k)
		}
	}
	return out
}

// Ext is a message as stored in the commitlog and read back (Java
// MessageExt): the producer's Message plus everything the broker stamps.
//
// Like Message, an Ext is not safe for concurrent mutation; note that
// AppendRecord and EncodeRecordInto write StoreSize, BodyCRC and the host
// bits of SysFlag.
type Ext struct {
	Message
	StoreSize                 int32 // TOTALSIZE of the encoded record
	QueueID                   int32
	QueueOffset               int64 // logical offset in the consume queue
	PhysicalOffset            int64 // commitlog offset of the record
	SysFlag                   int32
	BornTimestamp             int64          // ms since the Unix epoch
	BornHost                  netip.AddrPort // IPv4 or IPv6 per SysFlagBornHostV6
	StoreTimestamp            int64          // ms since the Unix epoch
	StoreHost                 netip.AddrPort // IPv4 or IPv6 per SysFlagStoreHostV6
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
	BodyCRC                   uint32 // CRC32-IEEE(Body) & 0x7FFFFFFF
}

// OffsetMsgID returns the offset message id of the record: store host and
// physical offset, upper-case hex (see OffsetMsgID).
func (e *Ext) OffsetMsgID() string { return OffsetMsgID(e.StoreHost, e.PhysicalOffset) }

// MsgID returns the id a client shows for the message: the UNIQ_KEY property
// if present, else the offset message id.
func (e *Ext) MsgID() string {
	if k := e.Properties[PropertyUniqKey]; k != "" {
		return k
	}
	return e.OffsetMsgID()
}
