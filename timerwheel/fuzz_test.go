package timerwheel

import (
	"bytes"
	"testing"
)

// FuzzDecodeRecord: no input makes the record decoder panic, and whatever
// it accepts encodes back to the same bytes, with a predecessor before it.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(appendRecord(nil, Timer{Q: 7, Due: 1_700_000_000_123, Phy: 4096, Size: 300}, 3), int64(7))
	f.Add(appendRecord(nil, Timer{Q: 0, Gone: true}, -1), int64(0))
	f.Add(make([]byte, RecordSize), int64(1))
	f.Add([]byte{1, 2, 3}, int64(-5))
	f.Fuzz(func(t *testing.T, b []byte, q int64) {
		tm, prev, err := DecodeRecord(b, q)
		if err != nil {
			return
		}
		if prev < -1 || prev >= q || tm.Q != q {
			t.Fatalf("accepted %+v prev %d for %d", tm, prev, q)
		}
		if got := appendRecord(nil, tm, prev); !bytes.Equal(got, b[:RecordSize]) {
			t.Fatalf("re-encoding differs")
		}
	})
}

// FuzzDecodeCheckpoint: no input makes the checkpoint decoder panic, and
// what it accepts is consistent and encodes back to the same bytes.
func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add(encodeCheckpoint(checkpoint{First: 3, Len: 9, LastPhy: 800}))
	f.Add(encodeCheckpoint(checkpoint{LastPhy: -1}))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCheckpoint(b)
		if err != nil {
			return
		}
		if c.First < 0 || c.Len < c.First || c.LastPhy < -1 {
			t.Fatalf("accepted %+v", c)
		}
		if !bytes.Equal(encodeCheckpoint(c), b) {
			t.Fatal("re-encoding differs")
		}
	})
}
