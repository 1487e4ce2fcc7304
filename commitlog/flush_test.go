package commitlog

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestGroupCommit runs 64 concurrent FlushSync appenders. The first flush is
// held (through the flusher's test hook) until every appender has reserved
// its space, so one msync covers nearly all of them whatever the speed of
// the disk: the assertion is about counts, not time.
func TestGroupCommit(t *testing.T) {
	const appenders = 64
	cfg := testConfig(t, t.TempDir())
	cfg.FlushMode = FlushSync
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Recover(0, nil, nil); err != nil {
		t.Fatal(err)
	}
	var filled sync.WaitGroup
	filled.Add(appenders)
	gate := make(chan struct{})
	var once sync.Once
	l.testHookPreFlush = func() { once.Do(func() { <-gate }) }

	ends := make([]int64, appenders)
	errs := make([]error, appenders)
	var wg sync.WaitGroup
	for i := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := makeEntry(rand.New(rand.NewPCG(uint64(i), 1)), 100+i)
			offs, err := l.AppendBatch([]int{len(p)}, func(_ int, _ int64, dst []byte) error {
				copy(dst, p)
				filled.Done()
				return nil
			})
			if err == nil {
				ends[i] = offs[0] + int64(len(p)) + TrailerSize
				// Returned only once durable.
				if f := l.FlushedOffset(); f < ends[i] {
					err = errors.New("returned before its data was flushed")
				}
			}
			errs[i] = err
		}()
	}
	filled.Wait()
	close(gate)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("appender %d: %v", i, err)
		}
	}
	syncs := l.syncs.Load()
	if syncs >= appenders {
		t.Fatalf("%d msyncs for %d appends: no group commit", syncs, appenders)
	}
	t.Logf("%d appends, %d msyncs", appenders, syncs)
}

func TestFlushAndWaitFlushed(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	l := openLog(t, cfg)
	rng := rand.New(rand.NewPCG(41, 42))
	appendRandom(t, l, rng, 200, MinEntrySize, 1000)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if l.FlushedOffset() != l.MaxOffset() {
		t.Fatalf("FlushedOffset %d after Flush, MaxOffset %d", l.FlushedOffset(), l.MaxOffset())
	}
	// The async flusher catches up on its own.
	appendRandom(t, l, rng, 10, MinEntrySize, 1000)
	if err := l.WaitFlushed(context.Background(), l.MaxOffset()); err != nil {
		t.Fatal(err)
	}
	// Waiting for data that is never written ends with the context.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.WaitFlushed(ctx, l.MaxOffset()+1); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitFlushed past the end: %v", err)
	}
	// A waiter for future data is released by Close with ErrClosed.
	done := make(chan error)
	go func() { done <- l.WaitFlushed(context.Background(), l.MaxOffset()+1) }()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitFlushed across Close: %v", err)
	}
}

func TestCloseFlushes(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.FlushInterval = 1 << 40 // never by the ticker
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Recover(0, nil, nil); err != nil {
		t.Fatal(err)
	}
	appendRandom(t, l, rand.New(rand.NewPCG(43, 44)), 50, MinEntrySize, 1000)
	end := l.MaxOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l.FlushedOffset() != end {
		t.Fatalf("FlushedOffset %d after Close, want %d", l.FlushedOffset(), end)
	}
}

// TestSyncTo: SyncTo makes an append durable on the caller's goroutine
// (the flusher never kicked: its ticker never fires), covers everything
// published before it, costs no msync when already covered, and after
// Close answers ErrClosed for what was never written.
func TestSyncTo(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.FlushInterval = 1 << 40 // never by the ticker
	l := openLog(t, cfg)
	rng := rand.New(rand.NewPCG(45, 46))
	appendRandom(t, l, rng, 20, MinEntrySize, 1000)
	mid := l.MaxOffset()
	appendRandom(t, l, rng, 20, MinEntrySize, 1000)
	end := l.MaxOffset()
	before := l.syncs.Load()
	if err := l.SyncTo(mid); err != nil {
		t.Fatal(err)
	}
	if got := l.FlushedOffset(); got != end {
		t.Fatalf("FlushedOffset %d after SyncTo(%d), want everything published: %d", got, mid, end)
	}
	syncs := l.syncs.Load()
	if syncs == before {
		t.Fatal("SyncTo flushed nothing")
	}
	if err := l.SyncTo(end); err != nil || l.syncs.Load() != syncs {
		t.Fatalf("SyncTo of a durable offset: err %v, msyncs %d → %d", err, syncs, l.syncs.Load())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.SyncTo(end + 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("SyncTo past the end after Close: %v", err)
	}
}
