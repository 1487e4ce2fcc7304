package index

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/message"
)

func TestASCIIHashContinuesJavaHash(t *testing.T) {
	parts := []string{"", "a", "ab", "abc", "abcd", "abcde", "TopicTest", "#",
		"7F00000100017A8B9C0D1E2F30415263", strings.Repeat("xyz", 33), "\x7f\x00~"}
	for _, a := range parts {
		for _, b := range parts {
			got, ascii := asciiHash(message.JavaStringHash(a), b)
			if !ascii {
				t.Fatalf("asciiHash(%q) says it is not ASCII", b)
			}
			if want := message.JavaStringHash(a + b); got != want {
				t.Errorf("asciiHash(hash(%q), %q) = %d, want %d", a, b, got, want)
			}
		}
	}
	for _, s := range []string{"é", "abcdé", "abc\x80", "\xff", "日本語"} {
		if _, ascii := asciiHash(0, s); ascii {
			t.Errorf("asciiHash(%q) says it is ASCII", s)
		}
	}
}

// putKeysCase is a sequence of keys, with store times going forwards and
// once back, that crosses file boundaries, shares slots and mixes keys
// given whole with keys given as topic and name, ASCII or not.
func putKeysCase() []Key {
	topics := []string{"TopicA", "TopicB", "Tópico"}
	names := []string{"ORDER-1", "ORDER-2", "", "clé", "k\xff", strings.Repeat("n", 40)}
	var keys []Key
	for i := 0; i < 300; i++ {
		off, ts := int64(i)*100, base+int64(i)*700
		if i == 150 {
			ts = base // the clock stepped back
		}
		topic := topics[i%len(topics)]
		keys = append(keys,
			Key{Name: topic + "#UNIQ" + strings.Repeat("0", i%5), PhyOffset: off, StoreTimestamp: ts},
			Key{Topic: topic, Name: names[i%len(names)], PhyOffset: off, StoreTimestamp: ts})
	}
	return keys
}

// TestPutKeysMatchesPut: PutKeys, whatever the batch sizes, leaves the
// same files, byte for byte, and answers the same queries as a Put of
// each whole key.
func TestPutKeysMatchesPut(t *testing.T) {
	keys := putKeysCase()
	for _, maxFiles := range []int{64, 1} {
		one := testConfig(t, 7, 120)
		one.MaxFiles = maxFiles
		batched := testConfig(t, 7, 120)
		batched.MaxFiles = maxFiles
		a, b := mustOpen(t, one), mustOpen(t, batched)
		for _, k := range keys {
			mustPut(t, a, k.String(), k.PhyOffset, k.StoreTimestamp)
		}
		for i, size := 0, 1; i < len(keys); i, size = i+size, size%97+13 {
			batch := keys[i:min(i+size, len(keys))]
			if n, err := b.PutKeys(batch); err != nil || n != len(batch) {
				t.Fatalf("PutKeys of %d keys: %d, %v", len(batch), n, err)
			}
		}
		for _, k := range keys {
			for _, r := range [][2]int64{{0, math.MaxInt64}, {base + 30_000, base + 90_000}} {
				want := mustQuery(t, a, k.String(), r[0], r[1], 1000)
				wantOffsets(t, k.String(), mustQuery(t, b, k.String(), r[0], r[1], 1000), want)
			}
		}
		mustClose(t, a)
		mustClose(t, b)
		sameFiles(t, one.Dir, batched.Dir)
	}
}

func sameFiles(t *testing.T, dirA, dirB string) {
	t.Helper()
	ents, err := os.ReadDir(dirA)
	if err != nil {
		t.Fatal(err)
	}
	entsB, err := os.ReadDir(dirB)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(entsB) {
		t.Fatalf("%d files, want %d", len(entsB), len(ents))
	}
	for i, e := range ents {
		if e.Name() != entsB[i].Name() {
			t.Fatalf("file %d is %s, want %s", i, entsB[i].Name(), e.Name())
		}
		if e.Name() == ".lock" || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		x, err := os.ReadFile(filepath.Join(dirA, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(dirB, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Fatalf("file %s differs", e.Name())
		}
	}
}

// TestPutKeysStopsAtFailure: PutKeys indexes the keys before the first it
// cannot put, says how many, and leaves the rest out.
func TestPutKeysStopsAtFailure(t *testing.T) {
	s := mustOpen(t, testConfig(t, 4, 100))
	long := strings.Repeat("x", MaxKeyLen)
	for _, tc := range []struct {
		bad  Key
		want error
	}{
		{Key{Name: ""}, ErrBadKey},
		{Key{Topic: "T", Name: long}, ErrBadKey},
		{Key{Name: "T#neg", PhyOffset: -1}, ErrBadOffset},
	} {
		keys := []Key{
			{Topic: "T", Name: "before", PhyOffset: 1, StoreTimestamp: base},
			tc.bad,
			{Topic: "T", Name: "after", PhyOffset: 2, StoreTimestamp: base},
		}
		n, err := s.PutKeys(keys)
		if n != 1 || !errors.Is(err, tc.want) {
			t.Fatalf("PutKeys with %+v: %d, %v; want 1, %v", tc.bad, n, err, tc.want)
		}
	}
	wantOffsets(t, "before", mustQuery(t, s, "T#before", 0, math.MaxInt64, 10), []int64{1})
	wantOffsets(t, "after", mustQuery(t, s, "T#after", 0, math.MaxInt64, 10), nil)
	if h := s.Files()[0].Header; h.IndexCount != 4 {
		t.Fatalf("header %+v after three puts", h)
	}
	if n, err := s.PutKeys([]Key{{Topic: "T", Name: long[:MaxKeyLen-2], PhyOffset: 3, StoreTimestamp: base}}); n != 1 || err != nil {
		t.Fatalf("PutKeys of the longest key: %d, %v", n, err)
	}
	mustClose(t, s)
	if n, err := s.PutKeys([]Key{{Name: "T#k", PhyOffset: 1}}); n != 0 || !errors.Is(err, ErrClosed) {
		t.Fatalf("PutKeys after Close: %d, %v", n, err)
	}
}
