package remoting

import (
	"context"
	"errors"
)

// ErrNotConnected: InvokeFunc found no open connection to the address (it
// never dials).
var ErrNotConnected = errors.New("remoting: not connected")

// InvokeFunc sends req to addr and returns once its frame is queued on the
// connection; done then receives the response, or the error that ended the
// call, exactly once. If InvokeFunc returns an error, done is never called.
//
// It is the call for a caller with many calls in flight: nothing waits,
// and no goroutine is started, per call. done runs on the goroutine that
// ends the call: the connection's read goroutine for a response, the
// deadline sweep for ErrTimeout once o.Deadline passes, the goroutine that
// closes the connection for ErrConnClosed, or a goroutine of ctx's when
// ctx ends first (ctx's error, ErrTimeout on its deadline). So done must
// not block, nor call Close; it may start further calls. The frame is
// written by a goroutine of the connection's, which writes the frames of
// every call queued meanwhile with it: the caller does not wait for the
// socket, nor for a full queue.
//
// InvokeFunc never dials: with no open connection to addr it fails with
// ErrNotConnected, and the caller makes its call another way (Invoke,
// which dials). A connection watches each distinct context of its pending
// InvokeFunc calls once, however many calls share it.
func (c *Client) InvokeFunc(ctx context.Context, addr string, req *Command, o CallOptions, done func(*Command, error)) error {
	if ctx.Err() != nil {
		return contextError(ctx, RequestCodeName(req.Code)+" to "+addr)
	}
	conn := c.liveConn(addr)
	if conn == nil {
		return ErrNotConnected
	}
	c.sign(req)
	cl := &call{done: done, index: -1, deadline: o.Deadline, list: o.ExtList}
	if ctx.Done() != nil {
		cl.ctx = ctx
	}
	return conn.startCallMode(req, cl, true)
}

// liveConn returns the open connection to addr, or nil when there is none
// (or the client is closed), without taking the client's lock.
func (c *Client) liveConn(addr string) *Conn {
	m := c.live.Load()
	if m == nil || c.isClosed.Load() {
		return nil
	}
	if conn := (*m)[addr]; conn != nil && !conn.Closed() {
		return conn
	}
	return nil
}

// ctxWatch is a context's watch on a connection: how many of its pending
// calls were made with it, and what stops the hook its end runs.
type ctxWatch struct {
	calls int
	stop  func() bool
}

// watchContext counts a registered call under its context, hooking the
// context's end the first time. c.mu is held.
func (c *Conn) watchContext(cl *call) {
	w := c.watches[cl.ctx]
	if w == nil {
		if c.watches == nil {
			c.watches = make(map[context.Context]*ctxWatch)
		}
		ctx := cl.ctx
		w = &ctxWatch{stop: context.AfterFunc(ctx, func() { c.contextEnded(ctx) })}
		c.watches[ctx] = w
	}
	w.calls++
}

// unwatchContext uncounts a call that left the pending set, and unhooks
// its context once no pending call has it. c.mu is held.
func (c *Conn) unwatchContext(cl *call) {
	if cl.ctx == nil {
		return
	}
	w := c.watches[cl.ctx]
	if w == nil {
		return // the context ended, which removed its calls
	}
	if w.calls--; w.calls == 0 {
		w.stop()
		delete(c.watches, cl.ctx)
	}
}

// stopWatches unhooks every context of a closing connection, whose
// pending calls all fail. c.mu is held.
func (c *Conn) stopWatches() {
	for ctx, w := range c.watches {
		w.stop()
		delete(c.watches, ctx)
	}
}

// contextEnded fails the pending calls made with ctx, which has ended,
// with its error.
func (c *Conn) contextEnded(ctx context.Context) {
	var ended []*call
	c.mu.Lock()
	if c.closed || c.watches[ctx] == nil {
		c.mu.Unlock()
		return // its calls ended meanwhile
	}
	c.hooks.Add(1)
	defer c.hooks.Done()
	delete(c.watches, ctx)
	for opaque, cl := range c.pending {
		if cl.ctx == ctx {
			delete(c.pending, opaque)
			c.unwatchDeadline(cl)
			ended = append(ended, cl)
		}
	}
	c.mu.Unlock()
	for _, cl := range ended {
		c.contextTimedOut(ctx, cl)
	}
	for _, cl := range ended {
		cl.finish(nil, contextError(ctx, c.describeCode(cl.code)))
	}
}
