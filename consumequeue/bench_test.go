package consumequeue

import (
	"fmt"
	"testing"
)

func BenchmarkPut(b *testing.B) {
	s := openStore(b, b.TempDir(), 0, 0)
	q := mustQueue(b, s, "bench", 0)
	b.SetBytes(UnitSize)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := q.Put(int64(i), unitAt(int64(i))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPutManyQueues appends round-robin to 4 096 queues through 256
// descriptors: every Put evicts a dirty file and opens another.
func BenchmarkPutManyQueues(b *testing.B) {
	const n = 4096
	s := openStore(b, scratchDir(b), 0, 256)
	qs := make([]*Queue, n)
	for i := range qs {
		qs[i] = mustQueue(b, s, fmt.Sprintf("t%d", i/8), int32(i%8))
		putRange(b, qs[i], 0, 1)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := qs[i%n]
		o := int64(1 + i/n)
		if err := q.Put(o, unitAt(o)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGet32(b *testing.B) {
	const units = 100000
	s := openStore(b, b.TempDir(), 0, 0)
	q := mustQueue(b, s, "bench", 0)
	putRange(b, q, 0, units)
	b.SetBytes(32 * UnitSize)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		from := int64(i*32) % (units - 32)
		got, err := q.Get(from, 32)
		if err != nil || len(got) != 32 {
			b.Fatal(len(got), err)
		}
	}
}

func BenchmarkGet32Parallel(b *testing.B) {
	const units = 100000
	s := openStore(b, b.TempDir(), 0, 0)
	q := mustQueue(b, s, "bench", 0)
	putRange(b, q, 0, units)
	b.SetBytes(32 * UnitSize)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			from := int64(i*32) % (units - 32)
			if got, err := q.Get(from, 32); err != nil || len(got) != 32 {
				b.Error(len(got), err)
				return
			}
			i++
		}
	})
}

// BenchmarkPutUnits100 appends 100 units per call to one queue, as the
// store's dispatcher does with a batch's units of one queue.
func BenchmarkPutUnits100(b *testing.B) {
	s := openStore(b, b.TempDir(), 0, 0)
	q := mustQueue(b, s, "bench", 0)
	units := make([]Unit, 100)
	b.SetBytes(int64(len(units)) * UnitSize)
	b.ReportAllocs()
	o := int64(0)
	for b.Loop() {
		for j := range units {
			units[j] = unitAt(o + int64(j))
		}
		if err := q.PutUnits(o, units); err != nil {
			b.Fatal(err)
		}
		o += int64(len(units))
	}
}
