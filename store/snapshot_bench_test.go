package store

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkStoreRestoreFrom swaps in staged segments holding 20 000 1 KiB
// messages (about 24 MiB) and rebuilds the queues and the index from them,
// as a follower does when it installs a snapshot.
func BenchmarkStoreRestoreFrom(b *testing.B) {
	cfg := benchConfig(b)
	cfg.SegmentSize = 8 << 20
	src := mustOpen(b, cfg)
	n := 0
	for i := 0; i < 20000/32; i++ {
		if _, err := src.Put(0, benchBatch(32, 1024, &n)); err != nil {
			b.Fatal(err)
		}
	}
	if err := src.Flush(); err != nil {
		b.Fatal(err)
	}
	staged := b.TempDir()
	for _, seg := range src.SegmentPaths() {
		if err := os.Link(seg.Path, filepath.Join(staged, filepath.Base(seg.Path))); err != nil {
			b.Fatal(err)
		}
	}
	seq, size := src.LastSeq(), src.MaxPhysicalOffset()
	if err := src.Close(); err != nil {
		b.Fatal(err)
	}
	dstCfg := benchConfig(b)
	dstCfg.SegmentSize = cfg.SegmentSize
	dst := mustOpen(b, dstCfg)
	defer dst.Close()
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := dst.RestoreFrom(staged, seq); err != nil {
			b.Fatal(err)
		}
	}
}
