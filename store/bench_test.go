package store

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/message"
)

func benchConfig(b *testing.B) Config {
	cfg := DefaultConfig(b.TempDir())
	cfg.SegmentSize = 256 << 20
	cfg.IndexSlots = 1 << 20
	cfg.IndexEntries = 4 << 20
	cfg.CheckpointInterval = time.Second
	return cfg
}

func benchBatch(n, body int, seq *int) []*message.Ext {
	out := make([]*message.Ext, n)
	for i := range out {
		out[i] = testMsg("BenchTopic", int32(*seq%8), *seq, body)
		*seq++
	}
	return out
}

// BenchmarkStorePut measures Put of 1 KiB messages in batches of 32
// (ASYNC_FLUSH), the FSM's apply path.
func BenchmarkStorePut(b *testing.B) {
	s := mustOpen(b, benchConfig(b))
	defer s.Close()
	n := 0
	batches := make([][]*message.Ext, 64)
	for i := range batches {
		batches[i] = benchBatch(32, 1024, &n)
	}
	b.SetBytes(32 * 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Put(0, batches[i%len(batches)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*32)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkStorePutEncoded is BenchmarkStorePut with the messages given as
// encoded records (the raft FSM's path: records copied as they are).
// BenchmarkStoreDecodeAndPut decodes the same records and calls Put, which
// re-encodes them: what the FSM did before PutEncoded.
func BenchmarkStorePutEncoded(b *testing.B) { benchPutRecords(b, false) }

func BenchmarkStoreDecodeAndPut(b *testing.B) { benchPutRecords(b, true) }

func benchPutRecords(b *testing.B, decode bool) {
	s := mustOpen(b, benchConfig(b))
	defer s.Close()
	n := 0
	batches := make([][][]byte, 64)
	for i := range batches {
		for _, m := range benchBatch(32, 1024, &n) {
			r, err := message.AppendRecord(nil, m)
			if err != nil {
				b.Fatal(err)
			}
			batches[i] = append(batches[i], r)
		}
	}
	b.SetBytes(32 * 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		recs := batches[i%len(batches)]
		var err error
		if decode {
			msgs := make([]*message.Ext, len(recs))
			for j, r := range recs {
				if msgs[j], _, err = message.DecodeRecord(r); err != nil {
					b.Fatal(err)
				}
			}
			_, err = s.Put(0, msgs)
		} else {
			_, err = s.PutEncoded(0, recs)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*32)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkStoreGet measures Get of 32 messages from the page cache.
func BenchmarkStoreGet(b *testing.B) {
	s := mustOpen(b, benchConfig(b))
	defer s.Close()
	n := 0
	for i := 0; i < 400; i++ {
		if _, err := s.Put(0, benchBatch(32, 1024, &n)); err != nil {
			b.Fatal(err)
		}
	}
	max, _ := s.MaxOffset("BenchTopic", 0)
	b.SetBytes(32 * 1024)
	b.ReportAllocs()
	b.ResetTimer()
	off := int64(0)
	for i := 0; i < b.N; i++ {
		res, err := s.Get("BenchTopic", 0, off, 32, nil)
		if err != nil || len(res.Records) == 0 {
			b.Fatal(err, res.Status)
		}
		off = res.NextBeginOffset
		if off >= max {
			off = 0
		}
		res.Release()
	}
	b.ReportMetric(float64(b.N*32)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkStoreQueryByKey measures a key lookup through the IndexFile.
func BenchmarkStoreQueryByKey(b *testing.B) {
	s := mustOpen(b, benchConfig(b))
	defer s.Close()
	n := 0
	for i := 0; i < 300; i++ {
		if _, err := s.Put(0, benchBatch(32, 256, &n)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := "key-" + strconv.Itoa(i%n)
		got, err := s.QueryByKey("BenchTopic", k, 1, 0, 1<<62)
		if err != nil || len(got) != 1 {
			b.Fatal(err, len(got))
		}
	}
}

// BenchmarkStoreRecover measures reopening a store after an unclean stop
// with no checkpoint since the data was written: every record is scanned,
// checked and dispatched again. LEDGERMQ_BENCH_RECOVER_MB sets the size
// (default 256; the 1 GiB figure uses 1024).
func BenchmarkStoreRecover(b *testing.B) {
	mb := 256
	if v, err := strconv.Atoi(os.Getenv("LEDGERMQ_BENCH_RECOVER_MB")); err == nil && v > 0 {
		mb = v
	}
	cfg := benchConfig(b)
	cfg.CheckpointInterval = 1 << 40
	s := mustOpen(b, cfg)
	n := 0
	for s.MaxPhysicalOffset() < int64(mb)<<20 {
		if _, err := s.Put(0, benchBatch(32, 1024, &n)); err != nil {
			b.Fatal(err)
		}
	}
	size := s.MaxPhysicalOffset()
	s.crash()
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s = mustOpen(b, cfg)
		b.StopTimer()
		if s.Recovery().Replayed != n && i == 0 {
			b.Fatalf("replayed %d of %d", s.Recovery().Replayed, n)
		}
		// Leave it unclean again for the next round.
		_ = os.Remove(cfg.Dir + "/" + checkpointName)
		s.crash()
		b.StartTimer()
	}
}

// BenchmarkIndexDuplicates is what a node does when it becomes leader:
// index its duplicate window from the backlog of 200 000 dispatched
// keys (the default dedup.max_entries), 32-hex UNIQ_KEYs as clients make
// them.
func BenchmarkIndexDuplicates(b *testing.B) {
	const n = 200_000
	s := mustOpen(b, DefaultConfig(b.TempDir()))
	defer s.Close()
	for done := 0; done < n; {
		msgs := make([]*message.Ext, 500)
		for i := range msgs {
			msgs[i] = testMsg("TopicTest", int32(done%8), done, 16)
			msgs[i].SetProperty(message.PropertyUniqKey, fmt.Sprintf("7F0000010001%020X", done))
			msgs[i].StoreTimestamp = 1_700_000_000_000 + int64(done/10) // 10 per ms: all within the window
			done++
		}
		if _, err := s.Put(s.LastSeq()+1, msgs); err != nil {
			b.Fatal(err)
		}
	}
	if got := s.DuplicateStats().Entries; got != n {
		b.Fatalf("backlog holds %d keys, want %d", got, n)
	}
	b.ResetTimer()
	for b.Loop() {
		s.IdleDuplicates()
		s.IndexDuplicates()
	}
	b.StopTimer()
	if got := s.DuplicateStats().Entries; got != n {
		b.Fatalf("index holds %d keys, want %d", got, n)
	}
}
