package remoting

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// Handler serves one request. It runs on a worker goroutine of the pool its
// code was registered with; ctx is the connection's context (cancelled when
// the connection or the server closes). The returned command is sent as the
// response, with the request's opaque and FlagResponse forced; nil sends
// nothing, which is how a handler that answers later (long polling, via
// conn.WriteCommand) or a one-way handler declines. For a request with
// FlagOneway the response is discarded. A panic is recovered, logged and
// answered with SystemError.
type Handler interface {
	Serve(ctx context.Context, conn *Conn, req *Command) *Command
}

// Reply answers one request of an AsyncHandler. The first call counts;
// later ones do nothing. nil answers nothing (as a Handler's nil does).
type Reply func(resp *Command)

// AsyncHandler serves one request without holding its worker until the
// answer is known: ServeAsync starts the work and returns, and reply is
// called once, by whichever goroutine finishes it (or by ServeAsync
// itself). Until then the request counts in its connection's requests in
// flight and holds its read budget, as a Handler's does while it runs.
// The answer is queued on the connection without writing to the socket
// on the caller's goroutine (a flusher of the connection's does), so one
// goroutine can answer requests of many connections without a slow peer
// holding it up. A panic in ServeAsync before reply is answered with
// SystemError. reply must be called exactly once, also when the
// connection closes meanwhile.
type AsyncHandler interface {
	ServeAsync(ctx context.Context, conn *Conn, req *Command, reply Reply)
}

// InlineHandler is an AsyncHandler that starts most requests on the
// connection's read goroutine, which saves a hand-off to a worker (and
// often a thread wake-up) per request. ServeInline must not wait for
// anything (disk, network, a lock held long): it either starts req and
// reports true — reply is then called once, as ServeAsync's — or reports
// false having answered nothing, and the request goes to a worker of its
// pool, which calls ServeAsync. A request started inline counts in its
// connection's requests in flight and holds its read budget until
// answered, as any other, and in its pool's counters. ServeInline's ctx
// says that it runs inline (Inline), so that code shared with the worker
// path can decline to wait; it is made once per connection.
type InlineHandler interface {
	AsyncHandler
	ServeInline(ctx context.Context, conn *Conn, req *Command, reply Reply) bool
}

// inlineKey marks the context InlineHandler.ServeInline is called with.
type inlineKey struct{}

// Inline reports whether ctx is (or derives from) the context of an
// InlineHandler.ServeInline call: the caller runs on a connection's read
// goroutine and must not wait.
func Inline(ctx context.Context) bool { return ctx.Value(inlineKey{}) != nil }

// Detached returns ctx without the Inline mark, for the work a
// ServeInline call hands to a goroutine of its own (which may wait).
func Detached(ctx context.Context) context.Context {
	if !Inline(ctx) {
		return ctx
	}
	return notInline{ctx}
}

// notInline hides the Inline mark of the context it wraps.
type notInline struct{ context.Context }

func (c notInline) Value(key any) any {
	if _, ok := key.(inlineKey); ok {
		return nil
	}
	return c.Context.Value(key)
}

// AsyncHandlerFunc adapts a function to AsyncHandler (and Handler, for
// registration).
type AsyncHandlerFunc func(ctx context.Context, conn *Conn, req *Command, reply Reply)

// ServeAsync calls f.
func (f AsyncHandlerFunc) ServeAsync(ctx context.Context, conn *Conn, req *Command, reply Reply) {
	f(ctx, conn, req, reply)
}

// Serve runs f and waits for its answer; the pool calls ServeAsync
// instead.
func (f AsyncHandlerFunc) Serve(ctx context.Context, conn *Conn, req *Command) *Command {
	ch := make(chan *Command, 1)
	f(ctx, conn, req, func(resp *Command) { ch <- resp })
	return <-ch
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, conn *Conn, req *Command) *Command

// Serve calls f.
func (f HandlerFunc) Serve(ctx context.Context, conn *Conn, req *Command) *Command {
	return f(ctx, conn, req)
}

// PoolConfig sizes a worker pool: Workers goroutines take requests from a
// queue of QueueSize slots. A request that finds the queue full is answered
// with SystemBusy at once instead of waiting, so one flooded pool cannot
// hold up the others. Zero values mean the DefaultPoolConfig values.
type PoolConfig struct {
	Workers   int
	QueueSize int
}

// DefaultPoolConfig fills the zero fields of a PoolConfig.
var DefaultPoolConfig = PoolConfig{Workers: 8, QueueSize: 1024}

func (p PoolConfig) withDefaults() PoolConfig {
	if p.Workers <= 0 {
		p.Workers = DefaultPoolConfig.Workers
	}
	if p.QueueSize <= 0 {
		p.QueueSize = DefaultPoolConfig.QueueSize
	}
	return p
}

// PoolStats is a snapshot of one pool's counters.
type PoolStats struct {
	Workers   int
	QueueSize int
	Queued    int    // requests waiting now
	Handled   uint64 // requests a handler has finished
	Rejected  uint64 // requests answered SystemBusy because the queue was full
}

// task is one request waiting for a worker. It counts in its connection's
// requests in flight and holds held bytes of its owner's read budget until
// the handler returns.
type task struct {
	conn *Conn
	req  *Command
	h    Handler
	held int64
}

// pool is a fixed set of workers behind a bounded queue. Producers are the
// read goroutines of connections; stop may only be called once they have
// all returned.
type pool struct {
	name     string
	cfg      PoolConfig
	logger   hclog.Logger
	queue    chan task
	wg       sync.WaitGroup
	handled  atomic.Uint64
	rejected atomic.Uint64
}

func newPool(name string, cfg PoolConfig, logger hclog.Logger) *pool {
	cfg = cfg.withDefaults()
	return &pool{
		name:   name,
		cfg:    cfg,
		logger: logger,
		queue:  make(chan task, cfg.QueueSize),
	}
}

// start launches the workers.
func (p *pool) start() {
	for range p.cfg.Workers {
		p.wg.Add(1)
		go p.work()
	}
}

// submit queues t, or reports false when the queue is full.
func (p *pool) submit(t task) bool {
	select {
	case p.queue <- t:
		return true
	default:
		p.rejected.Add(1)
		return false
	}
}

// stop closes the queue and waits for the workers to finish what is queued.
func (p *pool) stop() {
	close(p.queue)
	p.wg.Wait()
}

func (p *pool) work() {
	defer p.wg.Done()
	for t := range p.queue {
		if ah, ok := t.h.(AsyncHandler); ok {
			p.callAsync(t, ah)
			continue
		}
		resp := p.call(t)
		p.handled.Add(1)
		t.conn.finish(t.held)
		if resp != nil && !t.req.IsOneway() {
			t.conn.reply(t.req, resp)
		}
	}
}

// call runs the handler, turning a panic into a SystemError response.
func (p *pool) call(t task) (resp *Command) {
	defer func() {
		if r := recover(); r != nil {
			p.logger.Error("handler panicked", "pool", p.name, "request", RequestCodeName(t.req.Code),
				"peer", t.conn.RemoteAddr(), "panic", r, "stack", string(debug.Stack()))
			resp = NewResponse(t.req, SystemError,
				fmt.Sprintf("internal error serving request type %d", t.req.Code))
		}
	}()
	return t.h.Serve(t.conn.ctx, t.conn, t.req)
}

// callAsync starts an AsyncHandler with its Reply.
func (p *pool) callAsync(t task, ah AsyncHandler) {
	p.begin(t, func(reply Reply) bool {
		ah.ServeAsync(t.conn.ctx, t.conn, t.req, reply)
		return true
	})
}

// callInline starts an InlineHandler on the caller's goroutine (a
// connection's read goroutine) and reports whether it took the request.
func (p *pool) callInline(t task, ih InlineHandler) bool {
	return p.begin(t, func(reply Reply) bool {
		return ih.ServeInline(t.conn.inlineCtx, t.conn, t.req, reply)
	})
}

// begin runs serve with the request's Reply, turning a panic into a
// SystemError answer; it reports what serve reports (true once it
// panicked: the request is answered).
func (p *pool) begin(t task, serve func(Reply) bool) (taken bool) {
	var once atomic.Bool
	reply := func(resp *Command) {
		if !once.CompareAndSwap(false, true) {
			return
		}
		p.handled.Add(1)
		if resp != nil && !t.req.IsOneway() {
			// Queued before the request stops counting: what a
			// connection has queued stays bounded by its requests in
			// flight.
			t.conn.replyDetached(t.req, resp)
		}
		t.conn.finish(t.held)
	}
	defer func() {
		if r := recover(); r != nil {
			p.logger.Error("handler panicked", "pool", p.name, "request", RequestCodeName(t.req.Code),
				"peer", t.conn.RemoteAddr(), "panic", r, "stack", string(debug.Stack()))
			reply(NewResponse(t.req, SystemError, fmt.Sprintf("internal error serving request type %d", t.req.Code)))
			taken = true
		}
	}()
	return serve(reply)
}

func (p *pool) stats() PoolStats {
	return PoolStats{
		Workers:   p.cfg.Workers,
		QueueSize: p.cfg.QueueSize,
		Queued:    len(p.queue),
		Handled:   p.handled.Load(),
		Rejected:  p.rejected.Load(),
	}
}

// busyResponse is the answer to a request whose pool queue is full.
func busyResponse(req *Command, pool string) *Command {
	return NewResponse(req, SystemBusy,
		fmt.Sprintf("[TOO_MANY_REQUESTS] pool %q is full, try again later", pool))
}

// notSupportedResponse is the answer to a request code without a handler.
func notSupportedResponse(req *Command) *Command {
	return NewResponse(req, RequestCodeNotSupported,
		fmt.Sprintf("request type %d not supported", req.Code))
}
