package message

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"net/netip"
	"strings"
	"testing"
)

// layout builds an expected record by hand, field by field at explicit
// offsets, independently of the encoder.
type layout struct {
	t testing.TB
	b []byte
}

func newLayout(t testing.TB, size int) *layout {
	t.Helper()
	return &layout{t: t, b: make([]byte, size)}
}

func (l *layout) u8(off int, v uint8) { l.b[off] = v }
func (l *layout) u16(off int, v uint16) {
	binary.BigEndian.PutUint16(l.b[off:], v)
}
func (l *layout) u32(off int, v uint32) {
	binary.BigEndian.PutUint32(l.b[off:], v)
}
func (l *layout) u64(off int, v uint64) {
	binary.BigEndian.PutUint64(l.b[off:], v)
}
func (l *layout) raw(off int, v []byte) { copy(l.b[off:], v) }
func (l *layout) str(off int, v string) { copy(l.b[off:], v) }

// unhexSpaced decodes hex with spaces, as the reference document writes it.
func unhexSpaced(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

// sampleExt returns a representative record with IPv4 hosts.
func sampleExt() *Ext {
	return &Ext{
		Message: Message{
			Topic: "TestTopic",
			Flag:  3,
			Body:  []byte("hello, ledgermq"),
			Properties: map[string]string{
				PropertyTags:    "TagA",
				PropertyKeys:    "k1 k2",
				PropertyUniqKey: "C00002024A2200000000941699480001",
			},
		},
		QueueID:                   2,
		QueueOffset:               17,
		PhysicalOffset:            4096,
		BornTimestamp:             1795975709351,
		BornHost:                  netip.MustParseAddrPort("192.0.2.2:36304"),
		StoreTimestamp:            1795975709352,
		StoreHost:                 netip.MustParseAddrPort("127.0.0.1:10911"),
		ReconsumeTimes:            1,
		PreparedTransactionOffset: 0,
	}
}

// extDiff reports the first field in which two Exts differ, or "".
// Body nil and empty compare equal; so do nil and empty Properties.
func extDiff(a, b *Ext) string {
	switch {
	case a.Topic != b.Topic:
		return "Topic"
	case a.Flag != b.Flag:
		return "Flag"
	case !bytes.Equal(a.Body, b.Body):
		return "Body"
	case !maps.Equal(a.Properties, b.Properties):
		return "Properties"
	case a.StoreSize != b.StoreSize:
		return "StoreSize"
	case a.QueueID != b.QueueID:
		return "QueueID"
	case a.QueueOffset != b.QueueOffset:
		return "QueueOffset"
	case a.PhysicalOffset != b.PhysicalOffset:
		return "PhysicalOffset"
	case a.SysFlag != b.SysFlag:
		return "SysFlag"
	case a.BornTimestamp != b.BornTimestamp:
		return "BornTimestamp"
	case a.BornHost != b.BornHost:
		return "BornHost"
	case a.StoreTimestamp != b.StoreTimestamp:
		return "StoreTimestamp"
	case a.StoreHost != b.StoreHost:
		return "StoreHost"
	case a.ReconsumeTimes != b.ReconsumeTimes:
		return "ReconsumeTimes"
	case a.PreparedTransactionOffset != b.PreparedTransactionOffset:
		return "PreparedTransactionOffset"
	case a.BodyCRC != b.BodyCRC:
		return "BodyCRC"
	}
	return ""
}

func mustAppend(t testing.TB, e *Ext) []byte {
	t.Helper()
	b, err := AppendRecord(nil, e)
	if err != nil {
		t.Fatalf("AppendRecord: %v", err)
	}
	return b
}
