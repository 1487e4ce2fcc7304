package commitlog

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestConcurrentAppendReadFlushDelete runs an appender against readers, a
// scanner, Flush and forced retention at once (meant for -race). Readers
// must get either the exact bytes written or ErrOutOfRange for a deleted
// segment; nothing may ever look corrupt.
func TestConcurrentAppendReadFlushDelete(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	l := openLog(t, cfg)

	var mu sync.Mutex
	var ws []written
	done := make(chan struct{})
	errc := make(chan error, 16)
	fail := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	var wg sync.WaitGroup

	wg.Add(1)
	go func() { // appender
		defer wg.Done()
		defer close(done)
		rng := rand.New(rand.NewPCG(61, 62))
		for i := 0; i < 3000; i++ {
			if i%7 == 0 {
				sizes := []int{MinEntrySize + rng.IntN(300), MinEntrySize + rng.IntN(300)}
				ps := [][]byte{makeEntry(rng, sizes[0]), makeEntry(rng, sizes[1])}
				offs, err := l.AppendBatch(sizes, func(i int, _ int64, dst []byte) error { copy(dst, ps[i]); return nil })
				if err != nil {
					fail(err)
					return
				}
				mu.Lock()
				ws = append(ws, written{offs[0], ps[0]}, written{offs[1], ps[1]})
				mu.Unlock()
				continue
			}
			p := makeEntry(rng, MinEntrySize+rng.IntN(600))
			off, err := l.Append(p)
			if err != nil {
				fail(err)
				return
			}
			mu.Lock()
			ws = append(ws, written{off, p})
			mu.Unlock()
		}
	}()

	for r := range 2 {
		wg.Add(1)
		go func() { // readers
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 63))
			for {
				select {
				case <-done:
					return
				default:
				}
				mu.Lock()
				n := len(ws)
				var w written
				if n > 0 {
					w = ws[n-1-rng.IntN(min(n, 50))]
				}
				mu.Unlock()
				if n == 0 {
					continue
				}
				ref, err := l.Read(w.off, len(w.payload))
				if errors.Is(err, ErrOutOfRange) {
					continue
				}
				if err != nil {
					fail(err)
					return
				}
				if string(ref.Bytes()) != string(w.payload) {
					fail(errors.New("read returned other bytes"))
				}
				ref.Release()
			}
		}()
	}

	wg.Add(3)
	go func() { // flusher
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := l.Flush(); err != nil {
				fail(err)
				return
			}
		}
	}()
	go func() { // retention
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := l.DeleteExpired(true, 1); err != nil {
				fail(err)
				return
			}
		}
	}()
	go func() { // scanner
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			err := l.Scan(l.MinOffset(), nil, func(c CorruptRange) { fail(c.Err) })
			if err != nil && !errors.Is(err, ErrOutOfRange) {
				fail(err)
				return
			}
		}
	}()
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	if l.MinOffset() == 0 {
		t.Fatal("retention never ran")
	}
}
