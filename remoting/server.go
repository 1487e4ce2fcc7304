package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/internal/rawconn"
)

// Defaults of ServerConfig and ClientConfig.
const (
	DefaultIdleTimeout  = 120 * time.Second
	DefaultWriteTimeout = 30 * time.Second
	DefaultDialTimeout  = 3 * time.Second
	// DefaultHandshakeTimeout bounds a server's TLS handshake.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultPool is the pool every server has; codes registered without
	// a pool of their own use it.
	DefaultPool = "default"
)

// ServerConfig configures a Server. Zero values take the defaults.
type ServerConfig struct {
	// Addr is the TCP address to listen on; "127.0.0.1:0" picks a port.
	Addr string
	// Listener, if set, is served instead of listening on Addr (a caller
	// that must know the address before the server starts binds it
	// first). The server closes it on Close.
	Listener net.Listener
	// TLS, if set, serves TLS only: every accepted connection must
	// complete a handshake within HandshakeTimeout before its first frame
	// is read, and one that does not (a plaintext client among them) is
	// closed. Package internal/tlsconf builds a config that follows its
	// files.
	TLS *tls.Config
	// HandshakeTimeout bounds the TLS handshake (DefaultHandshakeTimeout).
	HandshakeTimeout time.Duration
	// MaxFrameSize bounds every frame read or written, length prefix
	// included (DefaultMaxFrameSize). A peer that announces a larger frame
	// is disconnected.
	MaxFrameSize int
	// IdleTimeout closes a connection that delivers no frame for this long
	// (DefaultIdleTimeout); negative disables it.
	IdleTimeout time.Duration
	// WriteTimeout bounds one frame write (DefaultWriteTimeout); a write
	// that times out closes the connection. Negative disables it.
	WriteTimeout time.Duration
	// Pools are the named worker pools ("send", "pull", "admin",
	// "heartbeat", …). DefaultPool is added when missing.
	Pools map[string]PoolConfig
	// Limits bound what peers can make the server hold: the read budget,
	// connections, requests in flight per connection, header sizes.
	Limits Limits
	// LargeBodyCodes are the request codes whose body may exceed
	// SmallFrameSize (sends, registrations, …). A request with another
	// code and a larger body is answered SYSTEM_ERROR as soon as its
	// header is decoded, and its body is discarded without being held.
	// Nil allows every code; responses are never limited this way.
	LargeBodyCodes []int32
	// LargeBodyField, if set, is an ext field a request's header must
	// carry, not empty, for a body above SmallFrameSize to be read: the
	// signature field where requests must be signed, so a peer that does
	// not even claim to be authenticated is refused a large body as
	// LargeBodyCodes refuses one (the signature itself covers the body
	// and is checked by the handler).
	LargeBodyField string
	// ListCodes are the request codes whose ext fields a connection
	// decodes into ExtList and not ExtFields, for handlers of hot
	// requests that read a known set of fields (Command.Ext, or ExtMap
	// for a map; a repeated key reads as its last value either way).
	ListCodes []int32
	// Logger receives the server's logs (hclog.NewNullLogger() if nil).
	Logger hclog.Logger
	// OnConnClose, if set, is called once per accepted connection after it
	// has closed (by either side, an I/O error, a bad frame, the idle
	// timeout or Close), on that connection's read goroutine. Close waits
	// for these calls.
	OnConnClose func(*Conn)
}

// route is where requests of one code go.
type route struct {
	pool *pool
	h    Handler
}

// Server accepts connections and serves requests by code. Register
// handlers with Handle, then Start; Close stops everything it started.
//
// Goroutines, all owned by the Server and all finished when Close returns:
// one accept loop; the stall watcher (stall.go); one read goroutine per
// connection, which decodes frames and dispatches each request to its
// code's pool (answering RequestCodeNotSupported or SystemBusy itself);
// the workers of every pool, which run handlers and write their responses.
type Server struct {
	cfg      ServerConfig
	logger   hclog.Logger
	pools    map[string]*pool
	budget   *budget
	readBufs *readBuffers
	refusal  refusalLog

	inflight atomic.Int64 // requests queued or being handled, all connections
	// draining: Close has begun; new requests are refused (drainResponse)
	// while those in flight finish and are answered.
	draining      atomic.Bool
	refusedConns  atomic.Uint64 // connections closed at accept for MaxConns
	busyInFlight  atomic.Uint64 // requests answered SystemBusy for MaxInFlightPerConn
	stalledCloses atomic.Uint64 // connections closed for a frame that did not arrive
	refusedBodies atomic.Uint64 // large bodies refused for their request code
	largeBody     func(*Command) bool

	hmu    sync.Mutex                      // serializes Handle
	routes atomic.Pointer[map[int32]route] // copy-on-write

	mu      sync.Mutex
	started bool
	closed  bool
	ln      net.Listener
	conns   map[*Conn]struct{}
	quit    chan struct{}
	connWG  sync.WaitGroup // accept loop and read goroutines
}

// NewServer returns a server that is not listening yet.
func NewServer(cfg ServerConfig) *Server {
	if cfg.MaxFrameSize <= 0 {
		cfg.MaxFrameSize = DefaultMaxFrameSize
	}
	cfg.IdleTimeout = durationOrDefault(cfg.IdleTimeout, DefaultIdleTimeout)
	cfg.WriteTimeout = durationOrDefault(cfg.WriteTimeout, DefaultWriteTimeout)
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	cfg.Limits = cfg.Limits.withDefaults(cfg.MaxFrameSize)
	pools := maps.Clone(cfg.Pools)
	if pools == nil {
		pools = make(map[string]PoolConfig)
	}
	if _, ok := pools[DefaultPool]; !ok {
		pools[DefaultPool] = DefaultPoolConfig
	}
	cfg.Pools = pools
	s := &Server{
		cfg:      cfg,
		logger:   cfg.Logger,
		pools:    make(map[string]*pool, len(pools)),
		conns:    make(map[*Conn]struct{}),
		quit:     make(chan struct{}),
		budget:   newBudget(cfg.Limits.ReadBudget, cfg.Limits.ReadReserve, cfg.Limits.MaxConnShare),
		readBufs: newReadBuffers(cfg.Limits.MaxLargeReadBuffers),
	}
	if cfg.LargeBodyCodes != nil || cfg.LargeBodyField != "" {
		var allowed map[int32]bool
		if cfg.LargeBodyCodes != nil {
			allowed = make(map[int32]bool, len(cfg.LargeBodyCodes))
			for _, code := range cfg.LargeBodyCodes {
				allowed[code] = true
			}
		}
		field := cfg.LargeBodyField
		s.largeBody = func(req *Command) bool {
			if allowed != nil && !allowed[req.Code] {
				return false
			}
			v, _ := req.Ext(field)
			return field == "" || v != ""
		}
	}
	s.refusal = refusalLog{logger: cfg.Logger, now: time.Now}
	for name, pc := range pools {
		s.pools[name] = newPool(name, pc, cfg.Logger)
	}
	empty := map[int32]route{}
	s.routes.Store(&empty)
	return s
}

// durationOrDefault maps 0 to def and a negative value to 0 (disabled).
func durationOrDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// Handle routes requests with the given code to h, run on the named pool
// ("" means DefaultPool). A later registration of the same code replaces
// the earlier one. Register before Start; registering later is safe but
// races with requests already arriving. It panics on a nil handler or a
// pool the ServerConfig did not declare: both are programming errors.
func (s *Server) Handle(code int32, pool string, h Handler) {
	if h == nil {
		panic("remoting: Handle with a nil handler")
	}
	if pool == "" {
		pool = DefaultPool
	}
	p, ok := s.pools[pool]
	if !ok {
		panic(fmt.Sprintf("remoting: Handle(%d): unknown pool %q", code, pool))
	}
	s.hmu.Lock()
	defer s.hmu.Unlock()
	next := maps.Clone(*s.routes.Load())
	next[code] = route{pool: p, h: h}
	s.routes.Store(&next)
}

// Codes returns the request codes that have a handler, in ascending order.
func (s *Server) Codes() []int32 {
	return slices.Sorted(maps.Keys(*s.routes.Load()))
}

// Start listens on cfg.Addr and starts the workers and the accept loop. It
// fails if the server was started or closed before, or if listening fails.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.started {
		return errors.New("remoting: server already started")
	}
	ln := s.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.Addr); err != nil {
			return fmt.Errorf("remoting: listen on %q: %w", s.cfg.Addr, err)
		}
	}
	s.ln = ln
	s.started = true
	for _, p := range s.pools {
		p.start()
	}
	s.connWG.Add(2)
	go s.acceptLoop(ln)
	go s.watchStalls()
	s.logger.Info("remoting server listening", "addr", ln.Addr().String())
	return nil
}

// Addr is the listening address (nil before Start).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// PoolStats returns a snapshot of every pool's counters, by pool name. Safe
// for concurrent use.
func (s *Server) PoolStats() map[string]PoolStats {
	out := make(map[string]PoolStats, len(s.pools))
	for name, p := range s.pools {
		out[name] = p.stats()
	}
	return out
}

// ConnCount is the number of open connections.
func (s *Server) ConnCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// HeldBytes is how much of the read budget requests hold now: frames being
// read (at their announced length), queued and being handled.
func (s *Server) HeldBytes() int64 {
	return s.budget.stats().held
}

// ServerStats is a snapshot of what a server holds and what its limits
// refused.
type ServerStats struct {
	Conns         int    `json:"conns"`         // open connections
	HeldBytes     int64  `json:"heldBytes"`     // read budget held (see HeldBytes)
	ReadBudget    int64  `json:"readBudget"`    // the budget's size
	ReadReserve   int64  `json:"readReserve"`   // the part of it only small frames may use
	ReadWaiting   int    `json:"readWaiting"`   // connections waiting for the budget now
	ReadWaits     uint64 `json:"readWaits"`     // frames that had to wait for the budget
	StarvedReads  uint64 `json:"starvedReads"`  // small frames that had to wait (the reserve was used up)
	StalledCloses uint64 `json:"stalledCloses"` // connections closed for a frame that did not arrive in time
	RefusedBodies uint64 `json:"refusedBodies"` // large bodies refused for their request code
	InFlight      int64  `json:"inFlight"`      // requests queued or being handled
	RefusedConns  uint64 `json:"refusedConns"`  // connections closed at accept for MaxConns
	BusyInFlight  uint64 `json:"busyInFlight"`  // requests answered SystemBusy for MaxInFlightPerConn
}

// Stats returns the server's counters. Safe for concurrent use.
func (s *Server) Stats() ServerStats {
	b := s.budget.stats()
	return ServerStats{
		Conns:         s.ConnCount(),
		HeldBytes:     b.held,
		ReadBudget:    s.budget.limit,
		ReadReserve:   s.budget.reserve,
		ReadWaiting:   b.waiting,
		ReadWaits:     b.waits,
		StarvedReads:  b.starved,
		StalledCloses: s.stalledCloses.Load(),
		RefusedBodies: s.refusedBodies.Load(),
		InFlight:      s.inflight.Load(),
		RefusedConns:  s.refusedConns.Load(),
		BusyInFlight:  s.busyInFlight.Load(),
	}
}

// Close shuts the server down in two phases. First it stops accepting and
// drains: a request that arrives now is answered SERVICE_NOT_AVAILABLE
// (certainly not handled, so clients retry elsewhere), and the requests
// already in flight run to the end with their answers delivered, for at
// most DrainTimeout (or until ctx ends). Then it closes every connection
// (their pending server-to-client calls fail with ErrConnClosed), lets the
// workers finish anything still queued (those answers are not delivered),
// and waits for all goroutines and OnConnClose calls. If ctx ends first it
// returns ctx's error while the shutdown completes in the background.
// Closing twice is a no-op, even while the first Close is still
// finishing. Safe for concurrent use, but a handler that calls Close waits
// for itself until ctx ends.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.draining.Store(true)
	ln := s.ln
	s.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	s.drain(ctx)

	s.mu.Lock()
	close(s.quit)
	conns := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	started := s.started
	s.mu.Unlock()

	for _, c := range conns {
		c.closeWith(fmt.Errorf("%w: server shutting down", ErrClosed))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.connWG.Wait() // no read goroutine left to submit work
		if started {
			for _, p := range s.pools {
				p.stop()
			}
		}
	}()
	select {
	case <-done:
		if ln != nil {
			s.logger.Info("remoting server closed", "addr", ln.Addr().String())
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("remoting: server close: %w", ctx.Err())
	}
}

// DrainTimeout bounds how long Close waits for the requests in flight to
// be answered before it closes the connections.
const DrainTimeout = 5 * time.Second

// drain waits until no request is in flight, DrainTimeout passes or ctx
// ends.
func (s *Server) drain(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, DrainTimeout)
	defer cancel()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for s.inflight.Load() > 0 {
		select {
		case <-ctx.Done():
			s.logger.Warn("closing with requests still in flight; their answers are lost", "inflight", s.inflight.Load())
			return
		case <-t.C:
		}
	}
}

// acceptLoop accepts connections until the listener closes. Errors other
// than the listener closing (running out of file descriptors, say) are
// logged and retried with a growing pause.
func (s *Server) acceptLoop(ln net.Listener) {
	defer s.connWG.Done()
	var pause time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-s.quit:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			s.logger.Warn("accept failed", "error", err, "retry_in", pause)
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-s.quit:
				t.Stop()
				return
			}
			continue
		}
		pause = 0
		s.serveConn(nc)
	}
}

// serveConn registers an accepted connection and starts its read
// goroutine, or closes it at once when MaxConns are open.
func (s *Server) serveConn(nc net.Conn) {
	if s.cfg.TLS != nil {
		nc = tls.Server(nc, s.cfg.TLS)
	} else {
		nc = rawconn.Wrap(nc) // see internal/rawconn
	}
	c := newConn(nc, connConfig{
		maxFrame:      s.cfg.MaxFrameSize,
		idleTimeout:   s.cfg.IdleTimeout,
		writeTimeout:  s.cfg.WriteTimeout,
		logger:        s.logger,
		header:        s.cfg.Limits.Header,
		listCodes:     slices.Clone(s.cfg.ListCodes),
		budget:        s.budget,
		readBufs:      s.readBufs,
		frameTimeout:  s.cfg.Limits.FrameTimeout,
		minRate:       s.cfg.Limits.MinReadRate,
		largeBody:     s.largeBody,
		stalls:        &s.stalledCloses,
		refusedBodies: &s.refusedBodies,
		inflight:      &s.inflight,
		dispatch:      s.dispatch,
		onClose:       s.connClosed,
	})
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = nc.Close()
		return
	}
	if limit := s.cfg.Limits.MaxConns; limit > 0 && len(s.conns) >= limit {
		s.mu.Unlock()
		s.refusedConns.Add(1) // counted before the peer can see the close
		_ = nc.Close()
		s.refusal.refused(nc.RemoteAddr().String(), limit)
		return
	}
	s.conns[c] = struct{}{}
	s.connWG.Add(1)
	s.mu.Unlock()
	s.logger.Debug("connection accepted", "peer", nc.RemoteAddr(), "conn", c.id)
	go func() {
		defer s.connWG.Done()
		if tc, ok := nc.(*tls.Conn); ok {
			if err := s.handshake(tc); err != nil {
				s.logger.Debug("TLS handshake failed", "peer", nc.RemoteAddr(), "conn", c.id, "error", err)
				c.closeWith(fmt.Errorf("TLS handshake: %w", err))
				s.connClosed(c)
				return
			}
		}
		c.readLoop()
	}()
}

// handshake runs the TLS handshake of an accepted connection, bounded by
// HandshakeTimeout (Close ends it sooner by closing the connection).
func (s *Server) handshake(tc *tls.Conn) error {
	_ = tc.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	if err := tc.Handshake(); err != nil {
		return err
	}
	return tc.SetDeadline(time.Time{})
}

// connClosed is the close hook of every accepted connection.
func (s *Server) connClosed(c *Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	if s.cfg.OnConnClose != nil {
		s.cfg.OnConnClose(c)
	}
}

// dispatch runs on a connection's read goroutine: it queues req on its
// code's pool, or answers at once when there is no handler, the
// connection has MaxInFlightPerConn requests in flight, or the pool's queue
// is full. A request answered at once gives its budget bytes back before
// the answer is written.
func (s *Server) dispatch(c *Conn, req *Command, held int64) {
	r, ok := (*s.routes.Load())[req.Code]
	if !ok {
		c.release(held)
		s.logger.Debug("request code not supported", "peer", c.RemoteAddr(), "code", req.Code)
		if !req.IsOneway() {
			c.reply(req, notSupportedResponse(req))
		}
		return
	}
	if s.draining.Load() {
		c.release(held)
		if !req.IsOneway() {
			c.reply(req, NewResponse(req, ServiceNotAvailable, "the server is shutting down; try another node"))
		}
		return
	}
	if limit := s.cfg.Limits.MaxInFlightPerConn; limit > 0 && c.inflight.Load() >= int64(limit) {
		c.release(held)
		s.busyInFlight.Add(1)
		s.logger.Debug("connection has too many requests in flight, answering SYSTEM_BUSY",
			"peer", c.RemoteAddr(), "limit", limit, "request", RequestCodeName(req.Code))
		if !req.IsOneway() {
			c.reply(req, NewResponse(req, SystemBusy, fmt.Sprintf(
				"[TOO_MANY_REQUESTS] more than %d requests in flight on this connection, try again later", limit)))
		}
		return
	}
	c.inflight.Add(1)
	s.inflight.Add(1)
	t := task{conn: c, req: req, h: r.h, held: held}
	if ih, ok := r.h.(InlineHandler); ok && r.pool.callInline(t, ih) {
		return
	}
	if !r.pool.submit(t) {
		c.inflight.Add(-1)
		s.inflight.Add(-1)
		c.release(held)
		s.logger.Debug("pool full, answering SYSTEM_BUSY", "pool", r.pool.name,
			"peer", c.RemoteAddr(), "request", RequestCodeName(req.Code))
		if !req.IsOneway() {
			c.reply(req, busyResponse(req, r.pool.name))
		}
	}
}
