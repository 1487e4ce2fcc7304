package dedup

import (
	"fmt"
	"runtime"
	"testing"
)

// keyPool returns n distinct 32-hex-character keys.
func keyPool(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = keyOf(i * 7919) // spread over the hex digits
	}
	return keys
}

// topicPool returns n topic names.
func topicPool(n int) []string {
	topics := make([]string, n)
	for i := range topics {
		topics[i] = fmt.Sprintf("TopicTest-%03d", i)
	}
	return topics
}

// BenchmarkAddLookup is the apply step's work per sent message at steady
// state under the default Config: a Lookup (a miss, or a hit for the one
// message in 100 that is a retry), then an Add of each miss. perMs is the
// group's rate in messages per millisecond: at 1, entries leave by age
// (2 min = 120 000 entries); at 10, by count (200 000). max=10000 is a
// window small enough for the CPU caches. allocs/op is also reported
// unrounded (mallocs/op): the amortized growth and rebuilds only.
func BenchmarkAddLookup(b *testing.B) {
	for _, bc := range []struct {
		topics, perMs, max int
		missed             bool
	}{
		{1, 1, 0, false}, {100, 1, 0, false}, {1, 10, 0, false}, {100, 10, 0, false}, {100, 10, 10_000, false},
		{1, 10, 0, true}, {100, 10, 0, true},
	} {
		name := fmt.Sprintf("topics=%d/perMs=%d", bc.topics, bc.perMs)
		if bc.max != 0 {
			name += fmt.Sprintf("/max=%d", bc.max)
		}
		if bc.missed {
			name += "/missed"
		}
		b.Run(name, func(b *testing.B) {
			w := New(Config{MaxEntries: bc.max})
			// Keys recur only long after they were evicted.
			pool := 1 << 10
			for pool < 2*w.Config().MaxEntries {
				pool *= 2
			}
			keys, topics := keyPool(pool), topicPool(bc.topics)
			send := func(i int) {
				if i%100 == 99 {
					i -= 50 // a retry of a message sent a little earlier
				}
				topic, key := topics[i%len(topics)], keys[i&(len(keys)-1)]
				now := t0 + int64(i/bc.perMs)
				r := Result{QueueID: int32(i % 8), QueueOffset: int64(i), PhysicalOffset: int64(i) * 300}
				if bc.missed { // as the leader: the Add knows what the Lookup found
					if _, ok, miss := w.LookupMiss(topic, key, now, DefaultWindow); !ok {
						w.AddMissed(topic, key, r, now, miss)
					}
				} else if _, ok := w.Lookup(topic, key, now, DefaultWindow); !ok {
					w.Add(topic, key, r, now)
				}
			}
			const warm = 300_000
			for i := range warm {
				send(i)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				send(warm + i)
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N), "mallocs/op")
			b.ReportMetric(float64(w.Len()), "entries")
		})
	}
}

// BenchmarkBuild is a node building its window from scratch as it
// becomes leader: 200 000 Adds of 32-hex keys into a fresh default window,
// with and without Reserve first.
func BenchmarkBuild(b *testing.B) {
	keys := keyPool(DefaultMaxEntries)
	for _, reserve := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "reserve"}[reserve], func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				w := New(Config{})
				if reserve {
					w.Reserve(len(keys))
				}
				for i, k := range keys {
					w.Add("TopicTest", k, Result{QueueOffset: int64(i)}, t0+int64(i/10))
				}
			}
		})
	}
}

// BenchmarkLookupHit is a Lookup that finds its pair.
func BenchmarkLookupHit(b *testing.B) {
	keys := keyPool(1 << 16)
	w := New(Config{})
	for i, k := range keys {
		w.Add("TopicTest", k, Result{QueueOffset: int64(i)}, t0)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, ok := w.Lookup("TopicTest", keys[i&(len(keys)-1)], t0+1, DefaultWindow); !ok {
			b.Fatal("miss")
		}
	}
}

// BenchmarkBytesPerEntry fills a window to DefaultMaxEntries with 32-hex
// keys and reports the heap it holds per entry, measured and estimated
// (Bytes).
func BenchmarkBytesPerEntry(b *testing.B) {
	keys := keyPool(DefaultMaxEntries)
	var measured, estimated float64
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		w := New(Config{})
		for i, k := range keys {
			w.Add("TopicTest", k, Result{QueueOffset: int64(i)}, t0+int64(i/10))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		measured = float64(after.HeapAlloc-before.HeapAlloc) / float64(w.Len())
		estimated = float64(w.Bytes()) / float64(w.Len())
		runtime.KeepAlive(w)
	}
	b.ReportMetric(measured, "heapB/entry")
	b.ReportMetric(estimated, "estB/entry")
}

// BenchmarkSnapshot encodes and restores a full default window.
func BenchmarkSnapshot(b *testing.B) {
	w := New(Config{})
	for i, k := range keyPool(DefaultMaxEntries) {
		w.Add("TopicTest", k, Result{QueueOffset: int64(i)}, t0+int64(i/10))
	}
	snap := w.AppendSnapshot(nil)
	b.Run("append", func(b *testing.B) {
		b.SetBytes(int64(len(snap)))
		b.ReportAllocs()
		buf := make([]byte, 0, len(snap))
		for range b.N {
			buf = w.AppendSnapshot(buf[:0])
		}
	})
	b.Run("restore", func(b *testing.B) {
		b.SetBytes(int64(len(snap)))
		b.ReportAllocs()
		for range b.N {
			if _, err := Restore(snap); err != nil {
				b.Fatal(err)
			}
		}
	})
}
