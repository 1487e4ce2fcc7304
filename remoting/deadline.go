package remoting

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"time"
)

// CallOptions are the options of one call (Client.InvokeWith).
type CallOptions struct {
	// Deadline, if not zero, bounds the call as a deadline of its context
	// would, ErrTimeout (matching context.DeadlineExceeded) once it
	// passes, but without a timer of its own: the connection keeps its
	// calls' deadlines in order and one timer per connection, armed for
	// the earliest, fails the calls whose deadline passed. A sender of
	// many short calls pays no timer for each; the context still cancels
	// the call.
	Deadline time.Time
	// ExtList asks for the response's custom header in ExtList rather
	// than ExtFields: a caller that reads a few known fields is spared
	// the map.
	ExtList bool
}

// callDeadlines is a min-heap of calls by deadline (container/heap); each
// call knows its index, so a call that completes leaves it at once.
type callDeadlines []*call

func (h callDeadlines) Len() int           { return len(h) }
func (h callDeadlines) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h callDeadlines) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *callDeadlines) Push(x any) {
	cl := x.(*call)
	cl.index = len(*h)
	*h = append(*h, cl)
}
func (h *callDeadlines) Pop() any {
	old := *h
	cl := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	cl.index = -1
	return cl
}

// watchDeadline adds a registered call with a deadline to the heap and
// makes sure the sweep runs by then. The timer is only moved earlier: when
// it fires before the earliest deadline (the call it was armed for
// completed) the sweep finds nothing due and arms it again, so calls of
// equal timeouts, each later than the one before, cost no timer work at
// all. c.mu is held.
func (c *Conn) watchDeadline(cl *call) {
	heap.Push(&c.deadlines, cl)
	if !c.sweepAt.IsZero() && !cl.deadline.Before(c.sweepAt) {
		return
	}
	c.sweepAt = cl.deadline
	d := time.Until(cl.deadline)
	if c.sweeper == nil {
		c.sweeper = time.AfterFunc(d, c.sweep)
		return
	}
	c.sweeper.Reset(d)
}

// unwatchDeadline removes a call that left the pending set from the heap.
// c.mu is held.
func (c *Conn) unwatchDeadline(cl *call) {
	if cl.index >= 0 {
		heap.Remove(&c.deadlines, cl.index)
	}
}

// sweep is the deadline timer's function: it fails every call whose
// deadline passed with ErrTimeout and arms the timer for the next one. A
// client connection that read nothing while one of them waited is closed
// first (timedOut).
func (c *Conn) sweep() {
	now := time.Now()
	var due []*call
	c.mu.Lock()
	c.sweepAt = time.Time{}
	if c.closed {
		c.mu.Unlock()
		return
	}
	for len(c.deadlines) > 0 && !c.deadlines[0].deadline.After(now) {
		cl := heap.Pop(&c.deadlines).(*call)
		delete(c.pending, cl.opaque)
		c.unwatchContext(cl)
		due = append(due, cl)
	}
	if len(c.deadlines) > 0 {
		c.sweepAt = c.deadlines[0].deadline
		c.sweeper.Reset(c.sweepAt.Sub(now))
	}
	c.mu.Unlock()
	for _, cl := range due {
		c.timedOut(cl)
	}
	for _, cl := range due {
		cl.finish(nil, fmt.Errorf("%w: %s: %w", ErrTimeout, c.describeCode(cl.code), context.DeadlineExceeded))
	}
}

// stopSweeper stops the deadline timer of a closing connection. c.mu is
// held.
func (c *Conn) stopSweeper() {
	if c.sweeper != nil {
		c.sweeper.Stop()
	}
	c.deadlines = nil
	c.sweepAt = time.Time{}
}

// waitCalls are the calls of synchronous requests, recycled: each carries
// the channel its waiter sleeps on, so a request allocates neither a call
// nor a channel nor a closure.
var waitCalls = sync.Pool{New: func() any { return &call{ready: make(chan struct{}, 1), index: -1} }}

// finish delivers a call's outcome: to done, or to the waiter of a
// synchronous call. It runs exactly once per call that left the pending
// set through a response, a deadline or the connection's close.
func (cl *call) finish(resp *Command, err error) {
	if cl.done != nil {
		cl.done(resp, err)
		return
	}
	cl.resp, cl.err = resp, err
	cl.ready <- struct{}{}
}

// putWaitCall recycles a synchronous call its waiter owns again.
func putWaitCall(cl *call) {
	*cl = call{ready: cl.ready, index: -1}
	waitCalls.Put(cl)
}
