package consumequeue

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// TestManyQueues writes 3 units to each of 10 000 topics × 8 queues with 64
// descriptors, then reopens and checks every queue is listed with its max
// offset. Under -short it uses 1 000 topics. It runs in memory when it can
// (see scratchDir).
func TestManyQueues(t *testing.T) {
	topics := 10000
	if testing.Short() {
		topics = 1000
	}
	const queues, maxOpen = 8, 64
	dir := scratchDir(t)
	s := openStore(t, dir, 100, maxOpen)
	start := time.Now()
	for i := 0; i < topics; i++ {
		topic := fmt.Sprintf("topic-%05d", i)
		for id := int32(0); id < queues; id++ {
			q := mustQueue(t, s, topic, id)
			for o := int64(0); o < 3; o++ {
				if err := q.Put(o, unitAt(o+int64(i))); err != nil {
					t.Fatal(err)
				}
			}
			if n := s.OpenFiles(); n > maxOpen {
				t.Fatalf("OpenFiles = %d > %d", n, maxOpen)
			}
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d queues in %v", topics*queues, time.Since(start))

	start = time.Now()
	s = openStore(t, dir, 100, maxOpen)
	ids, err := s.Queues()
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != topics*queues {
		t.Fatalf("Queues lists %d, want %d", len(ids), topics*queues)
	}
	for n, id := range ids {
		if want := (QueueID{fmt.Sprintf("topic-%05d", n/queues), int32(n % queues)}); id != want {
			t.Fatalf("Queues()[%d] = %v, want %v", n, id, want)
		}
		q := mustQueue(t, s, id.Topic, id.QueueID)
		if q.MinOffset() != 0 || q.MaxOffset() != 3 {
			t.Fatalf("%v: offsets %d..%d, want 0..3", id, q.MinOffset(), q.MaxOffset())
		}
		if n%97 == 0 {
			if u, err := q.GetUnit(2); err != nil || u != unitAt(2+int64(n/queues)) {
				t.Fatalf("%v: GetUnit(2) = %+v, %v", id, u, err)
			}
		}
		if o := s.OpenFiles(); o > maxOpen {
			t.Fatalf("OpenFiles = %d > %d", o, maxOpen)
		}
	}
	tl, err := s.Topics()
	if err != nil || len(tl) != topics {
		t.Fatalf("Topics: %d, %v", len(tl), err)
	}
	t.Logf("reopened and loaded %d queues in %v", len(ids), time.Since(start))
}

// TestConcurrentPutGet runs one writer per queue and several readers over
// few descriptors, with Flush and retention running alongside.
func TestConcurrentPutGet(t *testing.T) {
	const queues, units, readers = 12, 400, 4
	dir := t.TempDir()
	s := openStore(t, dir, 16, 5)
	qs := make([]*Queue, queues)
	for i := range qs {
		qs[i] = mustQueue(t, s, fmt.Sprintf("t%d", i%3), int32(i))
	}

	var writers, others sync.WaitGroup
	errc := make(chan error, queues+readers+2)
	done := make(chan struct{})
	for _, q := range qs {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for o := int64(0); o < units; o++ {
				if err := q.Put(o, unitAt(o)); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	for r := 0; r < readers; r++ {
		others.Add(1)
		go func() {
			defer others.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for {
				select {
				case <-done:
					return
				default:
				}
				q := qs[rng.IntN(queues)]
				max := q.MaxOffset()
				min := q.MinOffset()
				if max == min {
					continue
				}
				from := min + rng.Int64N(max-min)
				got, err := q.Get(from, 1+rng.IntN(40))
				if errors.Is(err, ErrOffsetTooSmall) {
					continue // retention passed it meanwhile
				}
				if err != nil {
					errc <- err
					return
				}
				for i, u := range got {
					if u != unitAt(from+int64(i)) {
						errc <- fmt.Errorf("%s@%d = %+v", q, from+int64(i), u)
						return
					}
				}
			}
		}()
	}
	others.Add(2)
	go func() {
		defer others.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := s.Flush(); err != nil {
				errc <- err
				return
			}
			if n := s.OpenFiles(); n > 5 {
				errc <- fmt.Errorf("OpenFiles = %d > 5", n)
				return
			}
		}
	}()
	go func() {
		defer others.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			q := qs[i%queues]
			if err := q.DeleteBefore(unitAt(q.MaxOffset() / 4).Offset); err != nil {
				errc <- err
				return
			}
		}
	}()
	writers.Wait()
	close(done)
	others.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, 16, 5)
	for i := range qs {
		q := mustQueue(t, s, fmt.Sprintf("t%d", i%3), int32(i))
		if q.MaxOffset() != units {
			t.Fatalf("%s: MaxOffset %d after reopen", q, q.MaxOffset())
		}
		checkQueue(t, q, q.MinOffset(), units)
	}
}

func TestDeleteTopic(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, 10, 3)
	for _, topic := range []string{"a", "b", "c"} {
		for id := int32(0); id < 3; id++ {
			putRange(t, mustQueue(t, s, topic, id), 0, 12)
		}
	}
	old := mustQueue(t, s, "b", 1)
	mustQueue(t, s, "d", 0) // in memory only
	if err := s.DeleteTopic("b"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "b")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("topic directory still there: %v", err)
	}
	if err := old.Put(12, unitAt(12)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put on a deleted topic's handle err = %v, want ErrClosed", err)
	}
	if _, err := old.Get(0, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get on a deleted topic's handle err = %v, want ErrClosed", err)
	}
	topics, err := s.Topics()
	if err != nil || !slices.Equal(topics, []string{"a", "c", "d"}) {
		t.Fatalf("Topics = %v, %v", topics, err)
	}
	ids, err := s.Queues()
	if err != nil || len(ids) != 7 || ids[3] != (QueueID{"c", 0}) || ids[6] != (QueueID{"d", 0}) {
		t.Fatalf("Queues = %v, %v", ids, err)
	}
	if err := s.DeleteTopic("never-existed"); err != nil {
		t.Fatalf("deleting a missing topic: %v", err)
	}
	if err := s.Flush(); err != nil {
		t.Fatalf("Flush after DeleteTopic: %v", err)
	}

	// The topic can be created again, from scratch.
	q := mustQueue(t, s, "b", 1)
	if q == old {
		t.Fatal("DeleteTopic kept the old handle")
	}
	checkQueue(t, q, 0, 0)
	putRange(t, q, 0, 4)
	checkQueue(t, q, 0, 4)

	// A deletion interrupted by a crash is finished by Open.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	trash := filepath.Join(dir, trashPrefix+"1234")
	if err := os.MkdirAll(filepath.Join(trash, "0"), 0o755); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, 10, 3)
	if _, err := os.Stat(trash); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("trash left after Open: %v", err)
	}
	topics, err = s.Topics()
	if err != nil || !slices.Equal(topics, []string{"a", "b", "c"}) {
		t.Fatalf("Topics after reopen = %v, %v", topics, err)
	}
}

func TestFlushSyncsEvictedFiles(t *testing.T) {
	s := openStore(t, t.TempDir(), 10, 2)
	qs := []*Queue{mustQueue(t, s, "t", 0), mustQueue(t, s, "t", 1), mustQueue(t, s, "t", 2)}
	for _, q := range qs {
		putRange(t, q, 0, 3)
	}
	pending := func() int {
		s.cache.mu.Lock()
		defer s.cache.mu.Unlock()
		return len(s.cache.pending)
	}
	dirty := func() int {
		s.cache.mu.Lock()
		defer s.cache.mu.Unlock()
		n := 0
		for _, cf := range s.cache.files {
			if cf.dirty {
				n++
			}
		}
		return n
	}
	if pending() != 1 || dirty() != 2 || s.OpenFiles() != 2 {
		t.Fatalf("before Flush: pending %d dirty %d open %d, want 1 2 2", pending(), dirty(), s.OpenFiles())
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if pending() != 0 || dirty() != 0 {
		t.Fatalf("after Flush: pending %d dirty %d", pending(), dirty())
	}
	// A clean file is closed without becoming pending.
	putRange(t, mustQueue(t, s, "t", 3), 0, 1)
	putRange(t, mustQueue(t, s, "t", 4), 0, 1)
	if pending() != 0 {
		t.Fatalf("clean evictions became pending: %d", pending())
	}

	// Many pending files are synced with one syncfs.
	for id := int32(5); id < 5+syncfsThreshold+10; id++ {
		putRange(t, mustQueue(t, s, "u", id), 0, 1)
	}
	if pending() < syncfsThreshold {
		t.Fatalf("pending = %d", pending())
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if pending() != 0 || dirty() != 0 {
		t.Fatalf("after Flush: pending %d dirty %d", pending(), dirty())
	}
}

// TestCacheWaitsForFreeDescriptor holds the only descriptor and checks that
// a reader of another file waits for it rather than exceeding the bound.
func TestCacheWaitsForFreeDescriptor(t *testing.T) {
	s := openStore(t, t.TempDir(), 10, 1)
	a, b := mustQueue(t, s, "t", 0), mustQueue(t, s, "t", 1)
	putRange(t, a, 0, 2)
	putRange(t, b, 0, 2)
	cf, err := s.cache.acquire(fileKey{a, 0}, false)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := b.Get(0, 2)
		got <- err
	}()
	// Wait until the reader is blocked on the cache.
	for {
		s.cache.mu.Lock()
		w := s.cache.waiters
		s.cache.mu.Unlock()
		if w == 1 {
			break
		}
		select {
		case err := <-got:
			t.Fatalf("Get finished while the only descriptor was held: %v", err)
		default:
		}
		runtimeGosched()
	}
	if s.OpenFiles() != 1 {
		t.Fatalf("OpenFiles = %d", s.OpenFiles())
	}
	s.cache.release(cf, false)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// TestHandleIsSmall keeps a Queue handle within the memory goal (≤ 1 KiB per
// queue, including the maps that hold it).
func TestHandleIsSmall(t *testing.T) {
	if n := unsafe.Sizeof(Queue{}); n > 128 {
		t.Fatalf("Queue handle is %d bytes", n)
	}
}
