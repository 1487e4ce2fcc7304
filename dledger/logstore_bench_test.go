package dledger

// Benchmarks of the two raft LogStore candidates on the replication write
// path: hashicorp/raft-wal (the store in use) and
// hashicorp/raft-boltdb/v2 (the fallback it is measured against).
//
// The workload is ours: one raft entry carries a coalesced batch of about 32
// messages of 1 KiB, so entries are 32 KiB; raft hands the store 1 to 64
// entries per StoreLogs call depending on load (MaxAppendEntries is 64).
//
// Both stores are durable per StoreLogs call, as a SYNC_FLUSH group requires:
//
//	store  setting                                  effect per StoreLogs
//	-----  ---------------------------------------  -----------------------------------
//	wal    none (raft-wal has no switch to turn     one write + one fsync of the tail
//	       fsync off)                               segment (a segment rotation adds a
//	                                                meta-DB commit)
//	bolt   raftboltdb.Options.NoSync = false and    one bbolt transaction: fdatasync of
//	       bbolt.Options.NoSync = false (set        the data pages, then of the meta
//	       explicitly below); NoFreelistSync and    page
//	       NoGrowSync keep bbolt's defaults (false)
//
// raft-boltdb/v2 is pinned at v2.3.0: v2.3.1 imports
// github.com/hashicorp/go-metrics/compat, which go-metrics v0.7.0 (required by
// raft v1.8.0) no longer has, so v2.3.1 does not build in this module. The two
// releases differ only in that metrics import; the store code is the same.
//
// Directories come from b.TempDir, so run on the disk that will hold the raft
// log (TMPDIR): on tmpfs an fsync costs nothing and the comparison means
// nothing.
//
// BenchmarkLogStoreTruncateHead refills the log outside the timer before every
// timed DeleteRange, so its wall time is several times -benchtime; for a quick
// look give it a fixed count, e.g.
//
//	go test -run '^$' -bench 'LogStoreTruncateHead' -benchtime 40x ./dledger/

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"go.etcd.io/bbolt"
)

const (
	// benchEntrySize is one raft entry: ~32 coalesced 1 KiB messages.
	benchEntrySize = 32 << 10
	// benchMaxBatch is the largest StoreLogs batch raft issues with its
	// default MaxAppendEntries; refills use it too.
	benchMaxBatch = 64
	// benchGetLogFill is how many entries BenchmarkLogStoreGetLog writes
	// before reading; benchGetLogWindow is how far back from the tail its
	// reads go (entries a follower catching up or the leader's replication
	// loop would ask for).
	benchGetLogFill   = 1024
	benchGetLogWindow = 256
	// benchTruncKeep is how many entries stay in the log after each
	// compaction in BenchmarkLogStoreTruncateHead (raft's TrailingLogs).
	benchTruncKeep = 1024
)

// benchLogStore is what the benchmarks need from a store: the raft LogStore
// plus a way to release its files.
type benchLogStore interface {
	raft.LogStore
	Close() error
}

// benchStoreKind names a LogStore implementation and opens it in an empty
// directory. The store is closed by a cleanup registered on b.
type benchStoreKind struct {
	name string
	open func(b *testing.B, dir string) benchLogStore
}

var benchStoreKinds = []benchStoreKind{
	{name: "wal", open: openBenchWAL},
	{name: "bolt", open: openBenchBolt},
}

// walWithMeta closes the meta database that raft-wal v0.4.0's WAL.Close
// leaves open: without this the process keeps wal-meta.db's file and its
// flock until exit, and reopening the same directory in-process blocks.
type walWithMeta struct {
	*wal.WAL
	meta *metadb.BoltMetaDB
}

func (w walWithMeta) Close() error {
	werr := w.WAL.Close()
	merr := w.meta.Close()
	if werr != nil {
		return werr
	}
	return merr
}

// openBenchWAL opens raft-wal with its defaults (64 MiB segments, binary
// codec, fsync on every StoreLogs); only the logger is silenced.
func openBenchWAL(b *testing.B, dir string) benchLogStore {
	b.Helper()
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(dir,
		wal.WithLogger(hclog.NewNullLogger()),
		wal.WithMetaStore(meta),
	)
	if err != nil {
		b.Fatalf("open raft-wal: %v", err)
	}
	s := walWithMeta{WAL: w, meta: meta}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Errorf("close raft-wal: %v", err)
		}
	})
	return s
}

// openBenchBolt opens raft-boltdb/v2 with every sync on.
func openBenchBolt(b *testing.B, dir string) benchLogStore {
	b.Helper()
	bopts := *bbolt.DefaultOptions
	bopts.Timeout = time.Second
	bopts.NoSync = false
	s, err := raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(dir, "raft.db"),
		BoltOptions: &bopts,
		NoSync:      false,
	})
	if err != nil {
		b.Fatalf("open raft-boltdb: %v", err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Errorf("close raft-boltdb: %v", err)
		}
	})
	return s
}

// benchPayload returns size deterministic pseudo-random bytes (neither store
// compresses, but incompressible data keeps that question out of the
// numbers).
func benchPayload(size int) []byte {
	r := rand.New(rand.NewPCG(0x6c65646765726d71, uint64(size)))
	p := make([]byte, size)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}

// benchBatch returns n command entries sharing one payload. Callers set the
// indexes before each StoreLogs.
func benchBatch(n int, payload []byte) []*raft.Log {
	appended := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	logs := make([]*raft.Log, n)
	for i := range logs {
		logs[i] = &raft.Log{
			Term:       1,
			Type:       raft.LogCommand,
			Data:       payload,
			AppendedAt: appended,
		}
	}
	return logs
}

// benchAppend stores logs with consecutive indexes starting at next and
// returns the index after the last one.
func benchAppend(b *testing.B, s benchLogStore, logs []*raft.Log, next uint64) uint64 {
	for i, l := range logs {
		l.Index = next + uint64(i)
	}
	if err := s.StoreLogs(logs); err != nil {
		b.Fatalf("StoreLogs [%d, %d]: %v", next, next+uint64(len(logs))-1, err)
	}
	return next + uint64(len(logs))
}

// benchFill appends n entries in batches of benchMaxBatch and returns the
// index after the last one.
func benchFill(b *testing.B, s benchLogStore, logs []*raft.Log, next uint64, n int) uint64 {
	for n > 0 {
		k := min(n, len(logs))
		next = benchAppend(b, s, logs[:k], next)
		n -= k
	}
	return next
}

// BenchmarkLogStore measures durable appends: each op is one StoreLogs of
// batch entries of size bytes into a log that keeps growing (no compaction).
// MB/s counts entry payload bytes.
func BenchmarkLogStore(b *testing.B) {
	for _, kind := range benchStoreKinds {
		b.Run(kind.name, func(b *testing.B) {
			for _, batch := range []int{1, 16, benchMaxBatch} {
				for _, size := range []int{benchEntrySize} {
					name := fmt.Sprintf("batch=%d/size=%dKiB", batch, size>>10)
					b.Run(name, func(b *testing.B) {
						benchStoreLogs(b, kind, batch, size)
					})
				}
			}
		})
	}
}

func benchStoreLogs(b *testing.B, kind benchStoreKind, batch, size int) {
	s := kind.open(b, b.TempDir())
	logs := benchBatch(batch, benchPayload(size))
	next := uint64(1)
	b.SetBytes(int64(batch * size))
	b.ReportAllocs()
	for b.Loop() {
		next = benchAppend(b, s, logs, next)
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkLogStoreGetLog measures reading one recent entry: the log holds
// benchGetLogFill entries and reads cycle over the newest benchGetLogWindow
// of them, newest first, as replication to a slightly lagging follower does
// (raft's own LogCache is not in front of the store here).
func BenchmarkLogStoreGetLog(b *testing.B) {
	for _, kind := range benchStoreKinds {
		b.Run(kind.name, func(b *testing.B) {
			s := kind.open(b, b.TempDir())
			logs := benchBatch(benchMaxBatch, benchPayload(benchEntrySize))
			last := benchFill(b, s, logs, 1, benchGetLogFill) - 1
			i := uint64(0)
			b.SetBytes(benchEntrySize)
			b.ReportAllocs()
			for b.Loop() {
				idx := last - i%benchGetLogWindow
				i++
				// A fresh Log per read, as raft's replication loop uses, so
				// no decoder can reuse the previous entry's buffer.
				var got raft.Log
				if err := s.GetLog(idx, &got); err != nil {
					b.Fatalf("GetLog(%d): %v", idx, err)
				}
				if got.Index != idx || len(got.Data) != benchEntrySize {
					b.Fatalf("GetLog(%d) = index %d, %d data bytes; want index %d, %d bytes",
						idx, got.Index, len(got.Data), idx, benchEntrySize)
				}
			}
		})
	}
}

// BenchmarkLogStoreTruncateHead measures the compaction raft runs after a
// snapshot: DeleteRange of the oldest prefix entries. Before each timed
// DeleteRange the log is topped up (outside the timer) with prefix new
// entries on top of the benchTruncKeep that survive, so every op deletes the
// same amount from a log of the same length, and the appends that follow
// each truncation see the store's steady state (bbolt reusing freed pages,
// raft-wal deleting whole segments). ns/op is the DeleteRange alone.
func BenchmarkLogStoreTruncateHead(b *testing.B) {
	for _, kind := range benchStoreKinds {
		b.Run(kind.name, func(b *testing.B) {
			for _, prefix := range []int{benchMaxBatch, 1024} {
				b.Run(fmt.Sprintf("prefix=%d", prefix), func(b *testing.B) {
					benchTruncateHead(b, kind, prefix)
				})
			}
		})
	}
}

func benchTruncateHead(b *testing.B, kind benchStoreKind, prefix int) {
	s := kind.open(b, b.TempDir())
	logs := benchBatch(benchMaxBatch, benchPayload(benchEntrySize))
	first := uint64(1)
	next := benchFill(b, s, logs, first, benchTruncKeep)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		next = benchFill(b, s, logs, next, prefix)
		b.StartTimer()
		upto := first + uint64(prefix) - 1
		if err := s.DeleteRange(first, upto); err != nil {
			b.Fatalf("DeleteRange(%d, %d): %v", first, upto, err)
		}
		first = upto + 1
	}
	b.StopTimer()
	if got, err := s.FirstIndex(); err != nil || got != first {
		b.Fatalf("FirstIndex after truncations = %d, %v; want %d", got, err, first)
	}
}
