package index

import (
	"fmt"
	"math"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// benchConfig is the production geometry: 5 000 000 slots and 20 000 000
// entries, a 420 MB sparse file.
func benchConfig(b *testing.B) Config {
	return Config{Dir: b.TempDir(), Logger: hclog.NewNullLogger()}
}

func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("TopicTest#ORDER-%08d", i)
	}
	return keys
}

func BenchmarkPut(b *testing.B) {
	s := mustOpen(b, benchConfig(b))
	defer mustClose(b, s)
	keys := benchKeys(1 << 16)
	i := 0
	for b.Loop() {
		if err := s.Put(keys[i&(len(keys)-1)], int64(i)*200, base+int64(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkQuery is the index query latency: one key among 100 000, each
// indexed 10 times in a file of 1 000 000 entries, whole time range.
func BenchmarkQuery(b *testing.B) {
	s := mustOpen(b, benchConfig(b))
	defer mustClose(b, s)
	const nKeys, perKey = 100_000, 10
	keys := benchKeys(nKeys)
	for i := 0; i < nKeys*perKey; i++ {
		if err := s.Put(keys[i%nKeys], int64(i)*200, base+int64(i)); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for b.Loop() {
		got, err := s.Query(keys[(i*7919)%nKeys], 0, math.MaxInt64, 32)
		if err != nil || len(got) < perKey {
			b.Fatalf("got %d offsets, %v", len(got), err)
		}
		i++
	}
}

// BenchmarkPutFlushed is BenchmarkPut with a Flush every 10 000 puts (a
// checkpoint a second at 10 000 messages a second): a flush cleans the
// mapping's pages, and the next write to each faults to dirty it again.
func BenchmarkPutFlushed(b *testing.B) {
	s := mustOpen(b, benchConfig(b))
	defer mustClose(b, s)
	keys := benchKeys(1 << 20)
	i := 0
	for b.Loop() {
		if err := s.Put(keys[i&(len(keys)-1)], int64(i)*200, base+int64(i)); err != nil {
			b.Fatal(err)
		}
		i++
		if i%10_000 == 0 {
			if err := s.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkPutMessages100 indexes 100 messages per op, each under its
// UNIQ_KEY and one KEYS value (two keys a message), as the store's
// dispatcher does for a batch.
func BenchmarkPutMessages100(b *testing.B) {
	s := mustOpen(b, benchConfig(b))
	defer mustClose(b, s)
	const n = 100
	uniq := make([]string, 1<<12)
	keys := make([]string, 1<<12)
	for i := range uniq {
		uniq[i] = fmt.Sprintf("TopicTest#7F0000010001%020X", i)
		keys[i] = fmt.Sprintf("TopicTest#ORDER-%08d", i)
	}
	b.ReportAllocs()
	off := int64(0)
	for b.Loop() {
		for j := 0; j < n; j++ {
			k := int(off/200) & (len(uniq) - 1)
			if err := s.Put(uniq[k], off, base+off/200); err != nil {
				b.Fatal(err)
			}
			if err := s.Put(keys[k], off, base+off/200); err != nil {
				b.Fatal(err)
			}
			off += 200
		}
	}
}

// BenchmarkPutKeys100 is BenchmarkPutMessages100 in one PutKeys call per
// 100 messages, the KEYS values given as topic and name, as the store's
// dispatcher gives them.
func BenchmarkPutKeys100(b *testing.B) {
	s := mustOpen(b, benchConfig(b))
	defer mustClose(b, s)
	const n = 100
	uniq := make([]string, 1<<12)
	names := make([]string, 1<<12)
	for i := range uniq {
		uniq[i] = fmt.Sprintf("TopicTest#7F0000010001%020X", i)
		names[i] = fmt.Sprintf("ORDER-%08d", i)
	}
	keys := make([]Key, 0, 2*n)
	b.ReportAllocs()
	off := int64(0)
	for b.Loop() {
		keys = keys[:0]
		for j := 0; j < n; j++ {
			k := int(off/200) & (len(uniq) - 1)
			ts := base + off/200
			keys = append(keys,
				Key{Name: uniq[k], PhyOffset: off, StoreTimestamp: ts},
				Key{Topic: "TopicTest", Name: names[k], PhyOffset: off, StoreTimestamp: ts})
			off += 200
		}
		if _, err := s.PutKeys(keys); err != nil {
			b.Fatal(err)
		}
	}
}
