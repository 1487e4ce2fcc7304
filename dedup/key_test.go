package dedup

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestIDPacking(t *testing.T) {
	const hex = "7F0000011F4418B4AAC28E7D3D8B00FF"
	tests := []struct {
		key    string
		packed bool
	}{
		{hex, true},
		{strings.ToLower(hex), false},
		{hex[:31], false},
		{hex + "0", false},
		{hex[:31] + "G", false},
		{"\x7f\x00\x00\x01\x1f\x44\x18\xb4\xaa\xc2\x8e\x7d\x3d\x8b\x00\xff", false}, // hex's bytes
		{"k", false},
	}
	for _, tc := range tests {
		var b idBuf
		id := string(makeID(&b, "orders", tc.key))
		if packed := id[0]&packedFlag != 0; packed != tc.packed {
			t.Errorf("%q: packed %v", tc.key, packed)
		}
		if want := 1 + len("orders") + map[bool]int{true: packedLen, false: len(tc.key)}[tc.packed]; len(id) != want {
			t.Errorf("%q: id of %d bytes, want %d", tc.key, len(id), want)
		}
		if topic, key := splitID(id); topic != "orders" || key != tc.key || idKeyLen(id) != len(tc.key) {
			t.Errorf("%q: split into %q, %q", tc.key, topic, key)
		}
	}
	// A packed key and the 16 bytes it encodes are different keys.
	w := New(Config{})
	for i, tc := range tests {
		w.Add("orders", tc.key, Result{QueueOffset: int64(i)}, t0)
	}
	for i, tc := range tests {
		if r, ok := w.Lookup("orders", tc.key, t0, time.Minute); !ok || r.QueueOffset != int64(i) {
			t.Errorf("%q: %+v, %v", tc.key, r, ok)
		}
	}
}

// FuzzID: ids round-trip and are injective over recordable pairs.
func FuzzID(f *testing.F) {
	f.Add("a", "bc", "ab", "c")
	f.Add("t", "7F0000011F4418B4AAC28E7D3D8B00FF", "t", "\x7f\x00\x00\x01\x1f\x44\x18\xb4\xaa\xc2\x8e\x7d\x3d\x8b\x00\xff")
	f.Add("t", "7F0000011F4418B4AAC28E7D3D8B00FF", "t", "7f0000011f4418b4aac28e7d3d8b00ff")
	f.Fuzz(func(t *testing.T, t1, k1, t2, k2 string) {
		if !recordable(t1, k1) || !recordable(t2, k2) {
			return
		}
		var b1, b2 idBuf
		id1, id2 := string(makeID(&b1, t1, k1)), string(makeID(&b2, t2, k2))
		if topic, key := splitID(id1); topic != t1 || key != k1 {
			t.Fatalf("(%q, %q) split into (%q, %q)", t1, k1, topic, key)
		}
		if (id1 == id2) != (t1 == t2 && k1 == k2) {
			t.Fatalf("(%q, %q) and (%q, %q): ids equal %v", t1, k1, t2, k2, id1 == id2)
		}
		if id3 := string(makeID(&b2, []byte(t1), []byte(k1))); id3 != id1 {
			t.Fatal("[]byte and string ids differ")
		}
	})
}

// packHexRef is packHex one character at a time: the reference.
func packHexRef(dst []byte, key string) bool {
	if len(key) != 2*packedLen {
		return false
	}
	value := func(c byte) (byte, bool) {
		switch {
		case '0' <= c && c <= '9':
			return c - '0', true
		case 'A' <= c && c <= 'F':
			return c - 'A' + 10, true
		}
		return 0, false
	}
	ok := true
	for i := range packedLen {
		hi, ok1 := value(key[2*i])
		lo, ok2 := value(key[2*i+1])
		ok = ok && ok1 && ok2
		dst[i] = hi<<4 | lo
	}
	return ok
}

// packHex agrees with the reference on every byte value at every
// position, and on random keys.
func TestPackHex(t *testing.T) {
	check := func(key string) {
		t.Helper()
		var got, want [packedLen]byte
		ok, wantOK := packHex(got[:], key), packHexRef(want[:], key)
		if ok != wantOK || (ok && got != want) {
			t.Fatalf("%q: %v %x, want %v %x", key, ok, got, wantOK, want)
		}
		if okb := packHex(got[:], []byte(key)); okb != ok {
			t.Fatalf("%q: []byte %v, string %v", key, okb, ok)
		}
	}
	base := []byte("0123456789ABCDEF0F1E2D3C4B5A6978")
	for pos := range base {
		for c := range 256 {
			k := bytes.Clone(base)
			k[pos] = byte(c)
			check(string(k))
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const alphabet = "0123456789ABCDEFabcdef/:@G\x00\x7f\x80\xb0\xc1\xff"
	for range 200_000 {
		k := make([]byte, 2*packedLen)
		for i := range k {
			if rng.IntN(40) == 0 {
				k[i] = alphabet[16+rng.IntN(len(alphabet)-16)]
			} else {
				k[i] = alphabet[rng.IntN(16)]
			}
		}
		check(string(k))
	}
}
