package bench

import (
	"context"
	"sync"
	"testing"
	"time"
)

// fakeConsumer delivers offsets 0..n-1 of two queues from a goroutine it
// owns, skipping and repeating what it is told to.
type fakeConsumer struct {
	stop chan struct{}
	wg   sync.WaitGroup
}

func startFake(n int64, skip, repeat int64, deliver func(Received)) *fakeConsumer {
	f := &fakeConsumer{stop: make(chan struct{})}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for i := int64(0); i < n; i++ {
			for _, q := range []string{"T@b#0", "T@b#1"} {
				if q == "T@b#1" && i == skip {
					continue
				}
				select {
				case <-f.stop:
					return
				default:
				}
				deliver(Received{Queue: q, Offset: i, Body: make([]byte, 10), Stored: time.Now()})
				if q == "T@b#0" && i == repeat {
					deliver(Received{Queue: q, Offset: i, Body: make([]byte, 10), Stored: time.Now()})
				}
			}
		}
	}()
	return f
}

func (f *fakeConsumer) Close() error { close(f.stop); f.wg.Wait(); return nil }

func TestConsumeChecks(t *testing.T) {
	s, err := Consume(context.Background(), ConsumeConfig{
		Consumers: 1, Count: 199,
		NewConsumer: func(_ int, deliver func(Received)) (Consumer, error) {
			return startFake(100, 50, 10, deliver), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode != "consume" || s.Sent != 200 || s.Gaps != 1 || s.Duplicates != 1 {
		t.Fatalf("summary %+v", s)
	}
	if line := s.String(); line[len(line)-len(" gaps=1 duplicates=1"):] != " gaps=1 duplicates=1" {
		t.Fatalf("line %q", line)
	}
	// A duration ends a run that never reaches its count.
	s, err = Consume(context.Background(), ConsumeConfig{
		Consumers: 2, Count: 1 << 40, Duration: 50 * time.Millisecond,
		NewConsumer: func(_ int, deliver func(Received)) (Consumer, error) {
			return startFake(10, -1, -1, deliver), nil
		},
	})
	if err != nil || s.Sent != 40 || s.Gaps != 0 || s.Duplicates != 20 {
		t.Fatalf("two members delivering the same queues: %+v %v", s, err)
	}
	if _, err := Consume(context.Background(), ConsumeConfig{Consumers: 1}); err == nil {
		t.Fatal("accepted a run without a count or duration")
	}
}

func TestConsumeFromZeroAndIdle(t *testing.T) {
	// Queues of a fresh topic whose first 10 offsets are gone: they count
	// as gaps, and the run ends when nothing more comes.
	s, err := Consume(context.Background(), ConsumeConfig{
		Consumers: 1, Count: 1 << 40, FromZero: true, Idle: 40 * time.Millisecond,
		NewConsumer: func(_ int, deliver func(Received)) (Consumer, error) {
			f := &fakeConsumer{stop: make(chan struct{})}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				for i := int64(10); i < 20; i++ {
					deliver(Received{Queue: "T@b#0", Offset: i, Stored: time.Now()})
				}
			}()
			return f, nil
		},
	})
	if err != nil || s.Sent != 10 || s.Gaps != 10 {
		t.Fatalf("summary %+v %v", s, err)
	}
}
