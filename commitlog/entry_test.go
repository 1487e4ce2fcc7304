package commitlog

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
)

// entryBytes returns payload followed by its trailer.
func entryBytes(payload []byte) []byte {
	return binary.BigEndian.AppendUint32(append([]byte(nil), payload...), EntryCRC(payload))
}

func TestEntryCRCIsCastagnoli(t *testing.T) {
	// The CRC-32C check value of "123456789".
	if got := EntryCRC([]byte("123456789")); got != 0xE3069283 {
		t.Fatalf("EntryCRC = %#x, want 0xe3069283", got)
	}
}

func TestInspect(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	good := entryBytes(makeEntry(rng, 20))
	const segLen = 64
	seg := func(parts ...[]byte) []byte {
		b := make([]byte, 0, segLen)
		for _, p := range parts {
			b = append(b, p...)
		}
		return append(b, make([]byte, segLen-len(b))...)
	}
	flip := func(b []byte, i int) []byte {
		c := append([]byte(nil), b...)
		c[i] ^= 0x40
		return c
	}
	blank := func(n uint32) []byte {
		b := make([]byte, 8)
		binary.BigEndian.PutUint32(b, n)
		binary.BigEndian.PutUint32(b[4:], BlankMagic)
		return b
	}
	hdr := func(n uint32) []byte {
		b := make([]byte, 8)
		binary.BigEndian.PutUint32(b, n)
		binary.BigEndian.PutUint32(b[4:], testMagic)
		return b
	}
	tests := []struct {
		name     string
		b        []byte
		pos      int
		wantKind kind
		wantSize int
		wantWhy  error
	}{
		{"entry", seg(good), 0, kindEntry, 20, nil},
		{"second entry", seg(good, good), len(good), kindEntry, 20, nil},
		{"zeros", seg(), 0, kindZero, 0, errZeroLength},
		{"short tail", seg(), segLen - 7, kindEnd, 0, nil},
		{"segment end", seg(), segLen, kindEnd, 0, nil},
		{"blank", seg(good, blank(segLen-24)), 24, kindBlank, segLen - 24, nil},
		{"blank wrong length", seg(good, blank(12)), 24, kindBad, 0, errBadBlank},
		{"length below minimum", seg(hdr(7)), 0, kindBad, 0, errShortLength},
		{"negative length", seg(hdr(0x80000000)), 0, kindBad, 0, errShortLength},
		{"length past segment", seg(hdr(segLen - 3)), 0, kindBad, 0, errLongLength},
		{"flipped payload byte", seg(flip(good, 10)), 0, kindBad, 0, errChecksum},
		{"flipped trailer byte", seg(flip(good, 21)), 0, kindBad, 0, errChecksum},
		{"flipped length byte", seg(flip(good, 3)), 0, kindBad, 0, errLongLength},
		{"header cut by readable limit", seg(good)[:28], 24, kindBad, 0, errTruncatedHead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, size, why := inspect(tt.b, segLen, tt.pos)
			if k != tt.wantKind || size != tt.wantSize || why != tt.wantWhy {
				t.Fatalf("inspect = (%d, %d, %v), want (%d, %d, %v)", k, size, why, tt.wantKind, tt.wantSize, tt.wantWhy)
			}
			if why != nil && !errors.Is(why, ErrCorrupt) {
				t.Fatalf("%v does not wrap ErrCorrupt", why)
			}
		})
	}
}

func TestRangeCRCMatchesDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	b := make([]byte, 20000)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	for _, origin := range []int{0, 1, 511, 513, 4000} {
		pc := newPrefixCRC(b, origin)
		for range 300 {
			c := origin + rng.IntN(len(b)-origin)
			n := rng.IntN(len(b) - c + 1)
			if got, want := pc.rangeCRC(c, n), EntryCRC(b[c:c+n]); got != want {
				t.Fatalf("origin %d: rangeCRC(%d, %d) = %#x, want %#x", origin, c, n, got, want)
			}
		}
	}
}

func TestShiftCRCIsConcatenation(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 7, 255, 256, 65537, 1 << 20} {
		a := make([]byte, 33)
		bb := make([]byte, n)
		for i := range a {
			a[i] = byte(rng.Uint32())
		}
		for i := range bb {
			bb[i] = byte(rng.Uint32())
		}
		whole := EntryCRC(append(append([]byte(nil), a...), bb...))
		if got := shiftCRC(EntryCRC(a), n) ^ EntryCRC(bb); got != whole {
			t.Fatalf("n=%d: combined %#x, want %#x", n, got, whole)
		}
	}
}

func TestResync(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	e1 := entryBytes(makeEntry(rng, 100))
	e2 := entryBytes(makeEntry(rng, 3000)) // long enough for the CRC algebra
	e3 := entryBytes(makeEntry(rng, 40))
	const segLen = 8192
	layout := append(append(append([]byte(nil), e1...), e2...), e3...)
	b := append(layout, make([]byte, segLen-len(layout))...)

	tests := []struct {
		name string
		mut  func(b []byte)
		from int
		want int
	}{
		{"finds the next entry", func([]byte) {}, 1, len(e1)},
		{"finds an entry at from", func([]byte) {}, len(e1), len(e1)},
		{"skips a damaged long entry", func(b []byte) { b[len(e1)+500] ^= 1 }, 1, len(e1) + len(e2)},
		{"length damage does not hide the next entry", func(b []byte) { b[2] = 0x7f }, 1, len(e1)},
		{"nothing after the last entry", func([]byte) {}, len(layout) - len(e3) + 1, -1},
		{"blank marker", func(b []byte) {
			putBlank(b[len(layout):])
		}, len(layout) - len(e3) + 1, len(layout)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := append([]byte(nil), b...)
			tt.mut(c)
			if got := resync(c, segLen, tt.from); got != tt.want {
				t.Fatalf("resync = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestWalkerTilesTheSegment(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const segLen = 4096
	b := make([]byte, segLen)
	pos := 0
	var offs []int
	for pos < 3000 {
		e := entryBytes(makeEntry(rng, 8+rng.IntN(200)))
		copy(b[pos:], e)
		offs = append(offs, pos)
		pos += len(e)
	}
	end := pos
	// Damage the second entry's payload and the fifth entry's length.
	b[offs[1]+9] ^= 0xff
	b[offs[4]+1] ^= 0x10

	var got []int
	var bad []CorruptRange
	w := walker{
		visit:   func(off int64, _ []byte) error { got = append(got, int(off)); return nil },
		corrupt: func(c CorruptRange) { bad = append(bad, c) },
	}
	stop, next, err := w.segment(b, nil, segLen, 0, 0, false, false)
	if err != nil || next || stop != end {
		t.Fatalf("segment = (%d, %v, %v), want (%d, false, nil)", stop, next, err, end)
	}
	want := append(append([]int{offs[0]}, offs[2:4]...), offs[5:]...)
	if len(got) != len(want) {
		t.Fatalf("visited %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("visited %v, want %v", got, want)
		}
	}
	if len(bad) != 2 || bad[0].Offset != int64(offs[1]) || bad[0].Length != int64(offs[2]-offs[1]) ||
		bad[1].Offset != int64(offs[4]) || bad[1].Length != int64(offs[5]-offs[4]) {
		t.Fatalf("corrupt ranges %+v", bad)
	}
}
