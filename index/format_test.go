package index

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/ledgermq/ledgermq/message"
)

func TestHeaderEncodeDecode(t *testing.T) {
	raw := []byte{
		0x00, 0x00, 0x01, 0x8c, 0x00, 0x00, 0x00, 0x01, // begin ts 0x0000018c00000001
		0x00, 0x00, 0x01, 0x8c, 0x00, 0x00, 0x10, 0x00, // end ts
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x06, // begin phy 518
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, // end phy 1<<32
		0x00, 0x00, 0x00, 0x03, // slots in use
		0x00, 0x00, 0x00, 0x05, // index count
	}
	want := Header{
		BeginTimestamp: 0x0000018c00000001,
		EndTimestamp:   0x0000018c00001000,
		BeginPhyOffset: 518,
		EndPhyOffset:   1 << 32,
		HashSlotCount:  3,
		IndexCount:     5,
	}
	got, err := DecodeHeader(raw, 8, 16)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("decode: got %+v, want %+v", got, want)
	}
	buf := make([]byte, HeaderSize)
	EncodeHeader(buf, want)
	if !bytes.Equal(buf, raw) {
		t.Fatalf("encode: got % x\nwant % x", buf, raw)
	}
	// Trailing bytes (the slots) are not part of the header.
	if _, err := DecodeHeader(append(raw, 1, 2, 3), 8, 16); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeHeaderRejects(t *testing.T) {
	ok := Header{BeginTimestamp: 10, EndTimestamp: 20, BeginPhyOffset: 5, EndPhyOffset: 9, HashSlotCount: 2, IndexCount: 3}
	cases := []struct {
		name string
		mod  func(h *Header)
		n    int // bytes given; 0 = HeaderSize
		bad  bool
	}{
		{"valid", func(*Header) {}, 0, false},
		{"short", func(*Header) {}, HeaderSize - 1, true},
		{"empty input", func(*Header) {}, -1, true},
		{"negative index count", func(h *Header) { h.IndexCount = -1 }, 0, true},
		{"negative slot count", func(h *Header) { h.HashSlotCount = -7 }, 0, true},
		{"index count maxEntries+1", func(h *Header) { h.IndexCount = 17 }, 0, false},
		{"index count too large", func(h *Header) { h.IndexCount = 18 }, 0, true},
		{"slot count = slotNum", func(h *Header) { h.HashSlotCount = 8 }, 0, false},
		{"slot count too large", func(h *Header) { h.HashSlotCount = 9 }, 0, true},
		{"timestamps inverted", func(h *Header) { h.BeginTimestamp = 21 }, 0, true},
		{"offsets inverted", func(h *Header) { h.BeginPhyOffset = 10 }, 0, true},
		{"inverted but empty", func(h *Header) { h.BeginTimestamp, h.IndexCount, h.HashSlotCount = 99, 1, 0 }, 0, false},
		{"all zero", func(h *Header) { *h = Header{} }, 0, false},
		{"min int32 count", func(h *Header) { h.IndexCount = math.MinInt32 }, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := ok
			tc.mod(&h)
			b := make([]byte, HeaderSize)
			EncodeHeader(b, h)
			switch {
			case tc.n > 0:
				b = b[:tc.n]
			case tc.n < 0:
				b = nil
			}
			got, err := DecodeHeader(b, 8, 16)
			if tc.bad {
				if !errors.Is(err, ErrBadHeader) {
					t.Fatalf("got %v, want ErrBadHeader", err)
				}
				return
			}
			if err != nil || got != h {
				t.Fatalf("got %+v, %v; want %+v", got, err, h)
			}
		})
	}
}

func TestKeyHashVectors(t *testing.T) {
	cases := []struct {
		in   string
		want int32
	}{
		{"TagA", 2598919},
		{"hello", 99162322},
		{"", 0},
		{"😀", 1772899}, // U+1F600 as the surrogate pair D83D DE00
		{"polygenelubricants", math.MinInt32},
		{"TopicTest#KEY1", -1656969516},
		{"\xff", 0xfffd}, // an invalid byte counts as U+FFFD
	}
	for _, tc := range cases {
		if got := message.JavaStringHash(tc.in); got != tc.want {
			t.Errorf("JavaStringHash(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestKeyHashAndSlot(t *testing.T) {
	g := geometry{slotNum: 7, maxEntries: 10}
	cases := []struct {
		key      string
		wantHash int32
	}{
		{"polygenelubricants", 0}, // |MinInt32| does not fit: treated as 0
		{"TopicTest#KEY1", 1656969516},
		{"hello", 99162322},
	}
	for _, tc := range cases {
		h := keyHash(tc.key)
		if h != tc.wantHash {
			t.Errorf("keyHash(%q) = %d, want %d", tc.key, h, tc.wantHash)
		}
		if s := g.slotOf(h); s < 0 || s >= g.slotNum {
			t.Errorf("slot of %q = %d, out of range", tc.key, s)
		}
	}
}

func TestTimeDiffAndWindow(t *testing.T) {
	cases := []struct {
		begin, ts int64
		want      int32
	}{
		{1000, 1000, 0},
		{1000, 1999, 0},
		{1000, 2000, 1},
		{1000, 500, 0}, // before begin: clamped
		{math.MinInt64, math.MaxInt64, math.MaxInt32},
		{0, int64(math.MaxInt32)*1000 + 5000, math.MaxInt32},
	}
	for _, tc := range cases {
		if got := timeDiff(tc.begin, tc.ts); got != tc.want {
			t.Errorf("timeDiff(%d, %d) = %d, want %d", tc.begin, tc.ts, got, tc.want)
		}
	}
	h := Header{BeginTimestamp: 10_000, EndTimestamp: 12_500}
	for _, tc := range []struct {
		diff   int32
		lo, hi int64
	}{
		{0, 10_000, 10_999},
		{2, 12_000, 12_500}, // capped by EndTimestamp
		{-5, 10_000, 10_999},
		{9, 19_000, 19_000}, // inconsistent data: never lo > hi
	} {
		lo, hi := entryWindow(h, tc.diff)
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("entryWindow(diff %d) = [%d, %d], want [%d, %d]", tc.diff, lo, hi, tc.lo, tc.hi)
		}
	}
	lo, hi := entryWindow(Header{BeginTimestamp: math.MaxInt64 - 10, EndTimestamp: math.MaxInt64}, math.MaxInt32)
	if lo != math.MaxInt64 || hi != math.MaxInt64 {
		t.Errorf("saturation: [%d, %d]", lo, hi)
	}
}

func TestFileNames(t *testing.T) {
	// 2024-01-02T03:04:05.678Z
	const ms = 1704164645678
	if got := stampOf(ms); got != "20240102030405678" {
		t.Fatalf("stampOf = %s", got)
	}
	if got := stampOf(-5); got != "19700101000000000" {
		t.Fatalf("stampOf(negative) = %s", got)
	}
	if got := stampOf(math.MaxInt64); got != "99991231235959999" {
		t.Fatalf("stampOf(max) = %s", got)
	}
	cases := []struct {
		in  string
		ok  bool
		seq int
	}{
		{"20240102030405678", true, 0},
		{"20240102030405678_1", true, 1},
		{"20240102030405678_12", true, 12},
		{"20240102030405678_0", false, 0},
		{"20240102030405678_01", false, 0},
		{"20240102030405678_", false, 0},
		{"20240102030405678x", false, 0},
		{"2024010203040567", false, 0},
		{"2024010203040567a", false, 0},
		{"20240102030405678_-1", false, 0},
		{"20240102030405678_99999999999", false, 0},
		{"LOCK", false, 0},
	}
	for _, tc := range cases {
		n, ok := parseFileName(tc.in)
		if ok != tc.ok || (ok && (n.seq != tc.seq || n.String() != tc.in)) {
			t.Errorf("parseFileName(%q) = %+v, %v", tc.in, n, ok)
		}
	}
	a, _ := parseFileName("20240102030405678_2")
	b, _ := parseFileName("20240102030405678_10")
	if !a.less(b) || b.less(a) {
		t.Fatal("suffixes must order numerically")
	}
}

func TestConfigValidation(t *testing.T) {
	dir := t.TempDir()
	cases := []Config{
		{},
		{Dir: dir, SlotNum: -1},
		{Dir: dir, MaxEntries: 1},
		{Dir: dir, MaxEntries: math.MaxInt32 + 1},
		{Dir: dir, MaxFiles: -2},
	}
	for _, cfg := range cases {
		if _, err := Open(cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("Open(%+v) = %v, want ErrBadConfig", cfg, err)
		}
	}
	got, err := Config{Dir: dir}.withDefaults()
	if err != nil || got.SlotNum != DefaultSlotNum || got.MaxEntries != DefaultMaxEntries || got.MaxFiles != DefaultMaxFiles || got.Logger == nil {
		t.Fatalf("defaults: %+v, %v", got, err)
	}
	if g := got.geometry(); g.fileSize() != 420_000_040 {
		t.Fatalf("default file size %d", g.fileSize())
	}
}
