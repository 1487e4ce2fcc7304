package message

import (
	"bytes"
	"errors"
	"hash/crc32"
	"net/netip"
	"testing"
)

// capturedHeader is the record captured from the real Go client in
// a capture of its traffic (queue 0, body "fail-me", topic "TestTopic", 52 bytes of
// properties), up to and including the properties length. That capture came
// from a test broker that stored the CRC unmasked (0x8E6E7257); a record
// written the Java way (and by this package) stores CRC & 0x7FFFFFFF.
const capturedHeader = "0000009f daa320a7 8e6e7257 00000000 00000000 0000000000000000 0000000000000206 " +
	"00000000 000001a2287e82a8 7f000001 00008dd0 000001a2287e82a9 7f000001 00002a9f " +
	"00000000 0000000000000000 00000007 6661696c2d6d65 09 54657374546f706963 0034"

// capturedExt is the Ext the captured record describes, with 52 bytes of
// properties of our choosing (the capture elides them).
func capturedExt() *Ext {
	return &Ext{
		Message: Message{
			Topic: "TestTopic",
			Body:  []byte("fail-me"),
			Properties: map[string]string{
				"TAGS":     "TagA",
				"UNIQ_KEY": "C00002024A2200000000941699480001",
			},
		},
		PhysicalOffset: 0x206,
		BornTimestamp:  0x1a2287e82a8,
		BornHost:       netip.MustParseAddrPort("127.0.0.1:36304"),
		StoreTimestamp: 0x1a2287e82a9,
		StoreHost:      netip.MustParseAddrPort("127.0.0.1:10911"),
	}
}

func TestRecordIPv4HandLayout(t *testing.T) {
	const (
		n    = 7  // "fail-me"
		tl   = 9  // "TestTopic"
		p    = 52 // properties below
		size = 91 + n + tl + p
	)
	props := "TAGS\x01TagA\x02UNIQ_KEY\x01C00002024A2200000000941699480001\x02"
	if len(props) != p {
		t.Fatalf("test properties are %d bytes, want %d", len(props), p)
	}
	crc := crc32.ChecksumIEEE([]byte("fail-me")) & 0x7FFFFFFF
	if crc != 0x0e6e7257 {
		t.Fatalf("masked CRC of fail-me = %08x", crc)
	}

	l := newLayout(t, size)
	l.u32(0, size)                  // TOTALSIZE
	l.u32(4, 0xDAA320A7)            // MAGICCODE
	l.u32(8, crc)                   // BODYCRC
	l.u32(12, 0)                    // QUEUEID
	l.u32(16, 0)                    // FLAG
	l.u64(20, 0)                    // QUEUEOFFSET
	l.u64(28, 0x206)                // PHYSICALOFFSET
	l.u32(36, 0)                    // SYSFLAG
	l.u64(40, 0x1a2287e82a8)        // BORNTIMESTAMP
	l.raw(48, []byte{127, 0, 0, 1}) // BORNHOST ip
	l.u32(52, 36304)                //          port
	l.u64(56, 0x1a2287e82a9)        // STORETIMESTAMP
	l.raw(64, []byte{127, 0, 0, 1}) // STOREHOST ip
	l.u32(68, 10911)                //           port
	l.u32(72, 0)                    // RECONSUMETIMES
	l.u64(76, 0)                    // PREPARED TRANSACTION OFFSET
	l.u32(84, n)                    // BODYLEN
	l.str(88, "fail-me")            // BODY
	l.u8(88+n, tl)                  // TOPICLEN
	l.str(89+n, "TestTopic")        // TOPIC
	l.u16(89+n+tl, p)               // PROPLEN
	l.str(91+n+tl, props)           // PROPERTIES
	want := l.b

	// The hand layout agrees with the capture except for the CRC's top bit.
	captured := unhexSpaced(t, capturedHeader)
	if len(captured) != size-p {
		t.Fatalf("captured header is %d bytes, want %d", len(captured), size-p)
	}
	fixed := append([]byte(nil), captured...)
	fixed[8] &= 0x7F
	if !bytes.Equal(fixed, want[:size-p]) {
		t.Fatalf("hand layout differs from the capture:\n got %x\nwant %x", want[:size-p], fixed)
	}

	e := capturedExt()
	got := mustAppend(t, e)
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendRecord:\n got %x\nwant %x", got, want)
	}
	if e.StoreSize != size || e.BodyCRC != crc || e.SysFlag != 0 {
		t.Fatalf("AppendRecord set StoreSize=%d BodyCRC=%08x SysFlag=%x", e.StoreSize, e.BodyCRC, e.SysFlag)
	}
	if got := RecordSize(e, p); got != size {
		t.Fatalf("RecordSize = %d, want %d", got, size)
	}

	into := make([]byte, size)
	if err := EncodeRecordInto(into, capturedExt(), []byte(props)); err != nil {
		t.Fatalf("EncodeRecordInto: %v", err)
	}
	if !bytes.Equal(into, want) {
		t.Fatalf("EncodeRecordInto:\n got %x\nwant %x", into, want)
	}

	dec, used, err := DecodeRecord(want)
	if err != nil {
		t.Fatalf("DecodeRecord: %v", err)
	}
	if used != size {
		t.Fatalf("DecodeRecord consumed %d, want %d", used, size)
	}
	if d := extDiff(dec, e); d != "" {
		t.Fatalf("decoded record differs in %s: %+v", d, dec)
	}
	if id := dec.OffsetMsgID(); id != "7F00000100002A9F0000000000000206" {
		t.Fatalf("OffsetMsgID = %s", id)
	}
	if id := dec.MsgID(); id != "C00002024A2200000000941699480001" {
		t.Fatalf("MsgID = %s", id)
	}

	// The unmasked CRC of the capture is rejected, as Java's check would.
	bad := append([]byte(nil), want...)
	bad[8] |= 0x80
	if _, _, err := DecodeRecord(bad); !errors.Is(err, ErrBodyCRC) {
		t.Fatalf("unmasked CRC: err = %v, want ErrBodyCRC", err)
	}
}

func TestRecordIPv6HandLayout(t *testing.T) {
	const (
		n    = 3 // "abc"
		tl   = 1 // "T"
		p    = 8 // "K\x01v1 v2\x02"
		size = 91 + 12 + 12 + n + tl + p
	)
	born := netip.MustParseAddrPort("[2001:db8::1]:36304")
	store := netip.MustParseAddrPort("[2001:db8::2]:10911")
	b16, s16 := born.Addr().As16(), store.Addr().As16()
	crc := crc32.ChecksumIEEE([]byte("abc")) & 0x7FFFFFFF

	l := newLayout(t, size)
	l.u32(0, size)                    // TOTALSIZE
	l.u32(4, 0xDAA320A7)              // MAGICCODE
	l.u32(8, crc)                     // BODYCRC
	l.u32(12, 5)                      // QUEUEID
	l.u32(16, 0x7FFFFFFF)             // FLAG
	l.u64(20, 1<<40)                  // QUEUEOFFSET
	l.u64(28, 1<<50)                  // PHYSICALOFFSET
	l.u32(36, 0x10|0x20|0x4)          // SYSFLAG: both hosts IPv6, half message
	l.u64(40, 1)                      // BORNTIMESTAMP
	l.raw(48, b16[:])                 // BORNHOST ip (16)
	l.u32(64, 36304)                  //          port
	l.u64(68, 2)                      // STORETIMESTAMP (56 + 12)
	l.raw(76, s16[:])                 // STOREHOST ip (16)  (64 + 12)
	l.u32(92, 10911)                  //           port
	l.u32(96, 16)                     // RECONSUMETIMES (72 + 24)
	l.u64(100, 0xFFFFFFFFFFFFFFFF)    // PREPARED TRANSACTION OFFSET = -1
	l.u32(108, n)                     // BODYLEN (84 + 24)
	l.str(112, "abc")                 // BODY
	l.u8(112+n, tl)                   // TOPICLEN
	l.str(113+n, "T")                 // TOPIC
	l.u16(113+n+tl, p)                // PROPLEN
	l.str(115+n+tl, "K\x01v1 v2\x02") // PROPERTIES
	want := l.b

	e := &Ext{
		Message: Message{
			Topic:      "T",
			Flag:       0x7FFFFFFF,
			Body:       []byte("abc"),
			Properties: map[string]string{"K": "v1 v2"},
		},
		QueueID:                   5,
		QueueOffset:               1 << 40,
		PhysicalOffset:            1 << 50,
		SysFlag:                   SysFlagTransactionPrepared, // host bits set by the encoder
		BornTimestamp:             1,
		BornHost:                  born,
		StoreTimestamp:            2,
		StoreHost:                 store,
		ReconsumeTimes:            16,
		PreparedTransactionOffset: -1,
	}
	got := mustAppend(t, e)
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendRecord:\n got %x\nwant %x", got, want)
	}
	if e.SysFlag != 0x34 {
		t.Fatalf("SysFlag after encode = %#x, want 0x34", e.SysFlag)
	}
	dec, used, err := DecodeRecord(want)
	if err != nil || used != size {
		t.Fatalf("DecodeRecord: used %d err %v", used, err)
	}
	if d := extDiff(dec, e); d != "" {
		t.Fatalf("decoded record differs in %s", d)
	}
	wantID := "20010DB800000000000000000000000200002A9F0004000000000000"
	if id := dec.OffsetMsgID(); id != wantID {
		t.Fatalf("OffsetMsgID = %s, want %s", id, wantID)
	}
}

func TestEncoderClearsStaleHostBits(t *testing.T) {
	e := sampleExt()
	e.SysFlag = SysFlagBornHostV6 | SysFlagStoreHostV6 | SysFlagCompressed
	b := mustAppend(t, e)
	if e.SysFlag != SysFlagCompressed {
		t.Fatalf("SysFlag = %#x, want %#x", e.SysFlag, SysFlagCompressed)
	}
	if len(b) != RecordSize(e, PropertiesLen(e.Properties)) || len(b) != 91+len(e.Body)+len(e.Topic)+PropertiesLen(e.Properties) {
		t.Fatalf("record of %d bytes", len(b))
	}
	// Mixed families: IPv4 born, IPv6 store (an IPv4-mapped address is IPv6).
	e.StoreHost = netip.AddrPortFrom(netip.MustParseAddr("::ffff:127.0.0.1"), 10911)
	b = mustAppend(t, e)
	if e.SysFlag != SysFlagCompressed|SysFlagStoreHostV6 {
		t.Fatalf("SysFlag = %#x", e.SysFlag)
	}
	dec, _, err := DecodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if dec.StoreHost != e.StoreHost || dec.BornHost != e.BornHost {
		t.Fatalf("hosts %v %v", dec.BornHost, dec.StoreHost)
	}
}

func TestAppendRecordKeepsPrefix(t *testing.T) {
	prefix := []byte("prefix")
	e := sampleExt()
	out, err := AppendRecord(prefix, e)
	if err != nil {
		t.Fatal(err)
	}
	if string(out[:6]) != "prefix" {
		t.Fatalf("prefix clobbered: %q", out[:6])
	}
	if _, n, err := DecodeRecord(out[6:]); err != nil || n != len(out)-6 {
		t.Fatalf("n=%d err=%v", n, err)
	}
}

func TestEncodeErrors(t *testing.T) {
	long := string(bytes.Repeat([]byte("t"), MaxTopicLength+1))
	bigProps := map[string]string{"K": string(bytes.Repeat([]byte("v"), MaxPropertiesLength))}
	tests := []struct {
		name   string
		mutate func(e *Ext)
		want   error
	}{
		{"empty topic", func(e *Ext) { e.Topic = "" }, ErrEmptyTopic},
		{"topic too long", func(e *Ext) { e.Topic = long }, ErrTopicTooLong},
		{"properties too long", func(e *Ext) { e.Properties = bigProps }, ErrPropertiesTooLong},
		{"zero born host", func(e *Ext) { e.BornHost = netip.AddrPort{} }, ErrInvalidHost},
		{"zero store host", func(e *Ext) { e.StoreHost = netip.AddrPort{} }, ErrInvalidHost},
		{"empty property name", func(e *Ext) { e.SetProperty("", "x") }, ErrBadProperties},
		{"separator in value", func(e *Ext) { e.SetProperty("A", "x\x02y") }, ErrBadProperties},
		{"separator in name", func(e *Ext) { e.SetProperty("A\x01", "x") }, ErrBadProperties},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := sampleExt()
			tc.mutate(e)
			dst := []byte("keep")
			out, err := AppendRecord(dst, e)
			if !errors.Is(err, tc.want) {
				t.Fatalf("AppendRecord err = %v, want %v", err, tc.want)
			}
			if string(out) != "keep" {
				t.Fatalf("dst changed on error: %q", out)
			}
			if errors.Is(tc.want, ErrBadProperties) {
				return // EncodeRecordInto takes encoded properties; covered below
			}
			props := EncodeProperties(e.Properties)
			buf := make([]byte, RecordSize(e, len(props)))
			if err := EncodeRecordInto(buf, e, props); !errors.Is(err, tc.want) {
				t.Fatalf("EncodeRecordInto err = %v, want %v", err, tc.want)
			}
		})
	}
	// Topic of exactly MaxTopicLength bytes is fine.
	e := sampleExt()
	e.Topic = long[:MaxTopicLength]
	mustAppend(t, e)

	// EncodeRecordInto: wrong destination size and malformed properties.
	e = sampleExt()
	props := EncodeProperties(e.Properties)
	size := RecordSize(e, len(props))
	for _, n := range []int{0, size - 1, size + 1} {
		if err := EncodeRecordInto(make([]byte, n), e, props); !errors.Is(err, ErrBadSize) {
			t.Fatalf("dst of %d bytes: err = %v, want ErrBadSize", n, err)
		}
	}
	bad := []byte("A\x01b")
	if err := EncodeRecordInto(make([]byte, RecordSize(e, len(bad))), e, bad); !errors.Is(err, ErrBadProperties) {
		t.Fatalf("bad props: err = %v", err)
	}
}

func TestDecodeRecordBadInput(t *testing.T) {
	good := mustAppend(t, sampleExt())
	v, err := ParseView(good)
	if err != nil {
		t.Fatal(err)
	}
	topicLenOff := v.bodyOff + v.bodyLen
	propsLenOff := v.topicOff + v.topicLen
	bodyLenOff := v.bodyOff - 4

	mod := func(f func(b []byte) []byte) []byte {
		return f(append([]byte(nil), good...))
	}
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"shorter than header", good[:7], ErrTruncated},
		{"wrong magic", mod(func(b []byte) []byte { b[4] ^= 0xFF; return b }), ErrBadMagic},
		{"blank magic", mod(func(b []byte) []byte { be.PutUint32(b[4:], BlankMagic); return b }), ErrBadMagic},
		{"length past the end of the buffer", good[:len(good)-1], ErrTruncated},
		{"TOTALSIZE past the end", mod(func(b []byte) []byte { be.PutUint32(b, uint32(len(b)+1)); return b }), ErrTruncated},
		{"TOTALSIZE smaller than header", mod(func(b []byte) []byte { be.PutUint32(b, 90); return b }), ErrBadSize},
		{"TOTALSIZE negative", mod(func(b []byte) []byte { be.PutUint32(b, 0xFFFFFFF0); return b }), ErrBadSize},
		{"TOTALSIZE smaller than fields", mod(func(b []byte) []byte { be.PutUint32(b, uint32(len(b)-1)); return b }), ErrBadSize},
		{"TOTALSIZE larger than fields", mod(func(b []byte) []byte {
			b = append(b, 0)
			be.PutUint32(b, uint32(len(b)))
			return b
		}), ErrBadSize},
		{"IPv6 bit on an IPv4 record", mod(func(b []byte) []byte { b[PosSysFlag+3] |= 0x10; return b }), ErrBadSize},
		{"body length negative", mod(func(b []byte) []byte { be.PutUint32(b[bodyLenOff:], 0x80000000); return b }), ErrBadSize},
		{"body length past end", mod(func(b []byte) []byte { be.PutUint32(b[bodyLenOff:], uint32(len(b))); return b }), ErrBadSize},
		{"topic length past end", mod(func(b []byte) []byte { b[topicLenOff] = 127; return b }), ErrBadSize},
		{"topic length zero", mod(func(b []byte) []byte { b[topicLenOff] = 0; return b }), ErrBadSize},
		{"topic length over 127", mod(func(b []byte) []byte { b[topicLenOff] = 200; return b }), ErrBadSize},
		{"properties length past end", mod(func(b []byte) []byte { be.PutUint16(b[propsLenOff:], uint16(len(b))); return b }), ErrBadSize},
		{"properties length negative", mod(func(b []byte) []byte { be.PutUint16(b[propsLenOff:], 0xFFFF); return b }), ErrBadSize},
		{"properties without separators", mod(func(b []byte) []byte {
			for i := v.propsOff; i < len(b); i++ {
				b[i] = 'x'
			}
			return b
		}), ErrBadProperties},
		{"born port too large", mod(func(b []byte) []byte { be.PutUint32(b[PosBornHost+4:], 70000); return b }), ErrInvalidHost},
		{"store port negative", mod(func(b []byte) []byte { be.PutUint32(b[v.reconOff-4:], 0xFFFFFFFF); return b }), ErrInvalidHost},
		{"body CRC mismatch", mod(func(b []byte) []byte { b[v.bodyOff] ^= 1; return b }), ErrBodyCRC},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, n, err := DecodeRecord(tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if e != nil || n != 0 {
				t.Fatalf("got a record (%d bytes) with the error", n)
			}
			_, verr := ParseView(tc.in)
			if tc.want == ErrBodyCRC {
				if verr != nil {
					t.Fatalf("ParseView should skip the CRC, got %v", verr)
				}
				return
			}
			if !errors.Is(verr, tc.want) {
				t.Fatalf("ParseView err = %v, want %v", verr, tc.want)
			}
		})
	}
}

func TestDecodeRecordEmptyBodyAndProperties(t *testing.T) {
	e := &Ext{
		Message:   Message{Topic: "T"},
		BornHost:  netip.MustParseAddrPort("10.0.0.1:1"),
		StoreHost: netip.MustParseAddrPort("10.0.0.2:2"),
	}
	b := mustAppend(t, e)
	if len(b) != MinRecordSize+1 {
		t.Fatalf("minimal record is %d bytes", len(b))
	}
	dec, _, err := DecodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if dec.Body != nil || dec.Properties == nil || len(dec.Properties) != 0 {
		t.Fatalf("Body=%v Properties=%v", dec.Body, dec.Properties)
	}
	if dec.BodyCRC != 0 {
		t.Fatalf("CRC of empty body = %x", dec.BodyCRC)
	}
	if dec.MsgID() != dec.OffsetMsgID() {
		t.Fatalf("MsgID without UNIQ_KEY should be the offset id")
	}
}

func TestDecodeRecordDoesNotAlias(t *testing.T) {
	b := mustAppend(t, sampleExt())
	dec, _, err := DecodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 0
	}
	if string(dec.Body) != "hello, ledgermq" || dec.Topic != "TestTopic" || dec.Tags() != "TagA" {
		t.Fatalf("decoded record aliases its input: %q %q", dec.Body, dec.Topic)
	}
}

func TestDecodeRecords(t *testing.T) {
	var body []byte
	var want []*Ext
	for i := range 5 {
		e := sampleExt()
		e.QueueOffset = int64(i)
		e.Body = bytes.Repeat([]byte{byte(i)}, i*10)
		var err error
		body, err = AppendRecord(body, e)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, e)
	}
	got, err := DecodeRecords(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range got {
		if d := extDiff(got[i], want[i]); d != "" {
			t.Fatalf("record %d differs in %s", i, d)
		}
	}

	if recs, err := DecodeRecords(nil); err != nil || recs != nil {
		t.Fatalf("empty body: %v %v", recs, err)
	}

	// A torn last record: the first four come back with ErrTruncated.
	recs, err := DecodeRecords(body[:len(body)-1])
	if !errors.Is(err, ErrTruncated) || len(recs) != 4 {
		t.Fatalf("torn body: %d records, err %v", len(recs), err)
	}
}

func TestPeeks(t *testing.T) {
	b := mustAppend(t, sampleExt())
	size, err := PeekSize(b)
	if err != nil || int(size) != len(b) {
		t.Fatalf("PeekSize = %d, %v", size, err)
	}
	magic, err := PeekMagic(b)
	if err != nil || magic != MagicV1 {
		t.Fatalf("PeekMagic = %x, %v", magic, err)
	}
	if _, err := PeekSize(b[:3]); !errors.Is(err, ErrTruncated) {
		t.Fatalf("PeekSize short: %v", err)
	}
	if _, err := PeekMagic(b[:7]); !errors.Is(err, ErrTruncated) {
		t.Fatalf("PeekMagic short: %v", err)
	}

	blank := make([]byte, 100)
	if err := PutBlank(blank); err != nil {
		t.Fatal(err)
	}
	if s, _ := PeekSize(blank); s != 100 {
		t.Fatalf("blank size %d", s)
	}
	if m, _ := PeekMagic(blank); m != BlankMagic {
		t.Fatalf("blank magic %x", m)
	}
	if want := unhexSpaced(t, "00000064 cbd43194"); !bytes.Equal(blank[:8], want) {
		t.Fatalf("blank header %x", blank[:8])
	}
	if err := PutBlank(make([]byte, 7)); !errors.Is(err, ErrTruncated) {
		t.Fatalf("short blank: %v", err)
	}
}

func TestPatchOffsets(t *testing.T) {
	e := sampleExt()
	b := mustAppend(t, e)
	if err := PatchOffsets(b, 99, 1<<33); err != nil {
		t.Fatal(err)
	}
	dec, _, err := DecodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if dec.QueueOffset != 99 || dec.PhysicalOffset != 1<<33 {
		t.Fatalf("offsets %d %d", dec.QueueOffset, dec.PhysicalOffset)
	}
	if err := PatchOffsets(b[:35], 1, 1); !errors.Is(err, ErrTruncated) {
		t.Fatalf("short: %v", err)
	}
}
