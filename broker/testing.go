package broker

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/routing"
)

// TestCluster is a name server and an n-node broker group (raft over
// loopback, each node a Broker serving the remoting protocol on its own
// loopback port) in this process, for tests of this package and of clients.
type TestCluster struct {
	T       testing.TB
	Raft    *dledger.Cluster
	Namesrv *routing.Server
	Peers   map[string]string // node id -> client address

	mu      sync.Mutex
	brokers map[string]*Broker
	hooks   map[string]*Hooks
}

// freePort reserves a loopback port (closed again before use; tests only).
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartTestCluster starts a name server and an n-node group and waits for
// a leader. opt may adjust each broker's Config.
func StartTestCluster(t testing.TB, n int, opt func(i int, c *Config)) *TestCluster {
	t.Helper()
	ns, err := routing.NewServer(routing.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	tc := &TestCluster{T: t, Namesrv: ns, Peers: map[string]string{}, brokers: map[string]*Broker{}, hooks: map[string]*Hooks{}}
	ports := make([]int, n)
	for i := range ports {
		ports[i] = freePort(t)
		id := fmt.Sprintf("n%d", i)
		tc.Peers[id] = fmt.Sprintf("127.0.0.1:%d", ports[i])
		tc.hooks[id] = NewHooks()
	}
	tc.Raft = dledger.MakeCluster(t, n, func(i int, c *dledger.Config) {
		id := fmt.Sprintf("n%d", i)
		c.StoreHost = netip.MustParseAddrPort(tc.Peers[id])
		h := tc.hooks[id]
		c.OnRoleChange = h.OnRoleChange
		c.Store.OnDispatch = h.OnDispatch
	})
	t.Cleanup(tc.Close)
	for i := 0; i < n; i++ {
		tc.startBroker(fmt.Sprintf("n%d", i), opt, i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := tc.Raft.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	return tc
}

func (tc *TestCluster) startBroker(id string, opt func(int, *Config), i int) {
	tc.T.Helper()
	g := tc.Raft.Node(id).Group()
	cfg := Config{
		BrokerName:                  "broker-a",
		NodeID:                      id,
		Peers:                       tc.Peers,
		Addr:                        tc.Peers[id],
		NamesrvAddrs:                []string{tc.Namesrv.Addr().String()},
		RegisterInterval:            time.Second,
		AutoCreateTopic:             true,
		AutoCreateSubscriptionGroup: true,
	}
	if opt != nil {
		opt(i, &cfg)
	}
	b, err := New(cfg, g, tc.hooks[id])
	if err != nil {
		tc.T.Fatal(err)
	}
	if err := b.Start(); err != nil {
		tc.T.Fatal(err)
	}
	tc.mu.Lock()
	tc.brokers[id] = b
	tc.mu.Unlock()
}

// Broker returns node id's broker (nil while the node is down).
func (tc *TestCluster) Broker(id string) *Broker {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.brokers[id]
}

// NamesrvAddr is the name server's address.
func (tc *TestCluster) NamesrvAddr() string { return tc.Namesrv.Addr().String() }

// LeaderAddr waits for a leader and returns its client address.
func (tc *TestCluster) LeaderAddr(ctx context.Context) (string, error) {
	n, err := tc.Raft.Leader(ctx)
	if err != nil {
		return "", err
	}
	return tc.Peers[n.ID], nil
}

// Kill stops node id's broker and kills its raft node (as kill -9 would).
func (tc *TestCluster) Kill(id string) {
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
func (tc *TestCluster) Restart(id string) {
	tc.T.Helper()
	if err := tc.Raft.Restart(id); err != nil {
		tc.T.Fatal(err)
	}
	tc.startBroker(id, nil, 0)
}

// Close stops every broker, the group and the name server.
func (tc *TestCluster) Close() {
	tc.mu.Lock()
	bs := tc.brokers
	tc.brokers = map[string]*Broker{}
	tc.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, b := range bs {
		_ = b.Close(ctx)
	}
	tc.Raft.Close()
	_ = tc.Namesrv.Close(ctx)
}
