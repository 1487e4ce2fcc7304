package consumequeue

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func FuzzDecodeUnit(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 19))
	f.Add(make([]byte, 20))
	f.Add(seqUnits(0, 1))
	f.Add(append(seqUnits(7, 1), 1, 2, 3))
	f.Add(bytes.Repeat([]byte{0xff}, 20))
	f.Add([]byte{0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := DecodeUnit(b)
		if len(b) < UnitSize {
			if !errors.Is(err, ErrShortUnit) {
				t.Fatalf("%d bytes: err = %v, want ErrShortUnit", len(b), err)
			}
			return
		}
		if (err == nil) != u.Valid() || (err != nil && !errors.Is(err, ErrBadUnit)) {
			t.Fatalf("unit %+v: err = %v", u, err)
		}
		var out [UnitSize]byte
		EncodeUnit(out[:], u)
		if !bytes.Equal(out[:], b[:UnitSize]) {
			t.Fatalf("round trip: %x != %x", out, b[:UnitSize])
		}
	})
}

// FuzzQueueLoad writes data as the only file of a queue (starting at queue
// offset start, with upf units per file), loads the queue and reads it
// back: nothing may panic, every unit returned must be valid and equal the
// bytes on disk, and MaxOffset must follow the load rules.
func FuzzQueueLoad(f *testing.F) {
	f.Add([]byte{}, uint16(0), uint8(10))
	f.Add(seqUnits(0, 3), uint16(0), uint8(10))
	f.Add(append(seqUnits(0, 3), make([]byte, 45)...), uint16(0), uint8(10))
	f.Add(append(seqUnits(5, 4), 1, 2, 3), uint16(5), uint8(4))
	f.Add(append(append(seqUnits(0, 2), make([]byte, 20)...), seqUnits(3, 2)...), uint16(0), uint8(10))
	f.Add(seqUnits(0, 30), uint16(17), uint8(10))
	f.Add(bytes.Repeat([]byte{0xff}, 100), uint16(3), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, start uint16, upf uint8) {
		if len(data) > 1<<16 {
			return
		}
		units := 1 + int(upf%32)
		dir := scratchDir(t)
		qdir := filepath.Join(dir, "t", "0")
		if err := os.MkdirAll(qdir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(qdir, fileName(int64(start))), data, 0o644); err != nil {
			t.Fatal(err)
		}
		s := openStore(t, dir, units, 2)
		q := mustQueue(t, s, "t", 0)
		min, max := q.MinOffset(), q.MaxOffset()
		if min != int64(start) || max < min {
			t.Fatalf("offsets %d..%d for a file starting at %d", min, max, start)
		}
		capacity := int64(units) - int64(start)%int64(units)
		if n := max - min; n > capacity || n*UnitSize > int64(len(data)) {
			t.Fatalf("%d units from %d bytes in a file of %d units", n, len(data), capacity)
		}
		if max > min {
			last := data[(max-min-1)*UnitSize:]
			if rawUnit(last).Size == 0 {
				t.Fatal("a trailing unit of size 0 was kept")
			}
		}
		got, err := q.Get(min, 1<<20)
		if err != nil && !errors.Is(err, ErrBadUnit) {
			t.Fatalf("Get: %v", err)
		}
		if err == nil && int64(len(got)) != max-min {
			t.Fatalf("Get returned %d units without error, want %d", len(got), max-min)
		}
		for i, u := range got {
			if !u.Valid() {
				t.Fatalf("Get returned invalid unit %+v", u)
			}
			var b [UnitSize]byte
			EncodeUnit(b[:], u)
			if !bytes.Equal(b[:], data[i*UnitSize:(i+1)*UnitSize]) {
				t.Fatalf("unit %d: %x, on disk %x", i, b, data[i*UnitSize:(i+1)*UnitSize])
			}
		}
		if _, _, err := q.LastUnit(); err != nil && !errors.Is(err, ErrBadUnit) {
			t.Fatalf("LastUnit: %v", err)
		}
		if _, err := q.OffsetByTime(5, func(u Unit) (int64, error) { return u.TagsCode, nil }); err != nil {
			t.Fatalf("OffsetByTime: %v", err)
		}
		// The repaired queue accepts an append and reads back the same.
		if err := q.Put(max, Unit{Offset: 1, Size: 1}); err != nil {
			t.Fatalf("Put at max: %v", err)
		}
	})
}
