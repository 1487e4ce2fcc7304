package grpcapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// Cluster mode (RocketMQ 5's proxy): a server that is no broker node. It
// reads each topic's route from the name servers (client.Admin's
// TopicRoute) and keeps it for ClusterConfig.RouteTTL; a send or an end
// of transaction goes to the chosen group's leader (brokerId 0 of the
// route) as the remoting request a broker node would serve itself, and
// the consumer calls are relayed to the leader's gRPC port, which each
// broker publishes in its GET_BROKER_CONFIG answer (broker.GRPCEndpointKey).
// Routes answer the proxy's own endpoint for every queue.
//
// A leader change: a send whose leader cannot be reached, or answers that
// it cannot serve (SERVICE_NOT_AVAILABLE), reads the route again until it
// names another leader (within ClusterConfig.LeaderWait and the call's
// deadline) and is sent there once more, as the client package's
// producer does. A follower that is still up forwards a send to its
// leader, and relays a consumer call, by itself. A failed relay drops
// the topic's route, so the client's retry reads it afresh.

// ClusterConfig configures cluster mode (Config.Cluster).
type ClusterConfig struct {
	// NameServers are the name servers' remoting addresses.
	NameServers []string
	// TLS, if set, reaches the name servers and the brokers' remoting and
	// gRPC ports over TLS.
	TLS *tls.Config
	// RouteTTL is how long a topic's route is used before it is read
	// again. Default 3 s.
	RouteTTL time.Duration
	// LeaderWait bounds how long a send waits for its group's route to
	// name a new leader. Default 10 s.
	LeaderWait time.Duration
	// Credentials, if set, sign every remoting request the proxy sends
	// the name servers and the brokers (the proxy's own account).
	Credentials auth.Credentials
	// ACL makes the proxy check every call against the broker groups'
	// replicated plain ACL (clusteracl.go); it needs Credentials of an
	// admin account, which reads the rules. ACLRefresh is how often they
	// are read again. Default 30 s.
	ACL        bool
	ACLRefresh time.Duration
}

// leaderPoll is how often the route is read while waiting for a leader.
const leaderPoll = 100 * time.Millisecond

// clusterBackend is the backend of cluster mode.
type clusterBackend struct {
	s     *Server
	cfg   ClusterConfig
	admin *client.Admin
	rc    *remoting.Client
	// acl keeps the groups' rules (ClusterConfig.ACL), else nil.
	acl *clusterACL

	mu    sync.Mutex
	cache map[string]cachedRoute
	// endpoints maps a broker's remoting address to its gRPC endpoint.
	endpoints map[string]string
}

// cachedRoute is a topic's route and when it was read.
type cachedRoute struct {
	rd *protocol.TopicRouteData
	at time.Time
}

func newClusterBackend(s *Server, cfg ClusterConfig) (*clusterBackend, error) {
	if len(cfg.NameServers) == 0 {
		return nil, errors.New("grpcapi: cluster mode needs name servers")
	}
	if cfg.RouteTTL <= 0 {
		cfg.RouteTTL = 3 * time.Second
	}
	if cfg.LeaderWait <= 0 {
		cfg.LeaderWait = 10 * time.Second
	}
	opts := []client.AdminOption{client.WithAdminNameServers(cfg.NameServers...), client.WithAdminLogger(s.log)}
	if cfg.TLS != nil {
		opts = append(opts, client.WithAdminTLS(cfg.TLS))
	}
	creds := cfg.Credentials
	if (creds.AccessKey == "") != (creds.SecretKey == "") {
		return nil, errors.New("grpcapi: cluster mode: an access key and a secret key go together")
	}
	if cfg.ACL && creds.AccessKey == "" {
		return nil, errors.New("grpcapi: cluster mode: the ACL needs the proxy's own account (an admin account) to read the groups' rules")
	}
	rcfg := remoting.ClientConfig{TLS: cfg.TLS, Logger: s.log}
	if creds.AccessKey != "" {
		opts = append(opts, client.WithAdminCredentials(creds.AccessKey, creds.SecretKey))
		rcfg.Sign = func(req *remoting.Command) {
			if req.ExtFields == nil {
				req.ExtFields = map[string]string{}
			}
			auth.Sign(req.ExtFields, req.Body, creds)
		}
	}
	admin, err := client.NewAdmin(opts...)
	if err != nil {
		return nil, fmt.Errorf("grpcapi: cluster mode: %w", err)
	}
	c := &clusterBackend{s: s, cfg: cfg, admin: admin, rc: remoting.NewClient(rcfg),
		cache: map[string]cachedRoute{}, endpoints: map[string]string{}}
	if cfg.ACL {
		c.acl = newClusterACL(c.readACL, cfg.ACLRefresh, s.log.Warn)
	}
	return c, nil
}

// route is topic's route: the cached one while fresh (unless fresh is
// set), else read from the name servers.
func (c *clusterBackend) route(ctx context.Context, topic string, fresh bool) (*protocol.TopicRouteData, error) {
	c.mu.Lock()
	cr, ok := c.cache[topic]
	c.mu.Unlock()
	if ok && !fresh && time.Since(cr.at) < c.cfg.RouteTTL {
		return cr.rd, nil
	}
	rd, err := c.admin.TopicRoute(ctx, topic)
	if errors.Is(err, client.ErrNoSuchTopic) {
		return nil, fmt.Errorf("%w: %w", errTopicNotFound, err)
	}
	if err != nil {
		return nil, fmt.Errorf("grpcapi: the route of %s: %w", topic, err)
	}
	c.mu.Lock()
	c.cache[topic] = cachedRoute{rd: rd, at: time.Now()}
	c.mu.Unlock()
	return rd, nil
}

// leaderOf is the remoting address of group's leader in rd, "" when the
// route names none.
func leaderOf(rd *protocol.TopicRouteData, group string) string {
	for i := range rd.BrokerDatas {
		if bd := &rd.BrokerDatas[i]; bd.BrokerName == group {
			addr, _ := bd.LeaderAddr()
			return addr
		}
	}
	return ""
}

// routes: every group's queues of the topic, all at this proxy's
// endpoint (groupRoutes).
func (c *clusterBackend) routes(ctx context.Context, topic string) ([]groupRoute, error) {
	rd, err := c.route(ctx, topic, false)
	if err != nil {
		return nil, err
	}
	out := groupRoutes(rd, topic, c.s.selfEndpoint())
	if len(out) == 0 {
		return nil, errTopicNotFound
	}
	return out, nil
}

// groupRoutes lists rd's groups with the topic's queues at endpoint self.
// A group whose route names no leader is not writable while another group
// of the topic is: clients send to the groups that can store now. When
// none names a leader (a one-group topic during an election), the groups
// keep their write permission: a send through the proxy waits for the
// next leader (serve), where a route with no writable queue would fail
// every send at once (and the RocketMQ 5 Node.js client cannot even pick
// a queue from one).
func groupRoutes(rd *protocol.TopicRouteData, topic string, self netip.AddrPort) []groupRoute {
	out := make([]groupRoute, 0, len(rd.QueueDatas))
	writable := false
	for _, q := range rd.QueueDatas {
		perm := q.Perm
		if leaderOf(rd, q.BrokerName) == "" {
			perm &^= metadata.PermWrite
		}
		writable = writable || perm&metadata.PermWrite != 0
		out = append(out, groupRoute{name: q.BrokerName, endpoint: self,
			tc: metadata.TopicConfig{TopicName: topic, ReadQueueNums: q.ReadQueueNums, WriteQueueNums: q.WriteQueueNums, Perm: perm}})
	}
	if !writable {
		for i, q := range rd.QueueDatas {
			out[i].tc.Perm = q.Perm
		}
	}
	return out
}

// serve sends req to group's leader; when that fails or the leader cannot
// serve, it waits for the route to name another leader and sends there
// once more.
func (c *clusterBackend) serve(ctx context.Context, _ netip.AddrPort, topic, group string, req *remoting.Command) *remoting.Command {
	if err := c.admits(ctx, group, req); err != nil {
		c.s.log.Info("gRPC call refused by the broker group's ACL", "peer", peerOf(ctx), "group", group,
			"code", remoting.RequestCodeName(req.Code), "error", err)
		return remoting.NewResponse(req, remoting.NoPermission, err.Error())
	}
	rd, err := c.route(ctx, topic, false)
	if err != nil {
		return remoting.NewResponse(req, remoting.ServiceNotAvailable, err.Error())
	}
	addr := leaderOf(rd, group)
	var resp *remoting.Command
	if addr != "" {
		resp, err = c.rc.Invoke(ctx, addr, cloneRequest(req))
		if err == nil && resp.Code != remoting.ServiceNotAvailable {
			return resp
		}
		if ctx.Err() != nil {
			return remoting.NewResponse(req, remoting.ServiceNotAvailable, fmt.Sprintf("broker group %s at %s: %v", group, addr, err))
		}
		c.s.log.Debug("the leader did not serve a request; waiting for the route to name another",
			"group", group, "leader", addr, "error", err)
	}
	next, werr := c.awaitLeader(ctx, topic, group, addr)
	if werr != nil {
		if resp != nil {
			return resp
		}
		return remoting.NewResponse(req, remoting.ServiceNotAvailable, fmt.Sprintf("broker group %s: %v (%v)", group, werr, err))
	}
	resp, err = c.rc.Invoke(ctx, next, cloneRequest(req))
	if err != nil {
		return remoting.NewResponse(req, remoting.ServiceNotAvailable, fmt.Sprintf("broker group %s at %s: %v", group, next, err))
	}
	return resp
}

// awaitLeader reads topic's route until it names a leader of group other
// than old, within LeaderWait and ctx.
func (c *clusterBackend) awaitLeader(ctx context.Context, topic, group, old string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.LeaderWait)
	defer cancel()
	t := time.NewTicker(leaderPoll)
	defer t.Stop()
	for {
		if rd, err := c.route(ctx, topic, true); err == nil {
			if addr := leaderOf(rd, group); addr != "" && addr != old {
				return addr, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("grpcapi: waiting for a new leader of %s: %w", group, ctx.Err())
		case <-t.C:
		}
	}
}

// cloneRequest is a copy of req to send (sending assigns its opaque and
// signature).
func cloneRequest(req *remoting.Command) *remoting.Command {
	out := *req
	out.ExtFields = make(map[string]string, len(req.ExtFields))
	for k, v := range req.ExtFields {
		out.ExtFields[k] = v
	}
	return &out
}

// consumerRelay is a client of group's leader's gRPC port (when the
// client names none, a readable group in turn among those whose rules
// let consumerGroup subscribe to topic), once the group's rules allow
// the call (admits).
func (c *clusterBackend) consumerRelay(ctx context.Context, consumerGroup, topic, group string) (v2pb.MessagingServiceClient, context.Context, error) {
	rd, err := c.route(ctx, topic, false)
	if err != nil {
		return nil, ctx, err
	}
	sub := extRequest(remoting.PullMessage, "consumerGroup", consumerGroup, "topic", topic)
	if group == "" {
		routes, err := c.routes(ctx, topic)
		if err != nil {
			return nil, ctx, err
		}
		if group = readableGroup(c.admitting(ctx, routes, sub), c.s.turn.Add(1)); group == "" {
			return nil, ctx, fmt.Errorf("%w: topic %s has no readable queue", broker.ErrNoPermission, topic)
		}
	}
	if err := c.admits(ctx, group, sub); err != nil {
		c.s.log.Info("gRPC call refused by the broker group's ACL", "peer", peerOf(ctx), "group", group, "error", err)
		return nil, ctx, err
	}
	addr := leaderOf(rd, group)
	if addr == "" {
		c.relayFailed(topic, group)
		return nil, ctx, fmt.Errorf("grpcapi: the route of %s names no leader of broker group %s", topic, group)
	}
	ep, err := c.endpoint(ctx, addr)
	if err != nil {
		return nil, ctx, err
	}
	mc, err := c.s.peerClient(ep, c.cfg.TLS)
	if err != nil {
		return nil, ctx, err
	}
	return mc, c.relayContext(ctx), nil
}

// endpoint is the gRPC endpoint of the broker at remoting address addr,
// from its GET_BROKER_CONFIG answer.
func (c *clusterBackend) endpoint(ctx context.Context, addr string) (string, error) {
	c.mu.Lock()
	ep, ok := c.endpoints[addr]
	c.mu.Unlock()
	if ok {
		return ep, nil
	}
	settings, err := c.admin.BrokerConfig(ctx, addr)
	if err != nil {
		return "", fmt.Errorf("grpcapi: the settings of the broker at %s: %w", addr, err)
	}
	ep = settings[broker.GRPCEndpointKey]
	if ep == "" {
		return "", fmt.Errorf("grpcapi: the broker at %s serves no gRPC port (grpc_listen)", addr)
	}
	c.mu.Lock()
	c.endpoints[addr] = ep
	c.mu.Unlock()
	return ep, nil
}

// relayFailed forgets topic's route and the endpoint of the leader it
// named for group: the next call reads both afresh.
func (c *clusterBackend) relayFailed(topic, group string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cr, ok := c.cache[topic]; ok {
		delete(c.endpoints, leaderOf(cr.rd, group))
		delete(c.cache, topic)
	}
}

func (c *clusterBackend) popper() Popper { return nil }

// maxAttempts is the default retry max: the proxy does not read the
// groups' settings; the broker moves a message to the dead-letter queue
// by the group's own.
func (c *clusterBackend) maxAttempts(string) int32 { return consumerMaxAttempts }

// fifo: the proxy does not read the groups' configs, so its clients are
// told no group is FIFO; the brokers still hand a FIFO group's messages
// out in order.
func (c *clusterBackend) fifo(string) bool { return false }

// addTxnAsker: the brokers do not know the proxy as a producer, so no
// check-back reaches its clients (orphan.go).
func (c *clusterBackend) addTxnAsker(broker.TxnAsker) func() { return func() {} }

func (c *clusterBackend) close() {
	if c.acl != nil {
		c.acl.close()
	}
	_ = c.admin.Close()
	_ = c.rc.Close()
}
