package message

import (
	"bytes"
	"errors"
	"maps"
	"net/netip"
	"strings"
	"testing"
)

// decodeErrors are the only errors a decoder may return.
var decodeErrors = []error{ErrTruncated, ErrBadMagic, ErrBadSize, ErrBadProperties, ErrBodyCRC, ErrInvalidHost}

func isDecodeError(err error) bool {
	for _, s := range decodeErrors {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func FuzzDecodeRecord(f *testing.F) {
	add := func(e *Ext) {
		b, err := AppendRecord(nil, e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	add(sampleExt())
	add(capturedExt())
	e6 := sampleExt()
	e6.BornHost = netip.MustParseAddrPort("[2001:db8::1]:1")
	e6.StoreHost = netip.MustParseAddrPort("[::ffff:10.0.0.1]:2")
	add(e6)
	add(&Ext{Message: Message{Topic: "T"}, BornHost: e6.BornHost, StoreHost: netip.MustParseAddrPort("1.2.3.4:5")})
	// Non-canonical properties (unsorted, duplicated) in an otherwise valid record.
	unsorted := sampleExt()
	props := []byte("B\x012\x02A\x011\x02A\x013\x02")
	buf := make([]byte, RecordSize(unsorted, len(props)))
	if err := EncodeRecordInto(buf, unsorted, props); err != nil {
		f.Fatal(err)
	}
	f.Add(buf)
	f.Add(unhexSpaced(f, capturedHeader))
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 8, 0xCB, 0xD4, 0x31, 0x94})

	f.Fuzz(func(t *testing.T, b []byte) {
		e, n, err := DecodeRecord(b)
		v, verr := ParseView(b)
		if err != nil {
			if !isDecodeError(err) {
				t.Fatalf("unexpected error class: %v", err)
			}
			if e != nil || n != 0 {
				t.Fatalf("record returned with error %v", err)
			}
			// ParseView fails the same way, except that it skips the CRC.
			if errors.Is(err, ErrBodyCRC) {
				if verr != nil {
					t.Fatalf("ParseView: %v, DecodeRecord: %v", verr, err)
				}
			} else if verr == nil || verr.Error() != err.Error() {
				t.Fatalf("ParseView: %v, DecodeRecord: %v", verr, err)
			}
			return
		}
		if verr != nil || v.Size() != n {
			t.Fatalf("ParseView disagrees: %v, size %d vs %d", verr, v.Size(), n)
		}
		if n < MinRecordSize || n > len(b) || int(e.StoreSize) != n {
			t.Fatalf("consumed %d of %d, StoreSize %d", n, len(b), e.StoreSize)
		}
		// Re-encode: the result must decode to the same Ext, and be
		// byte-identical when the stored properties were canonical.
		sysFlag := e.SysFlag
		re, err := AppendRecord(nil, e)
		if err != nil {
			t.Fatalf("re-encode of a decoded record: %v", err)
		}
		if e.SysFlag != sysFlag {
			t.Fatalf("re-encode changed SysFlag %#x -> %#x", sysFlag, e.SysFlag)
		}
		e2, n2, err := DecodeRecord(re)
		if err != nil || n2 != len(re) {
			t.Fatalf("decode of re-encoded record: %v", err)
		}
		if d := extDiff(e, e2); d != "" {
			t.Fatalf("decode/encode/decode changed %s", d)
		}
		if canonical := bytes.Equal(v.PropertiesBytes(), EncodeProperties(e.Properties)); canonical {
			if !bytes.Equal(re, b[:n]) {
				t.Fatalf("canonical record re-encoded differently:\n in %x\nout %x", b[:n], re)
			}
		} else if len(re) > n {
			t.Fatalf("canonical form is longer (%d) than the input (%d)", len(re), n)
		}
	})
}

func FuzzDecodeProperties(f *testing.F) {
	for _, s := range []string{
		"",
		"TAGS\x01TagA\x02",
		"TAGS\x01TagA\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01C00002024A2200000000941699480001\x02",
		"A\x01\x02",
		"A\x011\x02A\x012\x02",
		"abc",
		"\x02",
		"\x01\x02",
		"A\x011\x012\x02",
		"A\x011",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeProperties(b)
		cerr := CheckEncodedProperties(b)
		if err != nil {
			if !errors.Is(err, ErrBadProperties) || m != nil {
				t.Fatalf("err = %v, map %v", err, m)
			}
			if cerr == nil || cerr.Error() != err.Error() {
				t.Fatalf("CheckEncodedProperties = %v, DecodeProperties = %v", cerr, err)
			}
			return
		}
		if cerr != nil {
			t.Fatalf("CheckEncodedProperties = %v on decodable input", cerr)
		}
		if m == nil {
			t.Fatal("nil map without error")
		}
		if err := ValidateProperties(m); err != nil {
			t.Fatalf("decoded map does not validate: %v", err)
		}
		for k, want := range m {
			if got, ok := FindProperty(b, k); !ok || string(got) != want {
				t.Fatalf("FindProperty(%q) = %q, %v; want %q", k, got, ok, want)
			}
		}
		enc := EncodeProperties(m)
		if len(enc) != PropertiesLen(m) || len(enc) > len(b) {
			t.Fatalf("encoded %d bytes, PropertiesLen %d, input %d", len(enc), PropertiesLen(m), len(b))
		}
		m2, err := DecodeProperties(enc)
		if err != nil || !maps.Equal(m, m2) {
			t.Fatalf("round trip: %v, %v vs %v", err, m, m2)
		}
		if !bytes.Equal(EncodeProperties(m2), enc) {
			t.Fatal("encoding is not stable")
		}
	})
}

func FuzzParseOffsetMsgID(f *testing.F) {
	for _, s := range []string{
		"7F00000100002A9F0000000000000206",
		"7f00000100002a9f0000000000000206",
		"20010DB800000000000000000000000200002A9F0000000000000206",
		"00000000000000000000FFFF7F000001000000010000000000000001",
		"C00002024A2200000000941699480001",
		"",
		"7F00000100012A9F0000000000000206",
		"7F00000100002A9F8000000000000206",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		host, off, err := ParseOffsetMsgID(id)
		if err != nil {
			if !errors.Is(err, ErrBadMsgID) {
				t.Fatalf("err = %v", err)
			}
			return
		}
		if off < 0 || !host.IsValid() {
			t.Fatalf("parsed %v %d", host, off)
		}
		out := OffsetMsgID(host, off)
		if out != strings.ToUpper(id) {
			t.Fatalf("OffsetMsgID(ParseOffsetMsgID(%q)) = %q", id, out)
		}
		host2, off2, err := ParseOffsetMsgID(out)
		if err != nil || host2 != host || off2 != off {
			t.Fatalf("second parse: %v %d %v", host2, off2, err)
		}
	})
}
