// Package grpcapitest starts RocketMQ 5 gRPC front ends over in-process
// broker groups for tests: a group whose nodes serve gRPC and publish it,
// and a proxy in cluster mode in front of it.
package grpcapitest

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/grpcapi"
	"github.com/ledgermq/ledgermq/internal/testwait"
)

// ProxyCluster is a three-node broker group (broker-a) whose nodes serve
// gRPC on ports of their own, each publishing its address
// (broker.Config.GRPCEndpoint), and a proxy in cluster mode in front of
// it, all on loopback and stopped by the test's cleanup.
type ProxyCluster struct {
	TC    *brokertest.Cluster
	Nodes map[string]*grpcapi.Server // by node id
	Proxy *grpcapi.Server
}

// StartProxyCluster starts a ProxyCluster and returns once the group is at
// format version 4 on every node (POP needs it).
func StartProxyCluster(t testing.TB) *ProxyCluster {
	t.Helper()
	return StartProxyClusterWith(t, ProxyACL{})
}

// ClusterSecret is the cluster secret of a ProxyCluster's nodes with the
// ACL on.
const ClusterSecret = "0123456789abcdef0123456789abcdef"

// ProxyACL turns the ACL on in a ProxyCluster: every node enforces the
// plain_acl.yml at File (the nodes' gRPC ports check every call), and the
// proxy checks calls against the group's rules, read and signed with the
// admin account AccessKey/SecretKey. The zero value leaves it off.
type ProxyACL struct {
	File                 string
	AccessKey, SecretKey string
}

// StartProxyClusterWith is StartProxyCluster with the ACL of a.
func StartProxyClusterWith(t testing.TB, a ProxyACL) *ProxyCluster {
	t.Helper()
	lis, peers := Listen(t, "n0", "n1", "n2")
	tc := brokertest.StartCluster(t, 3, func(i int, c *broker.Config) {
		c.GRPCEndpoint = peers[fmt.Sprintf("n%d", i)]
		if a.File != "" {
			c.ACLEnable, c.ACLFile = true, a.File
			c.ClusterSecret = ClusterSecret
		}
	})
	testwait.For(t, 30*time.Second, "format version 4 on every node", func() bool {
		for _, n := range tc.Raft.Nodes {
			if n.Group() == nil || n.Group().FormatVersion() < 4 {
				return false
			}
		}
		return true
	})
	pc := &ProxyCluster{TC: tc, Nodes: Serve(t, tc, lis, peers)}
	pc.Proxy = StartProxy(t, tc.NamesrvAddr(), a)
	return pc
}

// StartProxy starts a proxy in cluster mode in front of the broker groups
// the name server at namesrv knows, on loopback, with the ACL on when
// a.File is set (read and signed with the account of a), stopped by the
// test's cleanup.
func StartProxy(t testing.TB, namesrv string, a ProxyACL) *grpcapi.Server {
	t.Helper()
	cc := &grpcapi.ClusterConfig{NameServers: []string{namesrv}}
	if a.File != "" {
		cc.ACL, cc.Credentials = true, auth.Credentials{AccessKey: a.AccessKey, SecretKey: a.SecretKey}
	}
	proxy, err := grpcapi.New(grpcapi.Config{Addr: "127.0.0.1:0", Cluster: cc})
	if err != nil {
		t.Fatal(err)
	}
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := proxy.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return proxy
}

// StartGroupNode starts a one-node broker group named name whose node,
// n0, serves gRPC on a port of its own and publishes it. With namesrv
// set the node registers with that name server (another Cluster's), else
// with the Cluster's own; with aclFile set it enforces that
// plain_acl.yml (its gRPC port checks every call). It returns once the
// name server routes the group's leader and the group is at format
// version 4 (POP needs it).
func StartGroupNode(t testing.TB, name, namesrv, aclFile string) (*brokertest.Cluster, *grpcapi.Server) {
	t.Helper()
	lis, peers := Listen(t, "n0")
	tc := brokertest.StartNode(t, func(_ int, c *broker.Config) {
		c.BrokerName = name
		c.GRPCEndpoint = peers["n0"]
		if namesrv != "" {
			c.NamesrvAddrs = []string{namesrv}
		}
		if aclFile != "" {
			c.ACLEnable, c.ACLFile = true, aclFile
		}
	})
	testwait.For(t, 30*time.Second, "format version 4 on "+name, func() bool {
		g := tc.Raft.Node("n0").Group()
		return g != nil && g.FormatVersion() >= 4
	})
	return tc, ServeGroup(t, tc, name, lis, peers)["n0"]
}

// Listen opens a loopback listener for the gRPC port of each node id, and
// returns them with their addresses.
func Listen(t testing.TB, ids ...string) (map[string]net.Listener, map[string]string) {
	t.Helper()
	lis := map[string]net.Listener{}
	peers := map[string]string{}
	for _, id := range ids {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lis[id], peers[id] = l, l.Addr().String()
	}
	return lis, peers
}

// Serve serves the gRPC port of every node of tc (group broker-a) on its
// listener from lis, each knowing the others' at peers; the test's
// cleanup stops them.
func Serve(t testing.TB, tc *brokertest.Cluster, lis map[string]net.Listener, peers map[string]string) map[string]*grpcapi.Server {
	t.Helper()
	return ServeGroup(t, tc, "broker-a", lis, peers)
}

// ServeGroup is Serve of a group named name.
func ServeGroup(t testing.TB, tc *brokertest.Cluster, name string, lis map[string]net.Listener, peers map[string]string) map[string]*grpcapi.Server {
	t.Helper()
	nodes := map[string]*grpcapi.Server{}
	for id := range tc.Peers {
		cfg := grpcapi.Config{Listener: lis[id], BrokerName: name, NodeID: id, Peers: peers, Broker: tc.Broker(id)}
		if b := tc.Broker(id); b.ACLEnabled() {
			cfg.Access = b
		}
		srv, err := grpcapi.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		nodes[id] = srv
		t.Cleanup(func() { Stop(srv) })
	}
	return nodes
}

// Stop stops srv, giving calls in progress 5 s.
func Stop(srv *grpcapi.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Stop(ctx)
}
