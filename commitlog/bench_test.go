package commitlog

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// benchSegSize keeps benchmark segments realistic but cheap to allocate.
const benchSegSize = 128 << 20

func benchLog(b *testing.B, mode FlushMode) *Log {
	b.Helper()
	cfg := DefaultConfig(b.TempDir())
	cfg.SegmentSize = benchSegSize
	cfg.FlushMode = mode
	return openLog(b, cfg)
}

// BenchmarkAppend1KiB appends 1 KiB entries in FlushAsync mode (the flusher
// msyncs every 500ms in the background). Compare with
// BenchmarkPlainWrite1KiB.
func BenchmarkAppend1KiB(b *testing.B) {
	l := benchLog(b, FlushAsync)
	p := makeEntry(rand.New(rand.NewPCG(1, 1)), 1024)
	b.SetBytes(int64(len(p)))
	b.ResetTimer()
	for range b.N {
		if _, err := l.Append(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlainWrite1KiB is the baseline for BenchmarkAppend1KiB:
// sequential os.File.Write of the same 1 KiB records to a file in the same
// kind of temporary directory, without any sync.
func BenchmarkPlainWrite1KiB(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "plain"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	p := makeEntry(rand.New(rand.NewPCG(1, 1)), 1024)
	b.SetBytes(int64(len(p)))
	b.ResetTimer()
	for range b.N {
		if _, err := f.Write(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGroupCommit64 runs 64 goroutines appending 1 KiB entries in
// FlushSync mode: every append returns only once durable, and concurrent
// appends share msyncs. Reports appends/s and msyncs per append.
func BenchmarkGroupCommit64(b *testing.B) {
	l := benchLog(b, FlushSync)
	p := makeEntry(rand.New(rand.NewPCG(1, 1)), 1024)
	b.SetBytes(int64(len(p)))
	b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	start := l.syncs.Load()
	var n atomic.Int64
	t0 := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := l.Append(p); err != nil {
				b.Error(err)
				return
			}
			n.Add(1)
		}
	})
	b.StopTimer()
	elapsed := time.Since(t0)
	b.ReportMetric(float64(n.Load())/elapsed.Seconds(), "appends/s")
	b.ReportMetric(float64(l.syncs.Load()-start)/float64(max(n.Load(), 1)), "fsyncs/op")
}

// BenchmarkRead1KiB reads (and verifies) 1 KiB entries that are in the page
// cache, releasing each Ref.
func BenchmarkRead1KiB(b *testing.B) {
	l := benchLog(b, FlushAsync)
	p := makeEntry(rand.New(rand.NewPCG(1, 1)), 1024)
	offs := make([]int64, 16<<10) // 16 MiB
	for i := range offs {
		off, err := l.Append(p)
		if err != nil {
			b.Fatal(err)
		}
		offs[i] = off
	}
	rng := rand.New(rand.NewPCG(2, 2))
	b.SetBytes(int64(len(p)))
	b.ResetTimer()
	for range b.N {
		ref, err := l.Read(offs[rng.IntN(len(offs))], len(p))
		if err != nil {
			b.Fatal(err)
		}
		ref.Release()
	}
}

// BenchmarkRecover measures Close + Open + Recover(0) of a log of
// LEDGERMQ_BENCH_RECOVER_MB MiB (default 64) of 1 KiB entries, from the page
// cache, and reports the scan rate.
func BenchmarkRecover(b *testing.B) {
	mb := 64
	if v, err := strconv.Atoi(os.Getenv("LEDGERMQ_BENCH_RECOVER_MB")); err == nil && v > 0 {
		mb = v
	}
	cfg := DefaultConfig(b.TempDir())
	cfg.SegmentSize = benchSegSize
	l, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := l.Recover(0, nil, nil); err != nil {
		b.Fatal(err)
	}
	p := makeEntry(rand.New(rand.NewPCG(1, 1)), 1024)
	for l.MaxOffset() < int64(mb)<<20 {
		if _, err := l.Append(p); err != nil {
			b.Fatal(err)
		}
	}
	want := l.MaxOffset()
	b.SetBytes(want)
	b.ResetTimer()
	for range b.N {
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		if l, err = Open(cfg); err != nil {
			b.Fatal(err)
		}
		n := 0
		end, err := l.Recover(0, func(int64, []byte) error { n++; return nil }, nil)
		if err != nil || end != want {
			b.Fatalf("Recover = %d, %v; want %d", end, err, want)
		}
	}
	b.StopTimer()
	l.Close()
}

// BenchmarkResyncRandom measures the worst case of the forward search after
// damage: 16 MiB of random bytes with nothing valid in them (every position
// tried, about 1 in 256 carrying a plausible length that needs a CRC check).
func BenchmarkResyncRandom(b *testing.B) {
	buf := make([]byte, 16<<20)
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for range b.N {
		if q := resync(buf, len(buf), 1); q != -1 {
			b.Fatalf("found %d in random bytes", q)
		}
	}
}

// BenchmarkAppendBatch44x1KiB appends batches of 44 entries of 1 KiB (the
// size of a raft entry under load) in FlushAsync mode; ns/op is per batch.
func BenchmarkAppendBatch44x1KiB(b *testing.B) {
	l := benchLog(b, FlushAsync)
	p := makeEntry(rand.New(rand.NewPCG(1, 1)), 1024)
	sizes := make([]int, 44)
	for i := range sizes {
		sizes[i] = len(p)
	}
	b.SetBytes(int64(len(p) * len(sizes)))
	b.ResetTimer()
	for range b.N {
		if _, err := l.AppendBatch(sizes, func(_ int, _ int64, dst []byte) error {
			copy(dst, p)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}
