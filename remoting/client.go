package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/internal/rawconn"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
)

// ClientConfig configures a Client. Zero values take the defaults.
type ClientConfig struct {
	// DialTimeout bounds a connection attempt (DefaultDialTimeout); the
	// caller's context bounds it too. It applies to Dial as well: Dial's
	// context carries the earlier of the two deadlines.
	DialTimeout time.Duration
	// Dial opens every connection the client makes, to the "host:port"
	// addr. Nil dials TCP with a net.Dialer. Tests and the chaos harness
	// set it to put faults on the client's links (refuse a dial, cut or
	// stall a connection). It is called from the goroutine of the call
	// that needs the connection (concurrent calls to one address share one
	// dial), and must honour ctx. An error it returns is wrapped, with %w,
	// in the error of every call waiting for that dial, unless ctx ended
	// first (the call then fails with the context's error).
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// TLS, if set, runs every connection over TLS: the handshake, on the
	// connection Dial (or TCP) opened, completes within DialTimeout. The
	// server name is the address's host unless the config names one
	// (tlsconf.ForAddr).
	TLS *tls.Config
	// MaxFrameSize bounds every frame read or written, length prefix
	// included (DefaultMaxFrameSize).
	MaxFrameSize int
	// WriteTimeout bounds one frame write (DefaultWriteTimeout); a write
	// that times out closes the connection. Negative disables it.
	WriteTimeout time.Duration
	// Logger receives the client's logs (hclog.NewNullLogger() if nil).
	Logger hclog.Logger
	// OnRequest serves requests the server sends to the client
	// (CHECK_TRANSACTION_STATE, NOTIFY_CONSUMER_IDS_CHANGED, …) on the
	// workers of RequestPool. Nil answers them RequestCodeNotSupported.
	OnRequest Handler
	// RequestPool sizes the workers that run OnRequest (default 4 workers,
	// 256 queued).
	RequestPool PoolConfig
	// RawSocketIO, on Linux, reads and writes the client's TCP
	// connections (TLS ones excepted) with raw system calls on their
	// non-blocking sockets rather than through the net package, sparing
	// the runtime's bookkeeping of a call that may block and the thread
	// switches it leads to (internal/rawconn): for a client with many
	// calls in flight. The bytes and the errors are the same.
	RawSocketIO bool
	// Sign, if set, is called on every request just before it is sent
	// (Invoke, InvokeAsync, InvokeOneway): a RocketMQ ACL signature
	// (package auth) for a client of brokers and name servers whose ACL
	// is on. A retried request is signed afresh.
	Sign func(*Command)
}

// Client sends requests to remoting servers over one pooled connection per
// address, dialled on first use and redialled after it dies. Responses are
// matched to requests by opaque, so any number of calls share a connection.
// A call that times out on a connection that read nothing at all while it
// waited closes that connection (ErrConnSilent): a peer gone without a
// word costs one call's timeout, and the next call dials afresh.
//
// Goroutines, all owned by the Client and finished when Close returns: one
// read goroutine per connection; the RequestPool workers running
// OnRequest; one short-lived goroutine per InvokeAsync completion, which
// runs the callback. All methods are safe for concurrent use.
type Client struct {
	cfg    ClientConfig
	logger hclog.Logger
	pool   *pool

	mu     sync.Mutex
	closed bool
	conns  map[string]*dialEntry
	wg     sync.WaitGroup // read goroutines and async callbacks

	// live maps each address to its connection once dialled, a snapshot
	// of conns replaced (under mu) whenever they change, and isClosed
	// mirrors closed: a call finds its connection without taking mu.
	live     atomic.Pointer[map[string]*Conn]
	isClosed atomic.Bool
}

// dialEntry is the connection to one address, or the dial in progress.
type dialEntry struct {
	ready chan struct{} // closed when conn or err is set
	conn  *Conn
	err   error
}

// NewClient returns a client; it dials nothing until the first call.
func NewClient(cfg ClientConfig) *Client {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.MaxFrameSize <= 0 {
		cfg.MaxFrameSize = DefaultMaxFrameSize
	}
	cfg.WriteTimeout = durationOrDefault(cfg.WriteTimeout, DefaultWriteTimeout)
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.RequestPool.Workers <= 0 {
		cfg.RequestPool.Workers = 4
	}
	if cfg.RequestPool.QueueSize <= 0 {
		cfg.RequestPool.QueueSize = 256
	}
	c := &Client{
		cfg:    cfg,
		logger: cfg.Logger,
		pool:   newPool("client-requests", cfg.RequestPool, cfg.Logger),
		conns:  make(map[string]*dialEntry),
	}
	c.pool.start()
	return c
}

// Invoke sends req to addr and waits for its response. The context's
// deadline is the call's timeout: when it passes the call fails with
// ErrTimeout (which also matches context.DeadlineExceeded) and a late
// response is dropped. If the connection dies first the call fails with
// ErrConnClosed; the next call redials. A response with a non-zero code is
// returned as a response, not an error (see CheckResponse). req is not
// modified: the opaque is assigned while encoding.
func (c *Client) Invoke(ctx context.Context, addr string, req *Command) (*Command, error) {
	return c.InvokeWith(ctx, addr, req, CallOptions{})
}

// InvokeWith is Invoke with options: a deadline kept by the connection
// rather than a timer of the caller's context, and the response's fields
// as a list. A dial waits for ctx only: a deadline bounds the call once it
// is on a connection (and is checked before).
func (c *Client) InvokeWith(ctx context.Context, addr string, req *Command, o CallOptions) (*Command, error) {
	if ctx.Err() != nil {
		return nil, contextError(ctx, fmt.Sprintf("%s to %s", RequestCodeName(req.Code), addr))
	}
	conn, err := c.conn(ctx, addr)
	if err != nil {
		return nil, err
	}
	c.sign(req)
	return conn.request(ctx, req, o)
}

// sign applies the config's Sign to req. A signer works on ExtFields, so
// a request built with ExtList has its fields moved there first.
func (c *Client) sign(req *Command) {
	if c.cfg.Sign != nil {
		if req.ExtFields == nil && len(req.ExtList) > 0 {
			req.ExtFields, req.ExtList = req.ExtMap(), nil
		}
		c.cfg.Sign(req)
	}
}

// InvokeAsync sends req to addr and returns once it is queued on the
// connection (dialling first if needed); cb receives the response or the
// error (ErrTimeout when ctx's deadline passes first, ErrConnClosed,
// ErrClosed) on a goroutine of its own. If InvokeAsync returns an error, cb
// is never called; otherwise it is called exactly once, and Close waits for
// it. A nil cb discards the outcome.
func (c *Client) InvokeAsync(ctx context.Context, addr string, req *Command, cb func(*Command, error)) error {
	what := fmt.Sprintf("%s to %s", RequestCodeName(req.Code), addr)
	if ctx.Err() != nil {
		return contextError(ctx, what)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.wg.Add(1) // released after cb has run
	c.mu.Unlock()

	conn, err := c.conn(ctx, addr)
	if err != nil {
		c.wg.Done()
		return err
	}
	ac := &asyncCall{cb: cb, wg: &c.wg}
	c.sign(req)
	cl, err := conn.start(req, ac.complete)
	if err != nil {
		c.wg.Done()
		return err
	}
	ac.setStop(context.AfterFunc(ctx, func() {
		if conn.forget(cl) {
			conn.contextTimedOut(ctx, cl)
			ac.complete(nil, contextError(ctx, what))
		}
	}))
	return nil
}

// InvokeOneway writes req to addr as a one-way request (FlagOneway set on
// the wire; req is not modified) and returns once it is queued. ctx bounds
// dialling only.
func (c *Client) InvokeOneway(ctx context.Context, addr string, req *Command) error {
	if ctx.Err() != nil {
		return contextError(ctx, fmt.Sprintf("%s to %s", RequestCodeName(req.Code), addr))
	}
	conn, err := c.conn(ctx, addr)
	if err != nil {
		return err
	}
	c.sign(req)
	return conn.Oneway(req)
}

// Close closes every connection (pending calls fail with ErrConnClosed),
// then waits for the read goroutines, the callbacks of InvokeAsync and the
// OnRequest workers. Calls made after Close fail with ErrClosed. Closing
// twice is a no-op. Close must not be called from an InvokeAsync callback
// or an OnRequest handler, which it would wait for.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.isClosed.Store(true)
	var conns []*Conn
	for _, e := range c.conns {
		select {
		case <-e.ready:
			if e.conn != nil {
				conns = append(conns, e.conn)
			}
		default: // a dial in progress closes its own result
		}
	}
	c.mu.Unlock()
	for _, conn := range conns {
		conn.closeWith(fmt.Errorf("%w: client closed", ErrClosed))
	}
	c.wg.Wait()
	c.pool.stop()
	return nil
}

// conn returns the live connection to addr, dialling if there is none.
// Concurrent callers share one dial.
func (c *Client) conn(ctx context.Context, addr string) (*Conn, error) {
	if addr == "" {
		return nil, errors.New("remoting: empty address")
	}
	if conn := c.liveConn(addr); conn != nil {
		return conn, nil
	}
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		e := c.conns[addr]
		if e == nil {
			e = &dialEntry{ready: make(chan struct{})}
			c.conns[addr] = e
			c.mu.Unlock()
			c.dial(ctx, addr, e)
		} else {
			c.mu.Unlock()
		}
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, contextError(ctx, "connect to "+addr)
		}
		if e.err != nil {
			return nil, e.err
		}
		if !e.conn.Closed() {
			return e.conn, nil
		}
		// The connection died; drop it and dial once more.
		c.mu.Lock()
		if c.conns[addr] == e {
			delete(c.conns, addr)
			c.publishLocked()
		}
		c.mu.Unlock()
		if attempt > 0 {
			return nil, e.conn.closedError()
		}
	}
}

// dial connects e to addr and starts its read goroutine, or records why it
// could not; either way it closes e.ready.
func (c *Client) dial(ctx context.Context, addr string, e *dialEntry) {
	nc, err := c.dialConn(ctx, addr)

	c.mu.Lock()
	defer c.mu.Unlock()
	defer close(e.ready)
	switch {
	case err != nil:
		if ctx.Err() != nil {
			e.err = contextError(ctx, "connect to "+addr)
		} else {
			e.err = fmt.Errorf("remoting: connect to %s: %w", addr, err)
		}
	case c.closed:
		_ = nc.Close()
		e.err = ErrClosed
	default:
		e.conn = newConn(nc, connConfig{
			maxFrame:     c.cfg.MaxFrameSize,
			writeTimeout: c.cfg.WriteTimeout,
			logger:       c.logger,
			dispatch:     c.dispatch,
			onClose:      func(conn *Conn) { c.connClosed(addr, conn) },
			closeSilent:  true,
		})
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			e.conn.readLoop()
		}()
		if c.conns[addr] == e {
			c.publishLocked()
		}
		c.logger.Debug("connected", "addr", addr, "conn", e.conn.id)
		return
	}
	if c.conns[addr] == e {
		delete(c.conns, addr)
	}
}

// publishLocked replaces the live snapshot with the dialled connections
// of conns. c.mu is held.
func (c *Client) publishLocked() {
	m := make(map[string]*Conn, len(c.conns))
	for addr, e := range c.conns {
		if e.conn != nil {
			m[addr] = e.conn
		}
	}
	c.live.Store(&m)
}

// dialConn opens the network connection to addr with the Dial hook, or
// over TCP when there is none, bounded by DialTimeout.
func (c *Client) dialConn(ctx context.Context, addr string) (net.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
	defer cancel()
	var nc net.Conn
	var err error
	if c.cfg.Dial == nil {
		var d net.Dialer
		nc, err = d.DialContext(dctx, "tcp", addr)
	} else {
		nc, err = c.cfg.Dial(dctx, addr)
	}
	switch {
	case err != nil && nc != nil:
		_ = nc.Close()
		return nil, err
	case err == nil && nc == nil:
		return nil, errors.New("dial hook returned neither a connection nor an error")
	case err != nil:
		return nil, err
	}
	if c.cfg.TLS == nil {
		if c.cfg.RawSocketIO {
			return rawconn.Wrap(nc), nil
		}
		return nc, nil
	}
	tc := tls.Client(nc, tlsconf.ForAddr(c.cfg.TLS, addr))
	if err := tc.HandshakeContext(dctx); err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}

// connClosed forgets a dead connection so that the next call redials.
func (c *Client) connClosed(addr string, conn *Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.conns[addr]; e != nil && e.conn == conn {
		delete(c.conns, addr)
		c.publishLocked()
	}
}

// dispatch hands a server-to-client request to the OnRequest workers. A
// client has no read budget, so held is always 0.
func (c *Client) dispatch(conn *Conn, req *Command, _ int64) {
	if c.cfg.OnRequest == nil {
		if !req.IsOneway() {
			conn.reply(req, notSupportedResponse(req))
		}
		return
	}
	conn.inflight.Add(1)
	if !c.pool.submit(task{conn: conn, req: req, h: c.cfg.OnRequest}) {
		conn.inflight.Add(-1)
		if !req.IsOneway() {
			conn.reply(req, busyResponse(req, c.pool.name))
		}
	}
}

// asyncCall delivers one InvokeAsync outcome.
type asyncCall struct {
	cb func(*Command, error)
	wg *sync.WaitGroup

	mu   sync.Mutex
	done bool
	stop func() bool // unregisters the context watch
}

// complete runs cb on its own goroutine and releases the context watch. It
// is called exactly once per started call.
func (a *asyncCall) complete(resp *Command, err error) {
	a.mu.Lock()
	a.done = true
	stop := a.stop
	a.stop = nil
	a.mu.Unlock()
	if stop != nil {
		stop()
	}
	go func() {
		defer a.wg.Done()
		if a.cb != nil {
			a.cb(resp, err)
		}
	}()
}

// setStop records the context watch, or releases it at once if the call
// already completed.
func (a *asyncCall) setStop(stop func() bool) {
	a.mu.Lock()
	if a.done {
		a.mu.Unlock()
		stop()
		return
	}
	a.stop = stop
	a.mu.Unlock()
}
