package broker

// Long polling: the pullHolder part (see pull.go for the pulls it holds).

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/remoting"
)

// pullHolder parks pulls that found nothing until their queue grows or
// their deadline passes. hold, dropConn, notify and Stop are safe for
// concurrent use; run and the workers are its goroutines, started by Start
// and ended by Stop. It reads queue heads through maxOffset and has pulls
// re-read and answered through the funcs it is built with, so it knows
// nothing of the broker.
type pullHolder struct {
	lifecycle
	log hclog.Logger
	// maxOffset is a queue's max offset in the store.
	maxOffset func(topic string, queueID int32) (int64, error)
	// reread re-runs a woken pull; again: nothing yet, hold it once more.
	reread func(p *pullRequest) (resp *remoting.Command, again bool)
	// notFound is the PULL_NOT_FOUND answer of a pull whose time is up.
	notFound func(p *pullRequest) *remoting.Command

	held atomic.Int64 // pulls parked now (a lock-free fast path for notify)

	mu         sync.Mutex
	closed     bool
	byQueue    map[pullKey]map[*pullRequest]struct{}
	byDeadline deadlineHeap
	ready      map[pullKey]int64 // queues whose max grew since run last looked

	wake  chan struct{}     // ready has entries, or the earliest deadline changed
	work  chan *pullRequest // to the workers; never blocks (capacity maxHeldPulls)
	nowFn func() time.Time
}

// pullDeps are what the holder needs from the broker.
type pullDeps struct {
	log       hclog.Logger
	maxOffset func(topic string, queueID int32) (int64, error)
	reread    func(p *pullRequest) (*remoting.Command, bool)
	notFound  func(p *pullRequest) *remoting.Command
}

func newPullHolder(d pullDeps) *pullHolder {
	return &pullHolder{
		log:       d.log,
		maxOffset: d.maxOffset,
		reread:    d.reread,
		notFound:  d.notFound,
		byQueue:   map[pullKey]map[*pullRequest]struct{}{},
		ready:     map[pullKey]int64{},
		wake:      make(chan struct{}, 1),
		work:      make(chan *pullRequest, maxHeldPulls),
		nowFn:     time.Now,
	}
}

// Start runs the holder's goroutines: the waker and pullWorkers workers.
func (h *pullHolder) Start() {
	fs := []func(context.Context){h.loop}
	for range pullWorkers {
		fs = append(fs, h.worker)
	}
	h.run(fs...)
}

// Stop ends long polling: the goroutines stop, every held pull is answered
// PULL_NOT_FOUND (the client pulls again at once, elsewhere if this node
// is going away) and later pulls are answered without being held.
func (h *pullHolder) Stop() {
	h.halt()
	h.close()
}

func (h *pullHolder) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// hold parks p. It returns false when the holder is closed or full; the
// caller then answers p itself.
func (h *pullHolder) hold(p *pullRequest) bool {
	h.mu.Lock()
	// Pulls queued for the workers count too, so run's sends to work (made
	// under mu) can never block.
	if h.closed || len(h.byDeadline)+len(h.work) >= maxHeldPulls || p.gone() {
		h.mu.Unlock()
		return false
	}
	q := h.byQueue[p.key]
	if q == nil {
		q = map[*pullRequest]struct{}{}
		h.byQueue[p.key] = q
	}
	q[p] = struct{}{}
	heap.Push(&h.byDeadline, p)
	h.held.Add(1)
	first := p.heapIdx == 0
	// Once mu is released a worker may own p: copy what is needed below.
	key, offset := p.key, p.offset
	h.mu.Unlock()
	if first {
		h.signal()
	}
	// A message dispatched between the read and the insertion found
	// nobody to wake: look again now that p is visible to onDispatch.
	if maxOff, err := h.maxOffset(key.topic, key.queueID); err == nil && maxOff > offset {
		h.notify(key, maxOff)
	}
	return true
}

// removeLocked takes p out of both indexes. Called with mu held.
func (h *pullHolder) removeLocked(p *pullRequest) {
	if p.heapIdx < 0 {
		return
	}
	heap.Remove(&h.byDeadline, p.heapIdx)
	if q := h.byQueue[p.key]; q != nil {
		delete(q, p)
		if len(q) == 0 {
			delete(h.byQueue, p.key)
		}
	}
	h.held.Add(-1)
}

// notify records that key's max offset is now maxOffset. It takes the
// holder's lock only when pulls are held and never blocks, so it may run
// on the store's write path.
func (h *pullHolder) notify(key pullKey, maxOffset int64) {
	if h.held.Load() == 0 {
		return
	}
	h.mu.Lock()
	_, waiting := h.byQueue[key]
	if waiting && maxOffset > h.ready[key] {
		h.ready[key] = maxOffset
	}
	h.mu.Unlock()
	if waiting {
		h.signal()
	}
}

// drop forgets p if it is held (its in-process caller went). A worker
// that already took p finds it gone and does not answer it.
func (h *pullHolder) drop(p *pullRequest) {
	h.mu.Lock()
	h.removeLocked(p)
	h.mu.Unlock()
}

// heldNow is how many pulls are held now.
func (h *pullHolder) heldNow() int64 { return h.held.Load() }

// dropConn forgets the pulls held for a closed connection.
func (h *pullHolder) dropConn(c *remoting.Conn) {
	if h.held.Load() == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, q := range h.byQueue {
		for p := range q {
			if p.conn == c {
				h.removeLocked(p)
			}
		}
	}
}

// loop moves woken and timed-out pulls to the workers.
func (h *pullHolder) loop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		h.mu.Lock()
		now := h.nowFn()
		for len(h.byDeadline) > 0 && !h.byDeadline[0].deadline.After(now) {
			p := h.byDeadline[0]
			h.removeLocked(p)
			h.work <- p
		}
		for key, maxOff := range h.ready {
			for p := range h.byQueue[key] {
				if maxOff > p.offset {
					h.removeLocked(p)
					h.work <- p
				}
			}
		}
		clear(h.ready)
		next := time.Hour
		if len(h.byDeadline) > 0 {
			next = h.byDeadline[0].deadline.Sub(now)
		}
		h.mu.Unlock()
		timer.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		case <-timer.C:
		}
	}
}

// worker re-runs woken pulls and answers those whose time is up.
func (h *pullHolder) worker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-h.work:
			h.serve(p)
		}
	}
}

// serve answers p, or holds it again until its deadline.
func (h *pullHolder) serve(p *pullRequest) {
	if p.gone() {
		return
	}
	if !h.nowFn().Before(p.deadline) {
		h.answer(p, h.notFound(p))
		return
	}
	resp, again := h.reread(p)
	if again {
		if h.hold(p) {
			return
		}
		resp = h.notFound(p)
	}
	h.answer(p, resp)
}

func (h *pullHolder) answer(p *pullRequest, resp *remoting.Command) {
	if p.local != nil {
		select {
		case p.local.ch <- resp:
		default: // answered before: cannot happen, a pull is answered once
		}
		return
	}
	if err := p.conn.WriteCommand(resp); err != nil {
		h.log.Debug("pull answer not sent", "peer", p.conn.RemoteAddr(), "error", err)
	}
}

// close answers every held or queued pull with PULL_NOT_FOUND and refuses
// new holds. Called by Stop once the holder's goroutines have stopped.
func (h *pullHolder) close() {
	h.mu.Lock()
	h.closed = true
	pending := make([]*pullRequest, 0, len(h.byDeadline))
	for len(h.byDeadline) > 0 {
		p := h.byDeadline[0]
		h.removeLocked(p)
		pending = append(pending, p)
	}
	h.mu.Unlock()
	for {
		select {
		case p := <-h.work:
			pending = append(pending, p)
			continue
		default:
		}
		break
	}
	for _, p := range pending {
		if !p.gone() {
			h.answer(p, h.notFound(p))
		}
	}
}

// deadlineHeap orders held pulls by deadline (container/heap).
type deadlineHeap []*pullRequest

func (d deadlineHeap) Len() int           { return len(d) }
func (d deadlineHeap) Less(i, j int) bool { return d[i].deadline.Before(d[j].deadline) }
func (d deadlineHeap) Swap(i, j int) {
	d[i], d[j] = d[j], d[i]
	d[i].heapIdx, d[j].heapIdx = i, j
}
func (d *deadlineHeap) Push(x any) {
	p := x.(*pullRequest)
	p.heapIdx = len(*d)
	*d = append(*d, p)
}
func (d *deadlineHeap) Pop() any {
	old := *d
	p := old[len(old)-1]
	old[len(old)-1] = nil
	p.heapIdx = -1
	*d = old[:len(old)-1]
	return p
}
