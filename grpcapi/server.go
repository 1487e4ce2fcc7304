package grpcapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/remoting"
)

// Broker is what the gRPC port uses of its node's broker
// (*broker.Broker implements it).
type Broker interface {
	// ServeLocal serves a remoting request as the remoting port would
	// from a client at peer.
	ServeLocal(ctx context.Context, peer netip.AddrPort, req *remoting.Command) *remoting.Command
	// ServeLocalWait is ServeLocal that may hold a pull with the suspend
	// flag until a message comes, its suspend timeout or the end of ctx,
	// and returns its answer then.
	ServeLocalWait(ctx context.Context, peer netip.AddrPort, req *remoting.Command) *remoting.Command
	// Topic is the topic's configuration in the node's replica.
	Topic(name string) (metadata.TopicConfig, bool)
	// LeaderID is the node id of the group's leader, "" when unknown.
	LeaderID() string
	// Popper serves the consumers (receive.go).
	Popper
	// AddTxnAsker puts a producer on the transaction check-back's list
	// (orphan.go).
	AddTxnAsker(group string, ask broker.TxnAsker) (remove func())
}

// Config configures the gRPC port of one broker node (Broker set: local
// mode), or a proxy in front of the broker groups the name servers know
// (Cluster set: cluster mode, cluster.go).
type Config struct {
	// Addr is where to listen (port 0 picks one); Listener, if set, is
	// the bound socket to serve instead.
	Addr     string
	Listener net.Listener
	// Advertise is the host:port clients dial this node's gRPC port at.
	// Default: the listener's address.
	Advertise string
	// BrokerName is the broker group's name; NodeID this node's id.
	BrokerName string
	NodeID     string
	// Peers maps node ids of the group to their advertised gRPC
	// addresses. Routes name the leader's; a node missing here (or no
	// leader known) is named by this node's own address, whose sends the
	// broker forwards to the leader.
	Peers map[string]string
	// Broker serves the requests (local mode; BrokerName is then
	// required).
	Broker Broker
	// Cluster, set instead of Broker, makes the server a proxy: routes
	// from the name servers, requests served by the broker groups'
	// leaders (cluster.go). Clients are told Advertise for every queue.
	// BrokerName, NodeID and Peers are not used.
	Cluster *ClusterConfig
	// MaxBodySize is the largest message body (the broker's
	// MaxMessageSize). Default 4 MiB.
	MaxBodySize int
	// RequestTimeout is what clients are told to wait for an answer.
	// Default 3 s.
	RequestTimeout time.Duration
	// TLS, if set, serves the port over TLS (the node's certificate;
	// clients are not asked for one). PeerTLS dials the leaders' gRPC
	// ports (forward.go) when TLS is set.
	TLS     *tls.Config
	PeerTLS *tls.Config
	// Access, if set, checks every call (auth.go): its signature, then
	// what it amounts to against the broker's ACL. In cluster mode it is
	// set by ClusterConfig.ACL (clusteracl.go).
	Access Access
	// Observer, if set, hears every call answered (metrics, observe.go).
	Observer CallObserver
	Logger   hclog.Logger
}

func (c *Config) setDefaults() {
	if c.MaxBodySize <= 0 {
		c.MaxBodySize = 4 << 20
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 3 * time.Second
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
}

// Server is the gRPC port of one broker node: a broker.Part.
type Server struct {
	v2pb.UnimplementedMessagingServiceServer

	cfg Config
	log hclog.Logger
	srv *grpc.Server

	mu        sync.Mutex
	lis       net.Listener
	advertise netip.AddrPort
	started   bool
	stopped   bool
	closing   chan struct{} // closed by Stop: telemetry streams end
	// peers are the connections to leaders' gRPC ports (forward.go).
	peers map[string]*grpc.ClientConn
	// be serves the answers (backend.go); turn picks groups and queues
	// in turn.
	be   backend
	turn atomic.Uint32
	// stopCtx is cancelled by Stop: long polls end.
	stopCtx   context.Context
	stopPolls context.CancelFunc
	wg        sync.WaitGroup
}

// New builds the server; Start serves it.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	switch {
	case cfg.Broker != nil && cfg.Cluster != nil:
		return nil, errors.New("grpcapi: Broker and Cluster are exclusive")
	case cfg.Cluster == nil && (cfg.Broker == nil || cfg.BrokerName == ""):
		return nil, errors.New("grpcapi: Broker and BrokerName, or Cluster, are required")
	case cfg.Addr == "" && cfg.Listener == nil:
		return nil, errors.New("grpcapi: Addr or Listener is required")
	}
	s := &Server{cfg: cfg, log: cfg.Logger.Named("grpc"), closing: make(chan struct{})}
	if cfg.Cluster != nil {
		be, err := newClusterBackend(s, *cfg.Cluster)
		if err != nil {
			return nil, err
		}
		s.be = be
		if be.acl != nil {
			cfg.Access = groupsAccess{acl: be.acl}
			s.cfg.Access = cfg.Access
		}
	} else {
		s.be = localBackend{s: s}
	}
	s.stopCtx, s.stopPolls = context.WithCancel(context.Background())
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(cfg.MaxBodySize + 1<<20)}
	if cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.TLS)))
	}
	if cfg.Observer != nil {
		// First in the chain: calls the ACL refuses are counted too.
		opts = append(opts, grpc.ChainUnaryInterceptor(s.unaryObserve), grpc.ChainStreamInterceptor(s.streamObserve))
	}
	if cfg.Access != nil {
		opts = append(opts, grpc.ChainUnaryInterceptor(s.unaryAccess), grpc.ChainStreamInterceptor(s.streamAccess))
	}
	s.srv = grpc.NewServer(opts...)
	v2pb.RegisterMessagingServiceServer(s.srv, s)
	return s, nil
}

// Start listens (unless Config.Listener is set) and serves on its own
// goroutine until Stop.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped {
		return errors.New("grpcapi: the server was started before")
	}
	lis := s.cfg.Listener
	if lis == nil {
		l, err := net.Listen("tcp", s.cfg.Addr)
		if err != nil {
			return fmt.Errorf("grpcapi: listening on %s: %w", s.cfg.Addr, err)
		}
		lis = l
	}
	adv := s.cfg.Advertise
	if adv == "" {
		adv = lis.Addr().String()
	}
	ap, err := netip.ParseAddrPort(adv)
	if err != nil {
		_ = lis.Close()
		return fmt.Errorf("grpcapi: advertised address %q must be ip:port: %w", adv, err)
	}
	s.lis, s.advertise, s.started = lis, ap, true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.srv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.log.Error("gRPC server stopped", "error", err)
		}
	}()
	s.log.Info("gRPC (RocketMQ 5) serving", "addr", lis.Addr().String(), "advertise", adv, "tls", s.cfg.TLS != nil, "acl", s.cfg.Access != nil,
		"cluster_mode", s.cfg.Cluster != nil)
	return nil
}

// Addr is the address the server listens on (nil before Start).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lis == nil {
		return nil
	}
	return s.lis.Addr()
}

// Stop ends the telemetry streams, lets the calls under way finish until
// ctx ends (then cuts them) and waits for every goroutine. Stopping twice,
// or a server never started, does nothing.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	started := s.started
	s.mu.Unlock()
	close(s.closing)
	s.stopPolls()
	if !started {
		s.be.close()
		return nil
	}
	done := make(chan struct{})
	go func() {
		s.srv.GracefulStop()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		s.srv.Stop()
		<-done
		err = fmt.Errorf("grpcapi: calls cut at shutdown: %w", ctx.Err())
	}
	s.wg.Wait()
	s.closePeers()
	s.be.close()
	return err
}

// selfEndpoint is this node's advertised gRPC address.
func (s *Server) selfEndpoint() netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.advertise
}

// peerOf is the client's address, or the zero AddrPort.
func peerOf(ctx context.Context) netip.AddrPort {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return netip.AddrPort{}
	}
	ap, err := netip.ParseAddrPort(p.Addr.String())
	if err != nil {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
