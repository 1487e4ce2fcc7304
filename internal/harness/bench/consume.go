package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Received is one consumed message as the consume check needs it.
type Received struct {
	// Queue names the queue (topic, group, id); Offset is the message's
	// offset in it.
	Queue  string
	Offset int64
	Body   []byte
	// Stored is when the broker stored the message (end-to-end latency
	// runs from there to the handler).
	Stored time.Time
}

// Consumer is a started consumer of a consume run.
type Consumer interface{ Close() error }

// ConsumeConfig is one consume run: Consumers members of one consumer
// group read until Count distinct messages (queue offsets) arrived or
// Duration passed. A redelivery counts as a duplicate, not towards Count:
// members of a group that start together each pull the queues they hold
// until their first rebalances agree, as RocketMQ's do.
type ConsumeConfig struct {
	Consumers int
	Count     int64
	Duration  time.Duration
	// NewConsumer starts member i, which calls deliver for every message
	// (from any goroutine).
	NewConsumer func(i int, deliver func(Received)) (Consumer, error)
	// FromZero says every queue is new (a topic of the run's own): offsets
	// missing before the first one seen count as gaps too.
	FromZero bool
	// Idle, when > 0, ends the run once nothing arrived for that long
	// after a first message: messages the broker no longer holds (removed
	// by retention) never come, and the gaps say so.
	Idle   time.Duration
	Report func(Interval)
	Clock  func() time.Time
}

// queueCheck is what one queue delivered.
type queueCheck struct {
	seen map[int64]int
	min  int64
	max  int64
}

// Consume runs the consumers and checks what they deliver: per queue,
// every offset between the first and the last one seen must arrive once
// (Summary.Gaps counts the missing ones, Summary.Duplicates the offsets
// delivered more than once); latencies run from each message's store time.
func Consume(ctx context.Context, cfg ConsumeConfig) (Summary, error) {
	if cfg.Consumers < 1 || (cfg.Count <= 0 && cfg.Duration <= 0) || cfg.NewConsumer == nil {
		return Summary{}, errors.New("bench: consume needs consumers, a count or a duration, and NewConsumer")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	start := cfg.Clock()
	rec := NewRecorder(start)
	var (
		mu       sync.Mutex
		queues   = map[string]*queueCheck{}
		last     time.Time // of the latest delivery
		total    int64     // deliveries
		distinct int64     // distinct queue offsets delivered
		done     = make(chan struct{})
		once     sync.Once
	)
	deliver := func(r Received) {
		now := cfg.Clock()
		rec.Record(r.Stored, now, OK, len(r.Body))
		mu.Lock()
		defer mu.Unlock()
		q := queues[r.Queue]
		if q == nil {
			q = &queueCheck{seen: map[int64]int{}, min: r.Offset, max: r.Offset}
			queues[r.Queue] = q
		}
		last = now
		q.seen[r.Offset]++
		q.min, q.max = min(q.min, r.Offset), max(q.max, r.Offset)
		total++
		if q.seen[r.Offset] == 1 {
			distinct++
		}
		if cfg.Count > 0 && distinct >= cfg.Count {
			once.Do(func() { close(done) })
		}
	}
	var consumers []Consumer
	defer func() {
		for _, c := range consumers {
			_ = c.Close()
		}
	}()
	for i := 0; i < cfg.Consumers; i++ {
		c, err := cfg.NewConsumer(i, deliver)
		if err != nil {
			return Summary{}, fmt.Errorf("bench: consumer %d: %w", i, err)
		}
		consumers = append(consumers, c)
	}
	var deadline <-chan time.Time
	if cfg.Duration > 0 {
		t := time.NewTimer(cfg.Duration)
		defer t.Stop()
		deadline = t.C
	}
	reporterDone := make(chan struct{})
	stopReport := make(chan struct{})
	go func() {
		defer close(reporterDone)
		report(stopReport, ProduceConfig{Report: cfg.Report, Clock: cfg.Clock}, rec, start)
	}()
	var idle <-chan time.Time
	if cfg.Idle > 0 {
		t := time.NewTicker(cfg.Idle / 4)
		defer t.Stop()
		idle = t.C
	}
wait:
	for {
		select {
		case <-done:
			break wait
		case <-deadline:
			break wait
		case <-ctx.Done():
			break wait
		case <-idle:
			mu.Lock()
			stalled := !last.IsZero() && cfg.Clock().Sub(last) >= cfg.Idle
			mu.Unlock()
			if stalled {
				break wait
			}
		}
	}
	end := cfg.Clock()
	close(stopReport)
	<-reporterDone
	for _, c := range consumers {
		_ = c.Close()
	}
	consumers = nil
	s := rec.Finish(end)
	mu.Lock()
	defer mu.Unlock()
	s.Sent = total
	for _, q := range queues {
		for _, n := range q.seen {
			s.Duplicates += int64(n - 1)
		}
		first := q.min
		if cfg.FromZero {
			first = 0
		}
		s.Gaps += (q.max - first + 1) - int64(len(q.seen))
	}
	s.Mode = "consume"
	return s, nil
}
