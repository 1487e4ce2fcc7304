package commitlog

import (
	"errors"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

func TestDeleteExpired(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	cfg.Clock = func() time.Time { return time.Unix(0, now.Load()) }
	cfg.FileReservedTime = time.Hour
	l := openLog(t, cfg)
	l.diskUsage = func(string) (float64, error) { return 0.1, nil }
	rng := rand.New(rand.NewPCG(51, 52))
	ws := appendRandom(t, l, rng, 300, 500, 1500)
	// A flush in progress holds the segments it syncs; make sure none is.
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	segs := l.Segments()
	if len(segs) < 5 {
		t.Fatalf("want at least 5 segments, have %d", len(segs))
	}

	// Nothing is old yet.
	if n, err := l.DeleteExpired(false, 0); n != 0 || err != nil {
		t.Fatalf("DeleteExpired with fresh files: %d %v", n, err)
	}
	// Age the first two segments and the fourth: deletion is oldest first
	// and contiguous, so the fourth stays (the third is young).
	old := time.Unix(0, now.Load()).Add(-2 * time.Hour)
	for _, i := range []int{0, 1, 3} {
		if err := os.Chtimes(segs[i].Path, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := l.DeleteExpired(false, 0); n != 2 || err != nil {
		t.Fatalf("DeleteExpired: %d %v, want 2", n, err)
	}
	if l.MinOffset() != segs[2].Start {
		t.Fatalf("MinOffset %d, want %d", l.MinOffset(), segs[2].Start)
	}
	for _, i := range []int{0, 1} {
		if _, err := os.Stat(segs[i].Path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("segment %d still exists: %v", i, err)
		}
	}
	if _, err := l.Read(ws[0].off, len(ws[0].payload)); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("Read below MinOffset: %v", err)
	}
	if err := l.Scan(0, nil, nil); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("Scan below MinOffset: %v", err)
	}

	// A held Ref blocks its segment until released.
	var held written
	for _, w := range ws {
		if w.off >= segs[2].Start {
			held = w
			break
		}
	}
	ref, err := l.Read(held.off, len(held.payload))
	if err != nil {
		t.Fatal(err)
	}
	now.Store(now.Load() + int64(10*time.Hour)) // everything is expired now
	if n, err := l.DeleteExpired(false, 0); n != 0 || err != nil {
		t.Fatalf("DeleteExpired with a held Ref: %d %v", n, err)
	}
	ref.Release()
	if n, err := l.DeleteExpired(false, 1); n != 1 || err != nil {
		t.Fatalf("DeleteExpired(maxFiles=1): %d %v", n, err)
	}
	if n, err := l.DeleteExpired(false, 0); err != nil || n != len(segs)-4 {
		t.Fatalf("DeleteExpired all: %d %v, want %d", n, err, len(segs)-4)
	}
	// The active segment is never deleted.
	left := l.Segments()
	if len(left) != 1 || left[0].Start != segs[len(segs)-1].Start {
		t.Fatalf("segments left %+v", left)
	}
	if n, err := l.DeleteExpired(true, 0); n != 0 || err != nil {
		t.Fatalf("forced delete of the active segment: %d %v", n, err)
	}
	// Reopen: the log starts at the new MinOffset.
	minOff := l.MinOffset()
	l.Close()
	l2, r, _ := reopen(t, cfg)
	if l2.MinOffset() != minOff {
		t.Fatalf("MinOffset after reopen %d, want %d", l2.MinOffset(), minOff)
	}
	for _, e := range r.entries {
		if e.off < minOff {
			t.Fatalf("visited %d below MinOffset", e.off)
		}
	}
}

func TestDeleteWhenDiskFullOrForced(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.FileReservedTime = 1000 * time.Hour
	l := openLog(t, cfg)
	appendRandom(t, l, rand.New(rand.NewPCG(53, 54)), 600, 500, 1500)
	// A flush in progress holds the segments it syncs; make sure none is.
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	nsegs := len(l.Segments())
	deleted := 0
	l.diskUsage = func(string) (float64, error) {
		// The disk stops being full after two deletions.
		if deleted >= 2 {
			return 0.5, nil
		}
		deleted++
		return 0.9, nil
	}
	if n, err := l.DeleteExpired(false, 10); n != 2 || err != nil {
		t.Fatalf("DeleteExpired on a full disk: %d %v, want 2", n, err)
	}
	if n, err := l.DeleteExpired(true, 3); n != 3 || err != nil {
		t.Fatalf("forced DeleteExpired: %d %v, want 3", n, err)
	}
	if got := len(l.Segments()); got != nsegs-5 {
		t.Fatalf("%d segments left, want %d", got, nsegs-5)
	}
	if r, err := l.DiskUsedRatio(); err != nil || r != 0.5 {
		t.Fatalf("DiskUsedRatio = %v %v", r, err)
	}
	if r, err := diskUsedRatio(cfg.Dir); err != nil || r <= 0 || r > 1 {
		t.Fatalf("statfs ratio %v %v", r, err)
	}
}
