package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
	"github.com/ledgermq/ledgermq/routing"
)

// testRegistration: the leader registers as brokerId 0 with its raft term,
// followers as 1 + their position among the sorted node ids.
func testRegistration(t *testing.T, tc *brokertest.Cluster) {
	leaderID, leaderAddr, g := leaderOf(t, tc)
	term := int64(g.Role().Term)
	want := map[string]int64{"n0": 1, "n1": 2, "n2": 3}
	want[leaderID] = 0
	broker.WaitUntil(t, 10*time.Second, "every node registered", func() bool {
		ms := tc.Namesrv.Table().Members()
		if len(ms) != 3 {
			return false
		}
		for _, m := range ms {
			id := ""
			for nid, addr := range tc.Peers {
				if addr == m.Addr {
					id = nid
				}
			}
			if m.BrokerID != want[id] || m.BrokerName != "broker-a" || m.ClusterName != "DefaultCluster" {
				return false
			}
			if m.Addr == leaderAddr && m.Term != term {
				return false
			}
		}
		return true
	})
	if lt, ok := tc.Namesrv.Table().LeaderTerm("broker-a"); !ok || lt != term {
		t.Fatalf("leader term watermark %d %v, want %d", lt, ok, term)
	}
	// The leader's registration carries the template and the topics.
	if _, ok := tc.Namesrv.Table().Route("TBW102"); !ok {
		t.Fatal("TBW102 not routed")
	}
	if _, ok := g.Metadata().Topic("TBW102"); !ok {
		t.Fatal("the leader did not propose TBW102")
	}
}

// TestUnregisterOnClose: a broker that closes leaves the name server.
func TestUnregisterOnClose(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	addr := tc.Peers["n0"]
	broker.WaitUntil(t, 10*time.Second, "registered", func() bool { return memberID(tc, addr) == 0 })
	tc.Kill("n0")
	if id := memberID(tc, addr); id != -1 {
		t.Fatalf("still registered as %d after Close", id)
	}
}

// attackerRegister sends a REGISTER_BROKER for broker-a from a connection
// of its own and returns the client; the caller closes it.
func attackerRegister(t *testing.T, ns string, req routing.RegisterRequest) *remoting.Client {
	t.Helper()
	c := remoting.NewClient(remoting.ClientConfig{})
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = routing.RegisterBroker(ctx, c, ns, req) // the answer does not matter
	return c
}

// leaderRouted reports whether the name server routes addr, and only
// addr, as broker-a's brokerId 0 at term.
func leaderRouted(tc *brokertest.Cluster, addr string, term int64) bool {
	var leaders []routing.Member
	for _, m := range tc.Namesrv.Table().Members() {
		if m.BrokerID == 0 {
			leaders = append(leaders, m)
		}
	}
	return len(leaders) == 1 && leaders[0].Addr == addr && leaders[0].Term == term
}

// TestForgedLeaderClaims: against a real three-node group, a stranger's
// brokerId-0 claims (term 2^40 at a fake address; the current term, read
// from GET_BROKER_RUNTIME_INFO, at a fake address; term 2^40 at the
// leader's own address) do not take the route, and once the stranger has
// disconnected the real leader keeps registering: no lock-out.
func TestForgedLeaderClaims(t *testing.T) {
	// Three nodes: the followers keep the group known to the name server
	// while the leader's entry is gone (a one-node group would be
	// forgotten, fence included, when the attacker disconnects).
	tc := brokertest.StartCluster(t, 3, nil)
	_, addr, g := leaderOf(t, tc)
	term := int64(g.Role().Term)
	broker.WaitUntil(t, 10*time.Second, "the leader routed", func() bool { return leaderRouted(tc, addr, term) })

	// Anyone can read the term.
	c := newProdClient(t)
	resp := invoke(t, c, addr, remoting.NewRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
	mustOK(t, resp)
	var info struct {
		Table map[string]string `json:"table"`
	}
	if err := json.Unmarshal(resp.Body, &info); err != nil {
		t.Fatal(err)
	}
	current, err := strconv.ParseInt(info.Table["raftTerm"], 10, 64)
	if err != nil || current != term {
		t.Fatalf("raftTerm %q, want %d", info.Table["raftTerm"], term)
	}

	fake := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}
	forged := func(brokerAddr string, term int64) routing.RegisterRequest {
		return routing.RegisterRequest{ClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerAddr: brokerAddr,
			HAServerAddr: brokerAddr, BrokerID: 0, Term: term, DataVersion: protocol.DataVersion{Timestamp: 1, Counter: 1},
			Topics: []protocol.TopicConfig{{TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7}}}
	}
	for name, req := range map[string]routing.RegisterRequest{
		"term 2^40 at a fake address":       forged(fake(), 1<<40),
		"current term at a fake address":    forged(fake(), current),
		"term 2^40 at the leader's address": forged(addr, 1<<40),
	} {
		t.Run(name, func(t *testing.T) {
			attacker := attackerRegister(t, tc.NamesrvAddr(), req)
			if forgedRouted(tc, req) {
				t.Fatalf("the forged claim took the route: %+v", tc.Namesrv.Table().Members())
			}
			_ = attacker.Close()
			// The leader registers every second; after the attacker has
			// gone, two more of its registrations must be accepted. The
			// leader is read again each time: under load an election can
			// follow the first look, and then it is the new leader that
			// must be routed.
			beats := map[string]map[time.Time]bool{}
			broker.WaitUntil(t, 10*time.Second, "two more registrations of the real leader accepted", func() bool {
				addr, term, ok := groupLeader(tc)
				if !ok {
					return false
				}
				key := fmt.Sprintf("%s@%d", addr, term)
				if beats[key] == nil {
					beats[key] = map[time.Time]bool{}
				}
				for _, m := range tc.Namesrv.Table().Members() {
					if m.BrokerID == 0 && m.Addr == addr && m.Term == term {
						beats[key][m.LastHeartbeat] = true
					}
				}
				return len(beats[key]) >= 3 && leaderRouted(tc, addr, term) && !forgedRouted(tc, req)
			})
		})
	}
}

// groupLeader returns the client address and term of the node that leads
// the group now.
func groupLeader(tc *brokertest.Cluster) (string, int64, bool) {
	for _, n := range tc.Raft.Up() {
		if r := n.Group().Role(); r.Role == dledger.RoleLeader {
			return tc.Peers[n.ID], int64(r.Term), true
		}
	}
	return "", 0, false
}

// forgedRouted reports whether the name server lists the forged
// registration req (its address at its term).
func forgedRouted(tc *brokertest.Cluster, req routing.RegisterRequest) bool {
	for _, m := range tc.Namesrv.Table().Members() {
		if m.Addr == req.BrokerAddr && m.Term == req.Term {
			return true
		}
	}
	return false
}

// TestUnregisterFromStranger: a stranger's UNREGISTER_BROKER of a real
// leader is refused; the leader stays routed.
func TestUnregisterFromStranger(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	_, addr, g := leaderOf(t, tc)
	term := int64(g.Role().Term)
	broker.WaitUntil(t, 10*time.Second, "the leader routed", func() bool { return leaderRouted(tc, addr, term) })
	c := remoting.NewClient(remoting.ClientConfig{})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := routing.UnregisterBroker(ctx, c, tc.NamesrvAddr(), routing.UnregisterRequest{
		ClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerAddr: addr, BrokerID: 0})
	if !leaderRouted(tc, addr, term) {
		t.Fatal("a stranger's unregister removed the leader")
	}
	var ce *remoting.CodeError
	if !errors.As(err, &ce) || ce.Code != remoting.NoPermission {
		t.Fatalf("stranger's unregister answered %v, want NO_PERMISSION", err)
	}
}

// TestSignedRegistration: brokers with the cluster secret register with a
// name server that requires it (signed, fresh, confirmed by their raft
// status) and unregister from it on Close; a broker with another secret
// is refused.
func TestSignedRegistration(t *testing.T) {
	const secret = "a-cluster-secret-for-tests"
	secured, err := routing.NewServer(routing.Config{Addr: "127.0.0.1:0", Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	if err := secured.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = secured.Close(ctx)
	})
	tc := brokertest.StartCluster(t, 3, func(i int, c *broker.Config) {
		c.NamesrvAddrs = append(c.NamesrvAddrs, secured.Addr().String())
		c.ClusterSecret = secret
		if i == 2 {
			c.ClusterSecret = "not-the-cluster-secret"
		}
	})
	members := func() map[string]int64 {
		out := map[string]int64{}
		for _, m := range secured.Table().Members() {
			out[m.Addr] = m.BrokerID
		}
		return out
	}
	_, leaderAddr, _ := leaderOf(t, tc)
	broker.WaitUntil(t, 10*time.Second, "the two nodes with the secret registered", func() bool {
		ms := members()
		_, wrong := ms[tc.Peers["n2"]]
		return len(ms) == 2 && !wrong && (ms[leaderAddr] == 0 || leaderAddr == tc.Peers["n2"])
	})
	// The unsecured name server has all three.
	broker.WaitUntil(t, 10*time.Second, "all three on the other name server", func() bool { return len(tc.Namesrv.Table().Members()) == 3 })
	for _, id := range []string{"n0", "n1"} {
		addr := tc.Peers[id]
		tc.Kill(id)
		if _, ok := members()[addr]; ok {
			t.Fatalf("%s still registered after Close", id)
		}
	}
}

// TestAdvertisedHostName: a node whose client address is a host name (as a
// Kubernetes pod's stable DNS name) registers with the name server under
// that name, as given, while the offset message ids it answers name its
// StoreHost, an ip:port (an id holds an IP, never a name).
func TestAdvertisedHostName(t *testing.T) {
	var storeHost netip.AddrPort
	var named string
	tc := brokertest.StartNode(t, func(_ int, c *broker.Config) {
		storeHost = netip.MustParseAddrPort(c.Addr)
		named = net.JoinHostPort("localhost", strconv.Itoa(int(storeHost.Port())))
		c.AdvertiseAddr, c.StoreHost = named, storeHost
		c.Peers = map[string]string{c.NodeID: named}
	})
	broker.WaitUntil(t, 10*time.Second, "registered under its host name", func() bool { return memberID(tc, named) == 0 })
	for _, m := range tc.Namesrv.Table().Members() {
		if m.Addr != named {
			t.Fatalf("member %+v, want only %s", m, named)
		}
	}
	c := newProdClient(t)
	resp := invoke(t, c, named, broker.SendRequest("HostNameTopic", 0, nil, "x"))
	mustOK(t, resp)
	host, _, err := message.ParseOffsetMsgID(resp.ExtFields["msgId"])
	if err != nil || host != storeHost {
		t.Fatalf("offset message id %s names %v (%v), want %v", resp.ExtFields["msgId"], host, err, storeHost)
	}
}

// TestAdvertisedHostNameNeedsStoreHost: a host name alone leaves offset
// message ids without an address, so the configuration is refused.
func TestAdvertisedHostNameNeedsStoreHost(t *testing.T) {
	c := broker.Config{BrokerName: "broker-a", NodeID: "n0", Addr: "0.0.0.0:10911", AdvertiseAddr: "broker-a-0.broker-a:10911",
		Peers: map[string]string{"n0": "broker-a-0.broker-a:10911"}}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "StoreHost") {
		t.Fatalf("Validate: %v, want StoreHost required", err)
	}
	c.StoreHost = netip.MustParseAddrPort("10.1.2.3:10911")
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}
