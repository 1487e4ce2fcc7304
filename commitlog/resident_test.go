package commitlog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ledgermq/ledgermq/internal/testwait"
)

// pagesInCache returns, for each page of b (a file mapping), whether the
// page is in the page cache (mincore).
func pagesInCache(t *testing.T, b []byte) []bool {
	t.Helper()
	page := os.Getpagesize()
	vec := make([]byte, (len(b)+page-1)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	out := make([]bool, len(vec))
	for i, v := range vec {
		out[i] = v&1 != 0
	}
	return out
}

// mappedKiB returns the Rss of the mapping that starts at b's first byte,
// from /proc/self/smaps: what of it is resident in this process.
func mappedKiB(t *testing.T, b []byte) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	head := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(&b[0])))
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, head) {
			in = true
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(line, "Rss:"), "kB")))
			if err != nil {
				t.Fatalf("smaps line %q: %v", line, err)
			}
			return kb
		}
	}
	t.Fatalf("mapping %s not found in smaps", head)
	return 0
}

// TestRecoverLeavesTailUnread: recovering a segment with a small written
// prefix proves that nothing follows the data without reading the unwritten
// rest of the segment, so none of its pages is brought into memory.
func TestRecoverLeavesTailUnread(t *testing.T) {
	for _, prealloc := range []bool{false, true} {
		t.Run(fmt.Sprintf("preallocate=%v", prealloc), func(t *testing.T) {
			cfg := testConfig(t, t.TempDir())
			cfg.SegmentSize = 16 << 20
			cfg.Preallocate = prealloc
			l := openLog(t, cfg)
			ws := appendRandom(t, l, rand.New(rand.NewPCG(7, 7)), 40, 100, 1000)
			if ext := l.segs[0].dataExtents(); ext == nil || ext[len(ext)-1].hi == int(cfg.SegmentSize) {
				t.Skipf("the file system does not tell holes and unwritten blocks from data (%v)", ext)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l, r, end := reopen(t, cfg)
			sameEntries(t, r.entries, ws)
			if end != endOf(ws[len(ws)-1]) {
				t.Fatalf("end %d, want %d", end, endOf(ws[len(ws)-1]))
			}
			// Allow for read-around of the pages that hold the data.
			page := os.Getpagesize()
			from := (int(end) + 1<<20) / page
			for i, in := range pagesInCache(t, l.segs[0].data)[from:] {
				if in {
					t.Fatalf("page %d of the segment (offset %d) is in memory; the data ends at %d", from+i, (from+i)*page, end)
				}
			}
			// The log still finds its end: an append goes right after it.
			off, err := l.Append(makeEntry(rand.New(rand.NewPCG(1, 2)), 64))
			if err != nil || off != end {
				t.Fatalf("append after recovery at %d, %v; want %d", off, err, end)
			}
		})
	}
}

// TestRecoverFindsDataAfterAHole: an entry written far past the end of the
// data, beyond a hole, is still found (reported as damage, not cut), and a
// stray non-zero byte past the end of the data is still zeroed.
func TestRecoverFindsDataAfterAHole(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.SegmentSize = 4 << 20
	l := openLog(t, cfg)
	rng := rand.New(rand.NewPCG(3, 3))
	ws := appendRandom(t, l, rng, 10, 100, 500)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	end := endOf(ws[len(ws)-1])

	// A valid entry 2 MiB on: the zeros between are damage.
	far := int64(2 << 20)
	p := makeEntry(rng, 300)
	patchFile(t, cfg, far, binary.BigEndian.AppendUint32(p, EntryCRC(p)))
	l, r, got := reopen(t, cfg)
	if len(r.corrupt) != 1 || r.corrupt[0].Offset != end || r.corrupt[0].Offset+r.corrupt[0].Length != far {
		t.Fatalf("corrupt ranges %+v, want [%d, %d)", r.corrupt, end, far)
	}
	if want := far + int64(len(p)) + TrailerSize; got != want {
		t.Fatalf("end %d, want %d", got, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// A lone non-zero byte 3 MiB on is not data: it is cut.
	stray := int64(3 << 20)
	patchFile(t, cfg, stray, []byte{0x5a})
	_, _, got2 := reopen(t, cfg)
	if got2 != got {
		t.Fatalf("end %d after a stray byte, want %d", got2, got)
	}
	if b := readFileAt(t, cfg, stray, 1); b[0] != 0 {
		t.Fatalf("stray byte past the end not zeroed: %#x", b[0])
	}
}

// TestSealedSegmentPagesReleased: once a segment is sealed and flushed, and
// after recovery has scanned sealed segments, their pages are no longer
// mapped into the process.
func TestSealedSegmentPagesReleased(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.SegmentSize = 1 << 20
	cfg.FlushInterval = time.Hour // flushes only when asked
	l := openLog(t, cfg)
	rng := rand.New(rand.NewPCG(5, 5))
	var ws []written
	for len(ws) == 0 || ws[len(ws)-1].off < 2*cfg.SegmentSize+4096 {
		ws = append(ws, appendRandom(t, l, rng, 50, 1000, 4000)...)
	}
	// Read everything through the mapping.
	for _, w := range ws {
		ref, err := l.Read(w.off, len(w.payload))
		if err != nil {
			t.Fatal(err)
		}
		ref.Release()
	}
	first := l.segs[0].data
	if kb := mappedKiB(t, first); kb == 0 {
		t.Fatal("the first segment is not mapped in after reading it")
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if kb := mappedKiB(t, l.segs[i].data); kb != 0 {
			t.Fatalf("sealed segment %d: %d KiB still mapped in after its flush", i, kb)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// Recovery scans the sealed segments and lets them go again.
	l, r, _ := reopen(t, cfg)
	sameEntries(t, r.entries, ws)
	for i := range 2 {
		if kb := mappedKiB(t, l.segs[i].data); kb != 0 {
			t.Fatalf("sealed segment %d: %d KiB still mapped in after recovery", i, kb)
		}
	}
}

// TestCacheWindowEvictsFlushedTail: with CacheWindow set, a flush takes the
// durable bytes more than CacheWindow below the flushed position out of the
// page cache (and out of the process), keeps the window's, and every entry
// still reads back whole, from the file.
func TestCacheWindowEvictsFlushedTail(t *testing.T) {
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type == unix.TMPFS_MAGIC {
		t.Skip("the temporary directory is on tmpfs, whose pages cannot leave memory")
	}
	cfg := testConfig(t, dir)
	cfg.SegmentSize = 8 << 20
	cfg.FlushInterval = time.Hour // flushes only when asked
	cfg.CacheWindow = 2 << 20
	l := openLog(t, cfg)
	rng := rand.New(rand.NewPCG(11, 11))
	var ws []written
	for len(ws) == 0 || ws[len(ws)-1].off < 13<<20 {
		ws = append(ws, appendRandom(t, l, rng, 50, 1000, 8000)...)
	}
	// Read everything through the mapping: the pages are mapped in.
	for _, w := range ws {
		ref, err := l.Read(w.off, len(w.payload))
		if err != nil {
			t.Fatal(err)
		}
		ref.Release()
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	flushed := l.FlushedOffset()
	evictedTo := flushed - cfg.CacheWindow
	page := int64(os.Getpagesize())
	// The flusher evicts after it has woken the flush's waiters.
	testwait.For(t, 10*time.Second, "the flusher evicts up to the window", func() bool {
		l.flushMu.Lock()
		defer l.flushMu.Unlock()
		return l.evicted >= evictedTo
	})
	for _, s := range l.segs {
		in := pagesInCache(t, s.data)
		for i, cached := range in {
			off := s.start + int64(i)*page
			switch {
			case off+page <= evictedTo && cached:
				t.Fatalf("page at %d is in the page cache; everything below %d (flushed %d, window %d) should have left", off, evictedTo, flushed, cfg.CacheWindow)
			case off >= evictedTo+page && off+page <= flushed && !cached:
				t.Fatalf("page at %d, inside the window [%d, %d), left the page cache", off, evictedTo, flushed)
			}
		}
	}
	if kb := mappedKiB(t, l.segs[0].data); kb != 0 {
		t.Fatalf("the first segment, wholly below the window, has %d KiB mapped in", kb)
	}
	// Every entry reads back, now from the file.
	for _, w := range ws {
		ref, err := l.Read(w.off, len(w.payload))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ref.Bytes(), w.payload) {
			t.Fatalf("entry at %d reads back different after its pages were evicted", w.off)
		}
		ref.Release()
	}
	// Without a window the flushed tail stays cached.
	cfg0 := testConfig(t, t.TempDir())
	cfg0.SegmentSize = 8 << 20
	cfg0.FlushInterval = time.Hour
	l0 := openLog(t, cfg0)
	appendRandom(t, l0, rng, 200, 1000, 8000)
	if err := l0.Flush(); err != nil {
		t.Fatal(err)
	}
	if in := pagesInCache(t, l0.segs[0].data); !in[0] {
		t.Fatal("without CacheWindow the log's first page left the page cache after a flush")
	}
}
