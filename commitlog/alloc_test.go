package commitlog

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// allocatedBytes is the disk space a file holds (st_blocks × 512).
func allocatedBytes(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Blocks * 512
}

// A new segment is sparse by default: its file has the full segment size
// but holds only the blocks written. With Preallocate every block is
// reserved at creation.
func TestSegmentsAreSparseUnlessPreallocated(t *testing.T) {
	const segSize = 16 << 20
	for _, prealloc := range []bool{false, true} {
		dir := t.TempDir()
		cfg := testConfig(t, dir)
		cfg.SegmentSize = segSize
		cfg.Preallocate = prealloc
		l := openLog(t, cfg)
		if _, err := l.Append(makeEntry(rand.New(rand.NewPCG(1, 2)), 4096)); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, SegmentName(0))
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		used := allocatedBytes(t, path)
		if fi.Size() != segSize {
			t.Fatalf("preallocate %v: file of %d bytes, want %d", prealloc, fi.Size(), segSize)
		}
		switch {
		case !prealloc && used > 1<<20:
			t.Fatalf("sparse segment holds %d bytes of disk after a 4 KiB append", used)
		case prealloc && used < segSize:
			t.Fatalf("preallocated segment holds only %d of %d bytes", used, segSize)
		}
	}
}
