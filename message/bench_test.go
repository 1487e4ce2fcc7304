package message

import (
	"bytes"
	"net/netip"
	"testing"
)

func benchExt() *Ext {
	e := sampleExt()
	e.Body = bytes.Repeat([]byte("x"), 1024)
	return e
}

func BenchmarkAppendRecord(b *testing.B) {
	e := benchExt()
	buf := make([]byte, 0, 4096)
	b.SetBytes(int64(len(mustAppend(b, e))))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		buf, err = AppendRecord(buf[:0], e)
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeRecordInto(b *testing.B) {
	e := benchExt()
	props := EncodeProperties(e.Properties)
	buf := make([]byte, RecordSize(e, len(props)))
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if err := EncodeRecordInto(buf, e, props); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseView(b *testing.B) {
	rec := mustAppend(b, benchExt())
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	var sink int64
	for b.Loop() {
		v, err := ParseView(rec)
		if err != nil {
			b.Fatal(err)
		}
		sink += v.PhysicalOffset() + v.TagsHashCode()
	}
	_ = sink
}

func BenchmarkDecodeRecord(b *testing.B) {
	rec := mustAppend(b, benchExt())
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := DecodeRecord(rec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUniqIDNext(b *testing.B) {
	g := NewUniqIDGenerator(netip.MustParseAddr("10.0.0.1"), 1, nil)
	b.ReportAllocs()
	for b.Loop() {
		_ = g.Next()
	}
}

func BenchmarkOffsetMsgID(b *testing.B) {
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	b.ReportAllocs()
	for b.Loop() {
		_ = OffsetMsgID(host, 0x206)
	}
}
