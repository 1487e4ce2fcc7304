package routing

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/acl"
	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/remoting"
)

// Worker pools of the name server's remoting server.
const (
	// PoolHeartbeat runs REGISTER_BROKER and UNREGISTER_BROKER on one
	// worker, so the registrations of a connection apply in the order
	// they were sent (a broker's role change is never overtaken by its
	// older periodic registration).
	PoolHeartbeat = "heartbeat"
)

// heartbeatPool sizes PoolHeartbeat: one worker (ordering), a deep queue.
var heartbeatPool = remoting.PoolConfig{Workers: 1, QueueSize: 4096}

// Server is a name server: a RouteTable served over the remoting protocol,
// and the scan that expires silent brokers. Name servers share nothing:
// run any number of them, brokers register with each.
//
// Goroutines, all owned by the Server and finished when Close returns: the
// remoting server's (accept loop, one reader per connection, pool
// workers: handlers run there, and the connection-close hook that drops a
// closed connection's brokers runs on the reader), one scan goroutine
// that expires members every ScanInterval, and the confirmation workers
// (and the default Checker's client) that ask claimed nodes about
// registrations. Every method is safe for concurrent use.
type Server struct {
	cfg   Config
	log   hclog.Logger
	clock Clock
	table *RouteTable
	// kv is the KV configuration (kv.go).
	kv *kvConfig
	rs *remoting.Server
	// confirm holds registrations until their node confirms them; its
	// checker's client (nil with a Checker from Config) is closed by Close.
	confirm       *confirmer
	checkerClient *remoting.Client
	// guard refuses stale and replayed signed requests (nil: neither a
	// secret nor the ACL).
	guard *auth.Guard
	// aclFile is the access control in force (nil: ACL off; acl.go).
	aclFile *acl.File
	limit   *logLimiter
	// counts are the figures Stats reports.
	counts counters

	mu        sync.Mutex
	startedAt time.Time // for TopicGrace
	started   bool
	closed    bool
	quit      chan struct{}
	wg        sync.WaitGroup // scan and ACL reload goroutines
}

// NewServer validates cfg and returns a name server that is not listening
// yet.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	kv, err := loadKVConfig(cfg.KVConfigPath)
	if err != nil {
		return nil, err
	}
	s := &Server{
		kv:    kv,
		cfg:   cfg,
		log:   cfg.Logger,
		clock: cfg.Clock,
		table: NewRouteTable(cfg.BrokerExpiry),
		limit: newLogLimiter(cfg.Clock, logEvery),
		quit:  make(chan struct{}),
	}
	limits := cfg.Limits
	if limits.ReadBudget == 0 {
		limits.ReadBudget = DefaultReadBudget
	}
	if cfg.Secret != "" || cfg.ACLEnable {
		s.guard = auth.NewGuard(cfg.SignWindow)
	}
	if cfg.ACLEnable {
		f, err := acl.LoadFile(cfg.ACLFile)
		if err != nil {
			return nil, fmt.Errorf("routing: %w", err)
		}
		s.aclFile = f
		cfg.Logger.Info("ACL loaded", "file", cfg.ACLFile, "accounts", f.Rules().Accounts())
	}
	checker := cfg.Checker
	if checker == nil {
		s.checkerClient = remoting.NewClient(remoting.ClientConfig{
			DialTimeout: cfg.ConfirmTimeout,
			// A RAFT_STATUS answer is a few KiB: a node that sends more
			// is cut off rather than buffered.
			MaxFrameSize: maxStatusFrame,
			Logger:       cfg.Logger.Named("confirm"),
			TLS:          cfg.TLSClient,
		})
		checker = RaftStatusChecker{Client: s.checkerClient, Timeout: cfg.ConfirmTimeout}
	}
	s.confirm = newConfirmer(s, checker)
	s.rs = remoting.NewServer(remoting.ServerConfig{
		Addr:   cfg.Addr,
		TLS:    cfg.TLSServer,
		Limits: limits,
		// Only registrations carry large bodies; where they must be
		// signed, an unsigned one is refused its body before it is read.
		LargeBodyCodes: LargeBodyCodes,
		LargeBodyField: largeBodyField(cfg),
		Pools:          map[string]remoting.PoolConfig{PoolHeartbeat: heartbeatPool},
		Logger:         cfg.Logger.Named("remoting"),
		OnConnClose:    s.connClosed,
	})
	if err := s.handle(s.rs); err != nil {
		return nil, err
	}
	return s, nil
}

// LargeBodyCodes are the requests whose body may exceed
// remoting.SmallFrameSize on a name server: a registration of 10 000
// topics is about 2 MiB; every other request is a header.
var LargeBodyCodes = []int32{remoting.RegisterBroker}

// largeBodyField is the ext field a large body's header must carry: the
// signature when registrations (cluster secret) or all requests (ACL) must
// be signed.
func largeBodyField(cfg Config) string {
	if cfg.Secret != "" || cfg.ACLEnable {
		return auth.FieldSignature
	}
	return ""
}

// ReadHealth is nil while the name server reads new requests
// (remoting.Server.ReadHealth); /readyz reports it.
func (s *Server) ReadHealth() error { return s.rs.ReadHealth() }

// Table is the server's route table (for admin tools and tests).
func (s *Server) Table() *RouteTable { return s.table }

// Start listens and starts the expiry scan. It fails if the server was
// started or closed before, or if listening fails.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.started {
		return errors.New("routing: server already started")
	}
	if err := s.rs.Start(); err != nil {
		return fmt.Errorf("routing: %w", err)
	}
	s.started = true
	s.startedAt = s.clock.Now()
	s.confirm.start()
	ticker := s.clock.NewTicker(s.cfg.ScanInterval)
	s.wg.Add(1)
	go s.scanLoop(ticker)
	if s.aclFile != nil {
		s.wg.Add(1)
		go s.aclReloadLoop(s.clock.NewTicker(s.cfg.ACLReloadInterval))
	}
	s.log.Info("name server started", "addr", s.rs.Addr().String(), "config", s.cfg.String())
	return nil
}

// Addr is the listening address (nil before Start).
func (s *Server) Addr() net.Addr { return s.rs.Addr() }

// Close stops the scan and the remoting server (connections closed,
// queued requests finished, goroutines waited for). If ctx ends first it
// returns ctx's error while the shutdown completes in the background.
// Closing twice is a no-op.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.quit)
	s.mu.Unlock()

	err := s.rs.Close(ctx)
	done := make(chan struct{})
	go func() {
		s.confirm.stop()
		if s.checkerClient != nil {
			_ = s.checkerClient.Close()
		}
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return errors.Join(err, fmt.Errorf("routing: close: %w", ctx.Err()))
	}
	if err != nil {
		return fmt.Errorf("routing: close: %w", err)
	}
	s.log.Info("name server closed")
	return nil
}

// scanLoop expires silent members every tick until Close.
func (s *Server) scanLoop(t Ticker) {
	defer s.wg.Done()
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C():
			for _, m := range s.table.Expire(s.clock.Now()) {
				s.log.Warn("broker expired: no heartbeat", memberFields(m)...)
			}
		}
	}
}

// connClosed runs on a closed connection's read goroutine: the brokers
// that registered on it are gone at once (Java's onChannelDestroy).
func (s *Server) connClosed(c *remoting.Conn) {
	for _, m := range s.table.RemoveConn(c.ID()) {
		s.log.Info("broker removed: connection closed", memberFields(m)...)
	}
}

// inGrace reports whether now is within TopicGrace of Start.
func (s *Server) inGrace(now time.Time) bool {
	if s.cfg.TopicGrace <= 0 {
		return false
	}
	s.mu.Lock()
	at := s.startedAt
	s.mu.Unlock()
	return !at.IsZero() && now.Before(at.Add(s.cfg.TopicGrace))
}

// memberFields are the log fields naming a member.
func memberFields(m Member) []any {
	return []any{"cluster", m.ClusterName, "broker", m.BrokerName, "id", m.BrokerID,
		"addr", m.Addr, "term", m.Term}
}
