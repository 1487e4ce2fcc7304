package client

// Admin is the operator's API: topics, subscription groups, consumer
// progress and offsets, message look-ups, the cluster's members and their
// raft state. `ledgermq admin …` is a thin shell over it, and scripts and
// tests use it directly.
//
// Why it does not share core with Producer: an admin talks to named
// addresses (a broker group's leader, every member in turn, every name
// server) and never needs the route cache, the fault table or the UNIQ_KEY
// generator; it owns one remoting client and nothing else, starts no
// goroutine of its own, and every method is bounded by its context and by
// WithAdminRequestTimeout per request.
//
//	area      methods                                           requests
//	--------  ------------------------------------------------  -------------------------------
//	topics    CreateTopic DeleteTopic ListTopics TopicRoute      17 215 216 206 105 202 (30 31)
//	          TopicStatus
//	groups    CreateGroup DeleteGroup ListGroups                 200 207 201
//	consumers ConsumerProgress ConsumerConnections               208 203
//	          ResetOffsetByTime (dry run unless Execute)        208 29 352 / 222
//	          CloneGroupOffset                                  208 15
//	stats     ProducerConnections BrokerConsumeStats StatsAll    204 201 208 206 202
//	messages  MessageByID MessagesByKey MessageAtOffset          33 12 11 29
//	          MessagesByTime ReadMessages MessageTrace
//	cluster   ClusterList BrokerRuntime Health                   106 4001 28
//	raft      RaftStatus GroupLeader RaftMembers TransferLeader  4001 4004 4002 4003
//	          RemoveNode AddNode
//
// Writes go to a broker group's leader (brokerId 0 on the name servers);
// when a group has no listed leader they go to any member, which forwards
// them. Errors: a broker's or name server's refusal is a *BrokerError
// (code, remark, address); things that do not exist match ErrNoSuchTopic,
// ErrNoSuchGroup, ErrNoSuchMessage or ErrNoSuchBroker; a group without a
// reachable leader ErrLeaderNotFound. All wrap their causes with %w.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// DefaultAdminRequestTimeout bounds one admin request unless the method
// says otherwise (membership changes and leadership transfer get longer).
const DefaultAdminRequestTimeout = 5 * time.Second

// membershipTimeout bounds one raft membership or leadership request.
const membershipTimeout = 15 * time.Second

// Errors of the admin API; compare with errors.Is.
var (
	// ErrNoSuchTopic: the name servers (or the broker) know no such topic.
	ErrNoSuchTopic = errors.New("client: no such topic")
	// ErrNoSuchGroup: no broker knows the consumer group (no config, no
	// offsets), or, for connections, none of its clients is online.
	ErrNoSuchGroup = errors.New("client: no such consumer group")
	// ErrNoSuchMessage: no message matches the look-up.
	ErrNoSuchMessage = errors.New("client: no such message")
	// ErrNoSuchBroker: no broker group, cluster or address matches.
	ErrNoSuchBroker = errors.New("client: no such broker group")
	// ErrLeaderNotFound: no member of a broker group knows a leader.
	ErrLeaderNotFound = errors.New("client: broker group has no reachable leader")
)

// AdminOption configures an Admin.
type AdminOption func(*adminOptions)

type adminOptions struct {
	nameServers []string
	timeout     time.Duration
	logger      hclog.Logger
	dial        func(ctx context.Context, addr string) (net.Conn, error)
	tls         *tls.Config
	tlsFiles    tlsconf.Files
	creds       auth.Credentials
}

// WithAdminNameServers sets the name servers ("host:port"). Required.
func WithAdminNameServers(addrs ...string) AdminOption {
	return func(o *adminOptions) { o.nameServers = append([]string(nil), addrs...) }
}

// WithAdminRequestTimeout bounds each request (default 5 s); the
// method's context bounds the whole call.
func WithAdminRequestTimeout(d time.Duration) AdminOption {
	return func(o *adminOptions) { o.timeout = d }
}

// WithAdminLogger sets the logger (default: none).
func WithAdminLogger(l hclog.Logger) AdminOption { return func(o *adminOptions) { o.logger = l } }

// WithAdminDial makes dial open every connection (see WithDial).
func WithAdminDial(dial func(ctx context.Context, addr string) (net.Conn, error)) AdminOption {
	return func(o *adminOptions) { o.dial = dial }
}

// WithAdminTLS runs every connection over TLS with cfg (see WithTLS).
func WithAdminTLS(cfg *tls.Config) AdminOption { return func(o *adminOptions) { o.tls = cfg } }

// WithAdminTLSFiles is WithAdminTLS from PEM files (see WithTLSFiles).
func WithAdminTLSFiles(caFile, certFile, keyFile string) AdminOption {
	return func(o *adminOptions) {
		o.tlsFiles = tlsconf.Files{CAFile: caFile, CertFile: certFile, KeyFile: keyFile}
	}
}

// Admin is a handle on a cluster for administration. Safe for concurrent
// use; Close it when done.
type Admin struct {
	opts   adminOptions
	rc     *rpcClient
	closed atomic.Bool
}

// NewAdmin returns an Admin; it connects lazily, on the first request.
func NewAdmin(opts ...AdminOption) (*Admin, error) {
	o := adminOptions{timeout: DefaultAdminRequestTimeout}
	for _, f := range opts {
		f(&o)
	}
	if len(o.nameServers) == 0 {
		return nil, fmt.Errorf("%w: no name server (WithAdminNameServers)", ErrConfig)
	}
	for _, a := range o.nameServers {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("%w: name server %q: %w", ErrConfig, a, err)
		}
	}
	if o.timeout <= 0 {
		return nil, fmt.Errorf("%w: request timeout %v <= 0", ErrConfig, o.timeout)
	}
	if o.logger == nil {
		o.logger = hclog.NewNullLogger()
	}
	tlsCfg, err := loadTLS(o.tls, o.tlsFiles)
	if err != nil {
		return nil, err
	}
	rc := newRPC(remoting.NewClient(remoting.ClientConfig{Logger: o.logger.Named("remoting"), Dial: o.dial, TLS: tlsCfg}), o.creds)
	return &Admin{opts: o, rc: rc}, nil
}

// NameServers returns the name servers the Admin asks.
func (a *Admin) NameServers() []string { return append([]string(nil), a.opts.nameServers...) }

// Close closes every connection. Calls after Close fail with ErrClosed.
func (a *Admin) Close() error {
	if a.closed.Swap(true) {
		return nil
	}
	return a.rc.Close()
}

// invoke sends req to addr, bounded by per (the default when 0) inside
// ctx, and returns the answer whatever its code.
func (a *Admin) invoke(ctx context.Context, addr string, req *remoting.Command, per time.Duration) (*remoting.Command, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	if per <= 0 {
		per = a.opts.timeout
	}
	cctx, cancel := context.WithTimeout(ctx, per)
	defer cancel()
	resp, err := a.rc.Invoke(cctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("client: %s to %s: %w", remoting.RequestCodeName(req.Code), addr, err)
	}
	return resp, nil
}

// call is invoke that also wants one of accept (Success when empty) and
// turns any other code into a *BrokerError.
func (a *Admin) call(ctx context.Context, addr string, req *remoting.Command, per time.Duration, accept ...int32) (*remoting.Command, error) {
	resp, err := a.invoke(ctx, addr, req, per)
	if err != nil {
		return nil, err
	}
	if remoting.CheckResponse(resp, accept...) != nil {
		return resp, &BrokerError{Code: resp.Code, Remark: resp.Remark, Addr: addr}
	}
	return resp, nil
}

// askNameServers sends req to the name servers in turn until one answers
// with one of accept.
func (a *Admin) askNameServers(ctx context.Context, req func() *remoting.Command, accept ...int32) (*remoting.Command, string, error) {
	var errs []error
	for _, ns := range a.opts.nameServers {
		resp, err := a.call(ctx, ns, req(), 0, accept...)
		if err == nil {
			return resp, ns, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, "", fmt.Errorf("client: no name server answered: %w", errors.Join(errs...))
}

// ClusterInfo asks the name servers for the broker groups
// (GET_BROKER_CLUSTER_INFO, 106).
func (a *Admin) ClusterInfo(ctx context.Context) (*protocol.ClusterInfo, error) {
	resp, ns, err := a.askNameServers(ctx, protocol.ClusterInfoRequest)
	if err != nil {
		return nil, err
	}
	info, err := protocol.DecodeClusterInfo(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: cluster info from %s: %w", ns, err)
	}
	return info, nil
}

// Target says which broker groups a write goes to: one node by address
// (mqadmin -b), one group by name, every group of a cluster (-c), or, all
// empty, every group the name servers know.
type Target struct {
	Cluster    string
	BrokerName string
	BrokerAddr string
}

// brokerGroup is one resolved broker group: its name and the address to
// send to (its leader, or any member when none is listed).
type brokerGroup struct {
	name, addr string
	data       protocol.BrokerData
}

// groupNames lists info's broker groups, sorted.
func groupNames(info *protocol.ClusterInfo) []string {
	names := make([]string, 0, len(info.BrokerAddrTable))
	for n := range info.BrokerAddrTable {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// anyAddr is a group's leader address, else its lowest-id member's.
func anyAddr(bd protocol.BrokerData) string {
	if addr, ok := bd.LeaderAddr(); ok {
		return addr
	}
	ids := make([]int64, 0, len(bd.BrokerAddrs))
	for id := range bd.BrokerAddrs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if len(ids) == 0 {
		return ""
	}
	return bd.BrokerAddrs[ids[0]]
}

// resolve turns t into broker groups, sorted by name.
func (a *Admin) resolve(ctx context.Context, t Target) ([]brokerGroup, error) {
	info, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var out []brokerGroup
	inCluster := map[string]bool{}
	if t.Cluster != "" {
		names, ok := info.ClusterAddrTable[t.Cluster]
		if !ok {
			return nil, fmt.Errorf("%w: no cluster %q on the name servers", ErrNoSuchBroker, t.Cluster)
		}
		for _, n := range names {
			inCluster[n] = true
		}
	}
	for _, name := range groupNames(info) {
		bd := info.BrokerAddrTable[name]
		switch {
		case t.Cluster != "" && !inCluster[name], t.BrokerName != "" && name != t.BrokerName:
			continue
		case t.BrokerAddr != "":
			for _, addr := range bd.BrokerAddrs {
				if addr == t.BrokerAddr {
					out = append(out, brokerGroup{name: name, addr: addr, data: bd})
				}
			}
			continue
		}
		if addr := anyAddr(bd); addr != "" {
			out = append(out, brokerGroup{name: name, addr: addr, data: bd})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: nothing matches %s (the name servers know %s)", ErrNoSuchBroker, t, strings.Join(groupNames(info), ", "))
	}
	return out, nil
}

func (t Target) String() string {
	var parts []string
	for _, p := range [][2]string{{"cluster", t.Cluster}, {"broker group", t.BrokerName}, {"address", t.BrokerAddr}} {
		if p[1] != "" {
			parts = append(parts, p[0]+" "+p[1])
		}
	}
	if len(parts) == 0 {
		return "any broker group"
	}
	return strings.Join(parts, ", ")
}

// routeGroups resolves the broker groups that serve topic, from its route.
func (a *Admin) routeGroups(ctx context.Context, topic string) (*protocol.TopicRouteData, []brokerGroup, error) {
	rd, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, nil, err
	}
	var out []brokerGroup
	for _, bd := range rd.BrokerDatas {
		if addr := anyAddr(bd); addr != "" {
			out = append(out, brokerGroup{name: bd.BrokerName, addr: addr, data: bd})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return rd, out, nil
}

// ms converts a time to RocketMQ's milliseconds; the zero time is 0.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromMS converts milliseconds to a time; 0 or less is the zero time.
func fromMS(v int64) time.Time {
	if v <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}
