package dedup

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
	"time"
)

// FuzzRestore: no input makes Restore panic, and what it accepts encodes
// back to the same bytes. The seeds are real snapshots, kept small: the
// fuzzer's minimization is quadratic in an input's size.
func FuzzRestore(f *testing.F) {
	f.Add(New(Config{}).AppendSnapshot(nil))
	w := New(Config{Window: time.Second, MaxEntries: 1})
	w.Add("t", "a", Result{QueueID: 1, Size: 2, QueueOffset: 3, PhysicalOffset: 4}, t0)
	w.Add("t", "a", Result{QueueID: 5}, t0+1) // replaced
	w.Add("t", "b", Result{QueueID: 6}, t0+2) // evicts a by count
	w.Add("t", "", Result{}, t0+3)            // ignored
	f.Add(w.AppendSnapshot(nil))
	w = New(Config{Window: time.Second, MaxEntries: 2})
	w.Add("u", keyOf(1), Result{QueueID: 1}, t0)   // packed
	w.Add("u", keyOf(2), Result{QueueID: 1}, t0-5) // older time, later
	w.Expire(t0 + 1_001)
	f.Add(w.AppendSnapshot(nil))
	f.Add([]byte(snapMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		restoreAndEncode(t, b)
		// The same bytes under a valid CRC, so that mutations reach the
		// checks behind it.
		if len(b) >= crcSize {
			body := bytes.Clone(b[:len(b)-crcSize])
			restoreAndEncode(t, binary.LittleEndian.AppendUint32(body, crc32.Checksum(body, castagnoli)))
		}
	})
}

// restoreAndEncode restores b and, if that succeeds, checks that the
// window encodes back to b.
func restoreAndEncode(t *testing.T, b []byte) {
	w, err := Restore(b)
	if err != nil {
		if !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("error %v does not wrap ErrBadSnapshot", err)
		}
		return
	}
	if got := w.AppendSnapshot(nil); !bytes.Equal(got, b) {
		t.Fatalf("re-encoding differs:\n%x\n%x", got, b)
	}
}

// FuzzOps: any script of Adds, Lookups, Expires and restores agrees with
// the reference model, and leaves the same snapshot as the same Adds and
// Expires alone.
func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 0, 1, 2})
	f.Add(bytes.Repeat([]byte{0, 5, 100, 3, 1, 5, 250, 2, 3, 9, 7, 1, 2, 5, 1, 1}, 12))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4*48 { // minimization is quadratic in the size
			return
		}
		runOps(t, Config{Window: 20 * time.Second, MaxEntries: 1 + len(data)%9}, decodeOps(data))
	})
}
