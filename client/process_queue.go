package client

import (
	"context"
	"slices"
	"sync"
)

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
}

func newProcessQueue(parent context.Context, q Queue, sub *subscription) *processQueue {
	ctx, cancel := context.WithCancel(parent)
	return &processQueue{q: q, sub: sub, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		sizes: map[int64]int{}, next: -1, space: make(chan struct{}, 1)}
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
	}
	if !slices.IsSorted(p.pending) {
		slices.Sort(p.pending)
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
