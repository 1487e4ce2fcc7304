package commitlog

import (
	"errors"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// The file system failing under the log (internal/vfs.Faulty): each case
// checks that a failed operation is an error to the appender, that nothing
// it did not acknowledge is published or left behind, and that what it
// acknowledged survives a reopen.

// TestAppendDiskFull: the disk fills up in the middle of a run of appends.
// The append that does not fit fails with ErrWrite wrapping ENOSPC and
// publishes nothing; every later one fails too until space is back; then
// appends go on from the same offset, and a reopen recovers exactly the
// appends that succeeded, in order.
func TestAppendDiskFull(t *testing.T) {
	dir := t.TempDir()
	full := vfs.NewFullAfter(dir, 20<<10)
	cfg := testConfig(t, dir)
	cfg.FS = &vfs.Faulty{Fail: full.Fail}
	l := openLog(t, cfg)
	rng := rand.New(rand.NewPCG(3, 9))
	var ws []written
	for !full.Full() {
		p := makeEntry(rng, 100+rng.IntN(400))
		before := l.MaxOffset()
		off, err := l.Append(p)
		if err != nil {
			if !errors.Is(err, ErrWrite) || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("append on a full disk: %v, want ErrWrite wrapping ENOSPC", err)
			}
			if l.MaxOffset() != before {
				t.Fatalf("a failed append moved MaxOffset from %d to %d", before, l.MaxOffset())
			}
			break
		}
		ws = append(ws, written{off, p})
	}
	if len(ws) == 0 || !full.Full() {
		t.Fatalf("%d appends before the disk was full (full=%v)", len(ws), full.Full())
	}
	// Full stays full: a smaller entry is refused as well.
	before := l.MaxOffset()
	if _, err := l.Append(makeEntry(rng, 32)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("second append on a full disk: %v, want ENOSPC", err)
	}
	full.Reset(1 << 30)
	for range 5 {
		p := makeEntry(rng, 100+rng.IntN(400))
		off, err := l.Append(p)
		if err != nil {
			t.Fatalf("append once space is back: %v", err)
		}
		if len(ws) > 0 && off < before {
			t.Fatalf("append once space is back at %d, below the write position %d", off, before)
		}
		ws = append(ws, written{off, p})
	}
	if ws[len(ws)-5].off != before {
		t.Fatalf("first append once space is back at %d, want %d (where the refused ones would have gone)", ws[len(ws)-5].off, before)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	_, r, _ := reopen(t, testConfig(t, dir))
	sameEntries(t, r.entries, ws)
	if len(r.corrupt) != 0 {
		t.Fatalf("corrupt ranges after a full disk: %+v", r.corrupt)
	}
}

// TestRollFailure: an append that needs a new segment file, when the file
// cannot be made (created, reserved, or its directory synced), fails, leaves
// no file behind, and moves nothing; once the file system works again the
// same append rolls, and a reopen recovers every acknowledged append.
func TestRollFailure(t *testing.T) {
	for _, tc := range []struct {
		name     string
		prealloc bool
		op       vfs.Op
		err      error
	}{
		{"create", false, vfs.OpCreate, syscall.ENOSPC},
		{"reserve blocks", true, vfs.OpAllocate, syscall.ENOSPC},
		{"extend sparse file", false, vfs.OpTruncate, syscall.EFBIG},
		{"sync directory", false, vfs.OpSync, syscall.EIO},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var failing atomic.Bool
			cfg := testConfig(t, dir)
			cfg.Preallocate = tc.prealloc
			cfg.FlushMode = FlushAsync
			cfg.FS = &vfs.Faulty{Fail: func(op vfs.Op, path string, _ int64) error {
				if op == tc.op && failing.Load() && (op != vfs.OpSync || path == dir) {
					return tc.err
				}
				return nil
			}}
			l := openLog(t, cfg)
			rng := rand.New(rand.NewPCG(5, 1))
			// Fill the first segment to just below its end.
			var ws []written
			for l.MaxOffset()+1024 < testSegSize {
				p := makeEntry(rng, 512)
				off, err := l.Append(p)
				if err != nil {
					t.Fatal(err)
				}
				ws = append(ws, written{off, p})
			}
			files := segmentFiles(t, dir)
			before := l.MaxOffset()
			big := makeEntry(rng, 2048) // does not fit: rolls
			failing.Store(true)
			_, err := l.Append(big)
			failing.Store(false)
			if !errors.Is(err, tc.err) {
				t.Fatalf("append that rolls while %s fails: %v, want %v", tc.name, err, tc.err)
			}
			if l.MaxOffset() != before || len(l.Segments()) != 1 {
				t.Fatalf("after the failed roll: MaxOffset %d (want %d), %d segments", l.MaxOffset(), before, len(l.Segments()))
			}
			if got := segmentFiles(t, dir); len(got) != len(files) {
				t.Fatalf("the failed roll left files %v (before: %v)", got, files)
			}
			off, err := l.Append(big)
			if err != nil || off != testSegSize {
				t.Fatalf("append after the file system recovered: offset %d (want %d), %v", off, testSegSize, err)
			}
			ws = append(ws, written{off, big})
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			_, r, _ := reopen(t, testConfig(t, dir))
			sameEntries(t, r.entries, ws)
		})
	}
}

// TestFlushSyncError: a failed msync makes the log stop claiming
// durability: Flush returns ErrFlush wrapping the I/O error, the flushed
// position stays below the unsynced appends, and the error stays (a later
// sync that succeeds proves nothing about pages the failed one may have
// dropped), while what was flushed before stays flushed.
func TestFlushSyncError(t *testing.T) {
	dir := t.TempDir()
	fail := &vfs.FailSync{Dir: dir}
	cfg := testConfig(t, dir)
	cfg.FS = &vfs.Faulty{Fail: fail.Fail}
	l := openLog(t, cfg)
	rng := rand.New(rand.NewPCG(8, 8))
	appendRandom(t, l, rng, 10, 16, 256)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	durable := l.FlushedOffset()
	fail.Set(true)
	appendRandom(t, l, rng, 10, 16, 256)
	err := l.Flush()
	if !errors.Is(err, ErrFlush) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Flush with failing syncs: %v, want ErrFlush wrapping EIO", err)
	}
	if fail.Failed() == 0 {
		t.Fatal("no sync was failed")
	}
	fail.Set(false)
	appendRandom(t, l, rng, 1, 16, 256)
	if err := l.Flush(); !errors.Is(err, ErrFlush) {
		t.Fatalf("Flush after syncs work again: %v, want the sticky ErrFlush", err)
	}
	if got := l.FlushedOffset(); got != durable {
		t.Fatalf("FlushedOffset %d after a failed sync, want %d (the last one that succeeded)", got, durable)
	}
	if err := l.Close(); !errors.Is(err, ErrFlush) {
		t.Fatalf("Close after a failed sync: %v, want ErrFlush", err)
	}
}

// segmentFiles lists the segment files of dir.
func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if _, ok := ParseSegmentName(e.Name()); ok {
			out = append(out, e.Name())
		}
	}
	return out
}
