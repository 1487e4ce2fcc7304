package routing

import (
	"net"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// Regression tests for the ways a stranger who can reach the name server
// took over a broker group's routes. Every node is a real server on
// loopback that answers RAFT_STATUS; the name server is the real one.

// claim is a registration of brokerAddr as id of group at term.
func claim(group, brokerAddr string, id, term int64, topics ...protocol.TopicConfig) RegisterRequest {
	return RegisterRequest{
		ClusterName: "DefaultCluster", BrokerName: group, BrokerAddr: brokerAddr, HAServerAddr: brokerAddr,
		BrokerID: id, Term: term, DataVersion: protocol.DataVersion{Timestamp: 1000, Counter: 1}, Topics: topics,
	}
}

// unusedAddr is a loopback address nothing listens on.
func unusedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	_ = l.Close()
	return a
}

// leaderOf is the address a route of topic gives as brokerId 0 of group
// ("" when none).
func leaderOf(t testing.TB, c *remoting.Client, ns, topic, group string) string {
	t.Helper()
	resp := routeOf(t, c, ns, topic)
	if resp.Code != remoting.Success {
		return ""
	}
	r, err := decodeLikeClient(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, bd := range r.BrokerDataList {
		if bd.BrokerName == group {
			return bd.BrokerAddresses[0]
		}
	}
	return ""
}

// TestAttackHighTermClaimDoesNotLockOut: a REGISTER_BROKER for broker-a,
// brokerId 0, with stateVersion 2^40 (at a fake address, at the leader's
// own address, or claiming the leader's address as a follower) neither
// routes clients away from the real leader nor, once the attacker has
// disconnected, keeps the real leader's registrations fenced.
func TestAttackHighTermClaimDoesNotLockOut(t *testing.T) {
	s, _ := startCheckingServer(t, Config{})
	ns := s.Addr().String()
	leader := startFakeNode(t, "broker-a", "leader", 2)
	lc := newClient(t) // the real leader's connection
	real := claim("broker-a", leader.addr(), 0, 2, topic("T", 4))
	registerAll(t, s, lc, real)
	check := newClient(t)

	for _, tc := range []struct {
		name   string
		forged RegisterRequest
	}{
		{"fake address", claim("broker-a", unusedAddr(t), 0, 1<<40, topic("T", 4))},
		{"the leader's own address", claim("broker-a", leader.addr(), 0, 1<<40, topic("T", 4))},
		{"the leader's address as a follower", claim("broker-a", leader.addr(), 5, 1<<40)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attacker := remoting.NewClient(remoting.ClientConfig{})
			_ = RegisterBroker(ctxGuard(t), attacker, ns, tc.forged) // the answer does not matter
			settle(t, s)
			if got := leaderOf(t, check, ns, "T", "broker-a"); got != leader.addr() {
				t.Fatalf("after the forged claim clients are routed to %q, want the leader %s", got, leader.addr())
			}
			_ = attacker.Close()
			// The real leader's next heartbeat is accepted: no lock-out.
			if err := RegisterBroker(ctxGuard(t), lc, ns, real); err != nil {
				t.Fatalf("the real leader's registration after the attack: %v", err)
			}
			waitMember(t, s, "broker-a", leader.addr(), 0, 2)
			if got := leaderOf(t, check, ns, "T", "broker-a"); got != leader.addr() {
				t.Fatalf("after the attacker left clients are routed to %q, want %s", got, leader.addr())
			}
		})
	}
}

// TestAttackCurrentTermClaim: a claim of brokerId 0 at the group's current
// term (which anyone can read from the broker's runtime info) for an
// address that is not the group's leader is not routed: nothing listens
// there, or the node there is not broker-a's leader.
func TestAttackCurrentTermClaim(t *testing.T) {
	s, _ := startCheckingServer(t, Config{})
	ns := s.Addr().String()
	leader := startFakeNode(t, "broker-a", "leader", 7)
	registerAll(t, s, newClient(t), claim("broker-a", leader.addr(), 0, 7, topic("T", 4)))
	check := newClient(t)

	impostors := map[string]string{
		"nothing listening":        unusedAddr(t),
		"a follower of the group":  startFakeNode(t, "broker-a", "follower", 7).addr(),
		"the leader of some group": startFakeNode(t, "broker-z", "leader", 7).addr(),
	}
	for name, fake := range impostors {
		t.Run(name, func(t *testing.T) {
			attacker := newClient(t)
			_ = RegisterBroker(ctxGuard(t), attacker, ns, claim("broker-a", fake, 0, 7, topic("T", 4)))
			settle(t, s)
			if got := leaderOf(t, check, ns, "T", "broker-a"); got != leader.addr() {
				t.Fatalf("clients are routed to %q, want the leader %s", got, leader.addr())
			}
		})
	}
}

// TestAttackUnregisterFromStranger: UNREGISTER_BROKER of the real leader
// sent on a connection that never registered it is refused and changes
// nothing; the leader's own unregistration still works.
func TestAttackUnregisterFromStranger(t *testing.T) {
	s, _ := startCheckingServer(t, Config{})
	ns := s.Addr().String()
	leader := startFakeNode(t, "broker-a", "leader", 3)
	lc := newClient(t)
	registerAll(t, s, lc, claim("broker-a", leader.addr(), 0, 3, topic("T", 4)))
	check := newClient(t)

	bye := UnregisterRequest{ClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerAddr: leader.addr(), BrokerID: 0}
	err := UnregisterBroker(ctxGuard(t), newClient(t), ns, bye)
	if got := leaderOf(t, check, ns, "T", "broker-a"); got != leader.addr() {
		t.Fatalf("after a stranger's unregister clients are routed to %q, want %s", got, leader.addr())
	}
	var ce *remoting.CodeError
	if !errorsAs(err, &ce) || ce.Code != remoting.NoPermission {
		t.Fatalf("stranger's unregister answered %v, want NO_PERMISSION", err)
	}
	if err := UnregisterBroker(ctxGuard(t), lc, ns, bye); err != nil {
		t.Fatalf("the leader's own unregister: %v", err)
	}
	if got := leaderOf(t, check, ns, "T", "broker-a"); got != "" {
		t.Fatalf("after its own unregister the leader is still routed: %q", got)
	}
}

// TestAttackNewGroupClaimsExistingTopic: a group that appears after a
// topic is served by another group does not get a share of that topic's
// queues by listing it (its own new topics are served).
func TestAttackNewGroupClaimsExistingTopic(t *testing.T) {
	s, clock := startCheckingServer(t, Config{})
	ns := s.Addr().String()
	a := startFakeNode(t, "broker-a", "leader", 1)
	registerAll(t, s, newClient(t), claim("broker-a", a.addr(), 0, 1, topic("Orders", 4)))
	clock.Advance(2 * time.Minute) // past the name server's start-up grace

	// The attacker even runs a node that says it leads its group.
	evil := startFakeNode(t, "broker-evil", "leader", 1)
	registerAll(t, s, newClient(t), claim("broker-evil", evil.addr(), 0, 1, topic("Orders", 8), topic("EvilOwn", 1)))

	r := mustRoute(t, newClient(t), ns, "Orders")
	for _, qd := range r.QueueDataList {
		if qd.BrokerName != "broker-a" {
			t.Fatalf("Orders is routed to %s too: %+v", qd.BrokerName, r.QueueDataList)
		}
	}
	if got := mustRoute(t, newClient(t), ns, "EvilOwn"); got.QueueDataList[0].BrokerName != "broker-evil" {
		t.Fatalf("the new group's own topic: %+v", got.QueueDataList)
	}
	if got := addrsOf(s.Table(), "broker-evil"); got[0] != evil.addr() {
		t.Fatalf("the new group itself is registered: %v", got)
	}
}
