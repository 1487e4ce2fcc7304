package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/remoting"
)

// PullConsumer reads the queues it is assigned, at positions it controls
// (RocketMQ's lite pull consumer with manual assignment). Poll long-polls
// every assigned queue at once and returns what the first answers bring;
// Commit stores, for the group, the position after the messages Poll has
// returned. Nothing is rebalanced: which queues each consumer reads is
// the caller's choice (Queues lists a topic's).
//
// A queue's first position is the group's committed offset, else
// ConsumeFromWhere's (WithConsumeFromWhere); Seek and SeekToTime move it.
// PULL_OFFSET_MOVED jumps to the broker's suggested offset. Transport
// errors and SERVICE_NOT_AVAILABLE re-read the route at once, so a new
// leader is used as soon as the name server lists it.
//
// Goroutines: one per queue pull in flight, started by Poll, each ending
// with its pull (at most the long-poll timeout plus 10 s) or at Close.
// All methods are safe for concurrent use; Poll calls should not overlap
// (they would share the messages).
type PullConsumer struct {
	*consumerBase
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sub    Selector

	mu     sync.Mutex
	closed bool
	queues []Queue
	state  map[Queue]*pullQueue
	ready  []*MessageExt // pulled, not yet returned by Poll
	errs   []error       // pull errors not yet returned by Poll
	wake   chan struct{} // a pull ended (capacity 1)
}

// pullQueue is one assigned queue's position.
type pullQueue struct {
	next      int64 // offset of the next pull; -1 until resolved
	consumed  int64 // after the last message Poll returned; -1 if none
	committed int64 // last offset Commit stored; -1 if none
	gen       uint64
	inflight  bool
	notBefore time.Time // after a pull error, no new pull before
}

// NewPullConsumer returns a pull consumer of group (WithGroup; default
// DEFAULT_CONSUMER). It dials nothing until used.
func NewPullConsumer(opts ...Option) (*PullConsumer, error) {
	o, err := consumerOptionsFrom(opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &PullConsumer{consumerBase: newConsumerBase(o), ctx: ctx, cancel: cancel,
		state: map[Queue]*pullQueue{}, wake: make(chan struct{}, 1)}, nil
}

// SetSelector makes later pulls filter with s (default: every message).
func (c *PullConsumer) SetSelector(s Selector) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sub = s
}

// Queues returns topic's readable queues, from its route.
func (c *PullConsumer) Queues(ctx context.Context, topic string) ([]Queue, error) {
	r, err := c.refreshRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	return slices.Clone(r.queues), nil
}

// Assign makes queues the ones Poll reads, replacing the earlier
// assignment. A queue kept keeps its position; messages pulled but not
// yet returned from queues dropped are discarded.
func (c *PullConsumer) Assign(queues []Queue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	qs := slices.Clone(queues)
	sortQueues(qs)
	qs = slices.Compact(qs)
	keep := map[Queue]bool{}
	for _, q := range qs {
		keep[q] = true
		if c.state[q] == nil {
			c.state[q] = &pullQueue{next: -1, consumed: -1, committed: -1}
		}
	}
	for q := range c.state {
		if !keep[q] {
			delete(c.state, q)
		}
	}
	c.ready = slices.DeleteFunc(c.ready, func(m *MessageExt) bool { return !keep[m.Queue] })
	c.queues = qs
}

// Assignment returns the assigned queues.
func (c *PullConsumer) Assignment() []Queue {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.queues)
}

// Poll returns the next messages of the assigned queues, in offset order
// per queue, waiting until some arrive or ctx ends (then it returns ctx's
// error and no messages). A pull that failed is retried in the
// background; Poll returns its error (with the messages of the other
// queues, if any) so that the caller sees a broker that keeps failing.
func (c *PullConsumer) Poll(ctx context.Context) ([]*MessageExt, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if len(c.ready) > 0 || len(c.errs) > 0 {
			msgs, errs := c.ready, c.errs
			c.ready, c.errs = nil, nil
			for _, m := range msgs {
				if st := c.state[m.Queue]; st != nil {
					st.consumed = max(st.consumed, m.QueueOffset+1)
				}
			}
			c.mu.Unlock()
			return msgs, errors.Join(errs...)
		}
		var retryAt time.Time
		now := time.Now()
		for _, q := range c.queues {
			st := c.state[q]
			if st.inflight {
				continue
			}
			if now.Before(st.notBefore) {
				if retryAt.IsZero() || st.notBefore.Before(retryAt) {
					retryAt = st.notBefore
				}
				continue
			}
			st.inflight = true
			c.wg.Add(1)
			go c.pullQueue(q, st.gen, st.next, st.consumed)
		}
		c.mu.Unlock()
		if err := c.waitWake(ctx, retryAt); err != nil {
			return nil, err
		}
	}
}

// waitWake waits for a pull to end, for retryAt (when set), or for ctx.
func (c *PullConsumer) waitWake(ctx context.Context, retryAt time.Time) error {
	var timer <-chan time.Time
	if !retryAt.IsZero() {
		t := time.NewTimer(time.Until(retryAt))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-c.wake:
	case <-timer:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.ctx.Done():
		return ErrClosed
	}
	return nil
}

// pullQueue is the goroutine of one pull: it resolves the queue's
// position when unknown, pulls, and files the outcome under gen (a Seek
// or Assign since makes it stale).
func (c *PullConsumer) pullQueue(q Queue, gen uint64, next, consumed int64) {
	defer c.wg.Done()
	var res *pullResult
	var err error
	if next < 0 {
		next, err = c.resumeOffset(c.ctx, q)
	}
	if err == nil {
		c.mu.Lock()
		sub := c.sub
		c.mu.Unlock()
		res, err = c.pull(c.ctx, q, next, pullParams{sub: sub, tags: sub.tags()})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.signal()
	st := c.state[q]
	if st == nil || st.gen != gen {
		if st != nil {
			st.inflight = false
		}
		return
	}
	st.inflight = false
	if err != nil {
		if c.ctx.Err() == nil {
			st.notBefore = time.Now().Add(c.opts.consumer.pullErrorBackoff)
			c.errs = append(c.errs, err)
		}
		return
	}
	if st.next < 0 {
		st.next = next
	}
	switch res.code {
	case remoting.PullOffsetMoved:
		c.opts.logger.Info("pull offset moved", "queue", q, "from", next, "to", res.next)
		st.next = res.next
		st.consumed = res.next
	case remoting.Success:
		st.next = res.next
		c.ready = append(c.ready, res.msgs...)
	default:
		st.next = res.next
	}
}

func (c *PullConsumer) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Seek makes the next pull of q (which must be assigned) start at
// offset; messages of q pulled but not yet returned are discarded, a
// pull in flight is ignored, and the next Commit stores offset.
func (c *PullConsumer) Seek(q Queue, offset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.state[q]
	if st == nil {
		return fmt.Errorf("%w: seek on %v, which is not assigned", ErrConfig, q)
	}
	st.gen++
	st.next, st.consumed, st.notBefore = offset, offset, time.Time{}
	c.ready = slices.DeleteFunc(c.ready, func(m *MessageExt) bool { return m.Queue == q })
	return nil
}

// SeekToTime seeks q to the first message stored at or after t
// (SEARCH_OFFSET_BY_TIMESTAMP; the queue's end when all are older), and
// returns that offset.
func (c *PullConsumer) SeekToTime(ctx context.Context, q Queue, t time.Time) (int64, error) {
	off, err := c.queueOffset(ctx, remoting.SearchOffsetByTimestamp, q, t.UnixMilli())
	if err != nil {
		return 0, err
	}
	return off, c.Seek(q, off)
}

// Committed returns the group's committed offset of q (the next offset to
// consume), or ErrNoOffset.
func (c *PullConsumer) Committed(ctx context.Context, q Queue) (int64, error) {
	return c.queryOffset(ctx, q)
}

// Commit stores, for every assigned queue Poll has returned messages of
// (or that was sought) since the last Commit, the offset after them, with
// UPDATE_CONSUMER_OFFSET to the queue's group leader. It returns the
// errors of the queues that failed, joined; those are tried again by the
// next Commit.
func (c *PullConsumer) Commit(ctx context.Context) error {
	c.mu.Lock()
	type item struct {
		q   Queue
		off int64
	}
	var toCommit []item
	for _, q := range c.queues {
		st := c.state[q]
		if st.consumed >= 0 && st.consumed != st.committed {
			toCommit = append(toCommit, item{q, st.consumed})
		}
	}
	c.mu.Unlock()
	var errs []error
	for _, it := range toCommit {
		if err := c.commitOffset(ctx, it.q, it.off); err != nil {
			errs = append(errs, err)
			continue
		}
		c.mu.Lock()
		if st := c.state[it.q]; st != nil {
			st.committed = it.off
		}
		c.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Close stops the pulls in flight and closes the connections; positions
// not committed are lost. Closing twice is a no-op.
func (c *PullConsumer) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	c.core.close()
	return nil
}
