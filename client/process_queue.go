package client

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

func byOffset(a, b *MessageExt) int { return cmp.Compare(a.QueueOffset, b.QueueOffset) }

// processQueue is a push consumer's state for one queue it holds
// (RocketMQ's ProcessQueue): the messages pulled and not yet consumed,
// which drive flow control and the offset to commit.
//
// Messages of a queue arrive in offset order and are consumed in any
// order by the worker pool; the offset committed is the lowest one still
// being consumed (or waiting), so a crash never skips a message that was
// not consumed (at-least-once), and when nothing is pending, the offset
// of the next pull (which is past messages the broker filtered out).
type processQueue struct {
	q      Queue
	sub    *subscription
	ctx    context.Context // ends when the queue is dropped or the consumer closes
	cancel context.CancelFunc
	done   chan struct{} // closed when the pull loop has returned

	mu      sync.Mutex
	pending []int64       // offsets pulled and not consumed, ascending
	sizes   map[int64]int // offset → body size, for pending
	bytes   int           // sum of sizes
	next    int64         // offset of the next pull; -1 until resolved
	space   chan struct{} // signalled when a message is consumed (capacity 1)
	dropped bool          // the rebalance gave the queue away

	// Orderly consumption only.
	orderly     bool
	msgs        []*MessageExt // pulled, not consumed, by offset
	scheduled   bool          // a worker owns the queue (or is about to)
	lockedUntil time.Time     // the broker's lock counts until then
	relock      chan struct{} // signalled when the lock is granted (capacity 1)
	// consuming holds a token while a worker handles one of the queue's
	// messages, so a give-away can wait (for a bounded time) for that
	// handler to return before it commits and unlocks.
	consuming chan struct{}
}

func newProcessQueue(parent context.Context, q Queue, sub *subscription) *processQueue {
	ctx, cancel := context.WithCancel(parent)
	return &processQueue{q: q, sub: sub, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		sizes: map[int64]int{}, next: -1, space: make(chan struct{}, 1), relock: make(chan struct{}, 1),
		consuming: make(chan struct{}, 1)}
}

// newOrderlyQueue is a process queue whose messages are kept for one
// worker at a time, in offset order, locked until lockedUntil.
func newOrderlyQueue(parent context.Context, q Queue, sub *subscription, lockedUntil time.Time) *processQueue {
	p := newProcessQueue(parent, q, sub)
	p.orderly, p.lockedUntil = true, lockedUntil
	return p
}

// setLocked records a lock answer: granted until until, or (zero)
// lost; a grant wakes the pull loop.
func (p *processQueue) setLocked(until time.Time) {
	p.mu.Lock()
	p.lockedUntil = until
	p.mu.Unlock()
	if !until.IsZero() {
		select {
		case p.relock <- struct{}{}:
		default:
		}
	}
}

// locked reports whether the queue's lock counts at now.
func (p *processQueue) locked(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return now.Before(p.lockedUntil)
}

// schedule reports whether the caller must hand the queue to a worker:
// it has messages, its lock counts at now, and no worker owns it yet
// (the caller's task then does).
func (p *processQueue) schedule(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.scheduled || p.dropped || len(p.msgs) == 0 || !now.Before(p.lockedUntil) {
		return false
	}
	p.scheduled = true
	return true
}

// nextOrderly returns the queue's first unconsumed message for the
// worker that owns the queue, or nil (and the worker's ownership ends)
// when there is none, the queue was dropped or its lock does not count.
func (p *processQueue) nextOrderly(now time.Time) *MessageExt {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropped || p.ctx.Err() != nil || len(p.msgs) == 0 || !now.Before(p.lockedUntil) {
		p.scheduled = false
		return nil
	}
	return p.msgs[0]
}

// add records msgs (in offset order) as pending and next as the offset
// of the following pull.
func (p *processQueue) add(msgs []*MessageExt, next int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range msgs {
		if _, dup := p.sizes[m.QueueOffset]; dup {
			continue
		}
		p.pending = append(p.pending, m.QueueOffset)
		p.sizes[m.QueueOffset] = len(m.Body)
		p.bytes += len(m.Body)
		if p.orderly {
			p.msgs = append(p.msgs, m)
		}
	}
	if !slices.IsSorted(p.pending) {
		slices.Sort(p.pending)
	}
	if p.orderly && !slices.IsSortedFunc(p.msgs, byOffset) {
		slices.SortFunc(p.msgs, byOffset)
	}
	p.next = next
}

// setNext moves the next pull's offset (no message arrived).
func (p *processQueue) setNext(next int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next = next
}

// consumed removes offset from the pending messages.
func (p *processQueue) consumed(offset int64) {
	p.mu.Lock()
	if size, ok := p.sizes[offset]; ok {
		delete(p.sizes, offset)
		p.bytes -= size
		if i, found := slices.BinarySearch(p.pending, offset); found {
			p.pending = slices.Delete(p.pending, i, i+1)
		}
		if i, found := slices.BinarySearchFunc(p.msgs, offset, func(m *MessageExt, off int64) int { return cmp.Compare(m.QueueOffset, off) }); found {
			p.msgs = slices.Delete(p.msgs, i, i+1)
		}
	}
	p.mu.Unlock()
	select {
	case p.space <- struct{}{}:
	default:
	}
}

// commitOffset is the offset to commit: the lowest pending one, else the
// next pull's; -1 before the queue's position is known.
func (p *processQueue) commitOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pending) > 0 {
		return p.pending[0]
	}
	return p.next
}

// full reports whether the queue holds more than maxMsgs messages or
// maxBytes of bodies.
func (p *processQueue) full(maxMsgs, maxBytes int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pending) >= maxMsgs || p.bytes >= maxBytes
}

// cached returns the number of pending messages and their bytes.
func (p *processQueue) cached() (int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pending), p.bytes
}

// beginHandler and endHandler bracket a handler call of an orderly queue.
func (p *processQueue) beginHandler() { p.consuming <- struct{}{} }
func (p *processQueue) endHandler()   { <-p.consuming }

// waitHandler waits until no handler of the queue runs, at most timeout
// (forever when timeout < 0). It reports whether none runs; the queue
// must be dropped first, or a new handler may start right after.
func (p *processQueue) waitHandler(timeout time.Duration) bool {
	var expired <-chan time.Time
	if timeout >= 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case p.consuming <- struct{}{}:
		<-p.consuming
		return true
	case <-expired:
		return false
	}
}

func (p *processQueue) drop() {
	p.mu.Lock()
	p.dropped = true
	p.mu.Unlock()
	p.cancel()
}

func (p *processQueue) isDropped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// position returns the next pull's offset (-1 until resolved).
func (p *processQueue) position() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next
}
