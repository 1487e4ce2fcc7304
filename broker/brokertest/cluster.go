package brokertest

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/routing"
)

// Cluster is a name server and an n-node broker group (raft over
// loopback, each node a broker.Broker serving the remoting protocol on its
// own loopback port) in this process, for tests of the broker and of
// clients.
type Cluster struct {
	T       testing.TB
	Raft    *dledgertest.Cluster
	Namesrv *routing.Server
	Peers   map[string]string // node id -> client address

	opt func(i int, c *broker.Config) // each broker's adjustments, kept for restarts

	mu      sync.Mutex
	brokers map[string]*broker.Broker
	// brokerName and ownNamesrv are the group's name and whether its
	// brokers register with Namesrv, as the last broker started says.
	brokerName string
	ownNamesrv bool
	hooks      map[string]*broker.Hooks
}

// StartCluster starts a name server and an n-node group (raft over
// loopback TCP through a fault-injecting network) and waits for a leader.
// opt may adjust each broker's Config. Tests of replication, failover,
// forwarding and followers' registration use it.
func StartCluster(t testing.TB, n int, opt func(i int, c *broker.Config)) *Cluster {
	t.Helper()
	return startCluster(t, n, opt, func(cfg dledgertest.ClusterOption) *dledgertest.Cluster {
		return dledgertest.MakeCluster(t, n, cfg)
	})
}

// StartNode starts a name server and a one-node group on an in-memory
// raft layer (dledgertest.MakeNode) and waits until it leads and is
// registered: a real broker on a real raft group and store, serving
// clients on loopback, for tests that need neither replication nor
// failover. The Cluster's methods work as on StartCluster's (Kill and
// Restart included).
func StartNode(t testing.TB, opt func(i int, c *broker.Config)) *Cluster {
	t.Helper()
	return startCluster(t, 1, opt, func(cfg dledgertest.ClusterOption) *dledgertest.Cluster {
		return dledgertest.MakeNode(t, cfg)
	})
}

func startCluster(t testing.TB, n int, opt func(i int, c *broker.Config), makeRaft func(dledgertest.ClusterOption) *dledgertest.Cluster) *Cluster {
	t.Helper()
	ns, err := routing.NewServer(routing.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	tc := &Cluster{T: t, Namesrv: ns, Peers: map[string]string{}, opt: opt, brokers: map[string]*broker.Broker{}, hooks: map[string]*broker.Hooks{}}
	// The client sockets are bound before anything else needs their
	// addresses, so no other test can take a port in between.
	listeners := map[string]net.Listener{}
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("n%d", i)
		listeners[id] = l
		tc.Peers[id] = l.Addr().String()
		tc.hooks[id] = broker.NewHooks()
	}
	tc.Raft = makeRaft(func(i int, c *dledger.Config) {
		id := fmt.Sprintf("n%d", i)
		c.StoreHost = netip.MustParseAddrPort(tc.Peers[id])
		h := tc.hooks[id]
		c.OnRoleChange = h.OnRoleChange
		c.Store.OnDispatch = h.OnDispatch
	})
	t.Cleanup(tc.Close)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("n%d", i)
		tc.startBroker(id, i, listeners[id])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := tc.Raft.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	// The name server routes a registration only once the node it names
	// has confirmed it: wait until it lists the group's leader, so that
	// clients started next find routes.
	for !tc.leaderRegistered() {
		select {
		case <-ctx.Done():
			t.Fatalf("the name server lists no leader of the group: %+v", ns.Table().Members())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return tc
}

// leaderRegistered reports whether the name server the brokers register
// with lists the group's brokerId 0 (true when they register elsewhere: a
// test that points them at another cluster's name server waits itself).
func (tc *Cluster) leaderRegistered() bool {
	tc.mu.Lock()
	name, own := tc.brokerName, tc.ownNamesrv
	tc.mu.Unlock()
	if !own {
		return true
	}
	for _, m := range tc.Namesrv.Table().Members() {
		if m.BrokerName == name && m.BrokerID == 0 {
			return true
		}
	}
	return false
}

// startBroker starts node id's broker on l, or on its address when l is
// nil (a restart).
func (tc *Cluster) startBroker(id string, i int, l net.Listener) {
	tc.T.Helper()
	g := tc.Raft.Node(id).Group()
	cfg := broker.Config{
		BrokerName:                  "broker-a",
		NodeID:                      id,
		Peers:                       tc.Peers,
		Addr:                        tc.Peers[id],
		NamesrvAddrs:                []string{tc.Namesrv.Addr().String()},
		RegisterInterval:            time.Second,
		AutoCreateTopic:             true,
		AutoCreateSubscriptionGroup: true,
		Listener:                    l,
	}
	if tc.opt != nil {
		tc.opt(i, &cfg)
	}
	b, err := broker.New(cfg, broker.OverGroup(g), tc.hooks[id])
	if err != nil {
		tc.T.Fatal(err)
	}
	if err := b.Start(); err != nil {
		tc.T.Fatal(err)
	}
	tc.mu.Lock()
	tc.brokers[id] = b
	tc.brokerName, tc.ownNamesrv = cfg.BrokerName, slices.Contains(cfg.NamesrvAddrs, tc.Namesrv.Addr().String())
	tc.mu.Unlock()
}

// Broker returns node id's broker (nil while the node is down).
func (tc *Cluster) Broker(id string) *broker.Broker {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.brokers[id]
}

// NamesrvAddr is the name server's address.
func (tc *Cluster) NamesrvAddr() string { return tc.Namesrv.Addr().String() }

// LeaderAddr waits for a leader and returns its client address.
func (tc *Cluster) LeaderAddr(ctx context.Context) (string, error) {
	n, err := tc.Raft.Leader(ctx)
	if err != nil {
		return "", err
	}
	return tc.Peers[n.ID], nil
}

// Kill stops node id's broker and kills its raft node (as kill -9 would).
func (tc *Cluster) Kill(id string) {
	tc.T.Helper()
	tc.mu.Lock()
	b := tc.brokers[id]
	delete(tc.brokers, id)
	tc.mu.Unlock()
	if b != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.Close(ctx)
	}
	if err := tc.Raft.Kill(id); err != nil {
		tc.T.Fatal(err)
	}
}

// Restart starts a killed node and its broker again.
func (tc *Cluster) Restart(id string) {
	tc.T.Helper()
	if err := tc.Raft.Restart(id); err != nil {
		tc.T.Fatal(err)
	}
	var i int
	if _, err := fmt.Sscanf(id, "n%d", &i); err != nil {
		tc.T.Fatal(err)
	}
	tc.startBroker(id, i, nil)
}

// Close stops every broker, the group and the name server.
func (tc *Cluster) Close() {
	tc.mu.Lock()
	bs := tc.brokers
	tc.brokers = map[string]*broker.Broker{}
	tc.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, b := range bs {
		_ = b.Close(ctx)
	}
	tc.Raft.Close()
	_ = tc.Namesrv.Close(ctx)
}
