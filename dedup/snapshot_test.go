package dedup

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"runtime"
	"testing"
	"time"
)

// sampleWindow returns a window with a few entries, a dead slot and every
// counter set.
func sampleWindow() *Window {
	w := New(Config{Window: 90 * time.Second, MaxEntries: 4})
	w.Add("orders", keyOf(1), Result{QueueID: 1, Size: 300, QueueOffset: 10, PhysicalOffset: 1000}, t0)
	w.Add("orders", keyOf(2), Result{QueueID: 2, QueueOffset: 11, PhysicalOffset: 1300}, t0+1)
	w.Add("payments", keyOf(1), Result{QueueID: -1, QueueOffset: -5, PhysicalOffset: -7}, t0-3)
	w.Add("orders", keyOf(2), Result{QueueID: 2, QueueOffset: 12, PhysicalOffset: 1600}, t0+2) // replaced
	w.Add("orders", "", Result{}, t0+2)                                                        // ignored
	w.Add("x", "\x00\xff", Result{Size: 1}, t0+3)
	w.Add("x", "y", Result{}, t0+4) // evicts one by count
	w.Expire(t0 + 90_001)           // expires one
	return w
}

func TestSnapshotRoundTrip(t *testing.T) {
	for name, w := range map[string]*Window{
		"empty":  New(Config{}),
		"sample": sampleWindow(),
	} {
		t.Run(name, func(t *testing.T) {
			b := w.AppendSnapshot(nil)
			r, err := Restore(b)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(r.AppendSnapshot(nil), b) {
				t.Fatal("the restored window's snapshot differs")
			}
			if r.Config() != w.Config() || r.Stats().Entries != w.Stats().Entries || keysOf(r) != keysOf(w) {
				t.Fatalf("restored %+v %+v %q, want %+v %+v %q",
					r.Config(), r.Stats(), keysOf(r), w.Config(), w.Stats(), keysOf(w))
			}
			sw, sr := w.Stats(), r.Stats()
			sw.Bytes, sr.Bytes = 0, 0
			if sw != sr {
				t.Fatalf("stats %+v, want %+v", sr, sw)
			}
			w.g.each(func(s *slot) {
				topic, key := splitID(w.g.id(s))
				if got, ok := r.Lookup(topic, key, t0, time.Hour); !ok || got != s.r {
					t.Fatalf("%q/%q: %+v, %v; want %+v", topic, key, got, ok, s.r)
				}
			})
		})
	}
	// The sample holds what it was built to.
	if st := sampleWindow().Stats(); st.Expired != 1 || st.EvictedByCount != 1 || st.Replaced != 1 || st.Ignored != 1 || st.Entries != 3 {
		t.Fatalf("sample stats %+v", st)
	}
}

func TestAppendSnapshotAppends(t *testing.T) {
	w := sampleWindow()
	want := w.AppendSnapshot(nil)
	got := w.AppendSnapshot([]byte("prefix"))
	if string(got[:6]) != "prefix" || !bytes.Equal(got[6:], want) {
		t.Fatal("AppendSnapshot did not append")
	}
	size := headerSize + crcSize
	w.g.each(func(s *slot) {
		topic, key := splitID(w.g.id(s))
		size += entryFixed + len(topic) + len(key)
	})
	if len(want) != size {
		t.Fatalf("size %d", len(want))
	}
}

func TestRestoreRejects(t *testing.T) {
	good := sampleWindow().AppendSnapshot(nil)
	le := binary.LittleEndian
	// edit changes a copy of good and seals it with a fresh CRC.
	edit := func(f func(b []byte) []byte) []byte {
		b := f(bytes.Clone(good[:len(good)-crcSize]))
		return le.AppendUint32(b, crc32.Checksum(b, castagnoli))
	}
	first := headerSize // the first entry
	tests := []struct {
		name string
		b    []byte
	}{
		{"nil", nil},
		{"header only", good[:headerSize]},
		{"bad magic", edit(func(b []byte) []byte { b[0] = 'X'; return b })},
		{"version 2", edit(func(b []byte) []byte { b[4] = 2; return b })},
		{"flags", edit(func(b []byte) []byte { b[6] = 1; return b })},
		{"CRC", append(bytes.Clone(good[:len(good)-1]), good[len(good)-1]^1)},
		{"retention 0", edit(func(b []byte) []byte { le.PutUint64(b[8:], 0); return b })},
		{"retention negative", edit(func(b []byte) []byte { le.PutUint64(b[8:], 1<<63); return b })},
		{"retention over a Duration", edit(func(b []byte) []byte { le.PutUint64(b[8:], uint64(maxRetentionMs)+1); return b })},
		{"max entries 0", edit(func(b []byte) []byte { le.PutUint32(b[16:], 0); return b })},
		{"max entries over the limit", edit(func(b []byte) []byte { le.PutUint32(b[16:], MaxEntriesLimit+1); return b })},
		{"entries over max", edit(func(b []byte) []byte { le.PutUint32(b[20:], 5); return b })},
		{"oversized count", edit(func(b []byte) []byte {
			le.PutUint32(b[16:], MaxEntriesLimit)
			le.PutUint32(b[20:], MaxEntriesLimit)
			return b
		})},
		{"one entry fewer", edit(func(b []byte) []byte { le.PutUint32(b[20:], 2); return b })},
		{"trailing byte", edit(func(b []byte) []byte { return append(b, 0) })},
		{"missing byte", edit(func(b []byte) []byte { return b[:len(b)-1] })},
		{"topic length 0", edit(func(b []byte) []byte { b[first] = 0; return b })},
		{"key length 0", edit(func(b []byte) []byte { b[first+1] = 0; return b })},
		{"key length over MaxKeyLen", edit(func(b []byte) []byte { b[first+1] = MaxKeyLen + 1; return b })},
		{"topic past the end", edit(func(b []byte) []byte { b[first] = 255; return b })},
		{"store time after the newest", edit(func(b []byte) []byte { le.PutUint64(b[first+26:], 1<<62); return b })},
		{"duplicate key", edit(func(b []byte) []byte {
			e := b[first : first+entryFixed+int(b[first])+int(b[first+1])]
			le.PutUint32(b[20:], 4)
			le.PutUint32(b[16:], 4)
			return append(b, e...)
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := Restore(tc.b)
			if !errors.Is(err, ErrBadSnapshot) || w != nil {
				t.Fatalf("Restore = %v, %v; want ErrBadSnapshot", w, err)
			}
		})
	}
}

// Every truncation and every single-bit flip is rejected.
func TestRestoreRejectsDamage(t *testing.T) {
	good := sampleWindow().AppendSnapshot(nil)
	for n := range len(good) {
		if _, err := Restore(good[:n]); !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	for i := range len(good) * 8 {
		b := bytes.Clone(good)
		b[i/8] ^= 1 << (i % 8)
		if _, err := Restore(b); !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("bit %d flipped: %v", i, err)
		}
	}
}

// A count the bytes cannot hold is refused before anything is allocated
// for it.
func TestRestoreOversizedCountAllocs(t *testing.T) {
	b := New(Config{MaxEntries: MaxEntriesLimit}).AppendSnapshot(nil)
	binary.LittleEndian.PutUint32(b[20:], MaxEntriesLimit)
	b = binary.LittleEndian.AppendUint32(b[:len(b)-crcSize], crc32.Checksum(b[:len(b)-crcSize], castagnoli))
	const runs = 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		if _, err := Restore(b); !errors.Is(err, ErrBadSnapshot) {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	// The error only; a ring for the count would be 3 GiB.
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 4096 {
		t.Fatalf("%d bytes allocated per Restore", per)
	}
}
