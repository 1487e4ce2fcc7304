package routing

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/remoting"
)

func TestNodeStatusConfirms(t *testing.T) {
	leader := Claim{Group: "g", Addr: "a:1", BrokerID: 0, Term: 5}
	follower := Claim{Group: "g", Addr: "a:1", BrokerID: 2, Term: 5}
	for _, tc := range []struct {
		st    nodeStatus
		claim Claim
		ok    bool
	}{
		{nodeStatus{"g", "leader", 5}, leader, true},
		{nodeStatus{"g", "leader", 6}, leader, true}, // led since: still the leader
		{nodeStatus{"g", "leader", 4}, leader, false},
		{nodeStatus{"g", "follower", 5}, leader, false},
		{nodeStatus{"g", "candidate", 9}, leader, false},
		{nodeStatus{"h", "leader", 5}, leader, false},
		{nodeStatus{"g", "follower", 5}, follower, true},
		{nodeStatus{"g", "candidate", 6}, follower, true},
		{nodeStatus{"g", "follower", 4}, follower, false},
		{nodeStatus{"g", "leader", 5}, follower, false}, // would lose its id 0
		{nodeStatus{"g", "shutdown", 5}, follower, false},
		{nodeStatus{"g", "", 5}, follower, false},
		{nodeStatus{"g", "leader", 0}, Claim{Group: "g", Term: -3}, true},
	} {
		err := tc.st.confirms(tc.claim)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrClaimRefused) {
			t.Errorf("%+v confirms %+v: %v, want ok=%v", tc.st, tc.claim, err, tc.ok)
		}
	}
}

// FuzzDecodeNodeStatus: any RAFT_STATUS body decodes or is refused, and
// never confirms a claim unless it names the group, a leader and the term.
func FuzzDecodeNodeStatus(f *testing.F) {
	f.Add([]byte(`{"group":"g","role":"leader","term":5,"members":[]}`))
	f.Add([]byte(`{"group":1}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"term":-1}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		st, err := decodeNodeStatus(body)
		if err != nil {
			if !errors.Is(err, ErrClaimRefused) {
				t.Fatalf("error class: %v", err)
			}
			return
		}
		c := Claim{Group: "g", Addr: "a:1", BrokerID: 0, Term: 5}
		if st.confirms(c) == nil && (st.Group != "g" || st.Role != "leader" || st.Term < 5) {
			t.Fatalf("%+v confirmed %+v", st, c)
		}
	})
}

// gate is a Checker that holds every check until the test opens it.
type gate struct {
	open   chan struct{}
	asking chan Claim
}

func newGate() *gate { return &gate{open: make(chan struct{}), asking: make(chan Claim, 16)} }

func (g *gate) Check(ctx context.Context, c Claim) error {
	g.asking <- c
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestConfirmationKeepsRoutesAndDoesNotBlock: a new leader claim leaves
// the previous leader routed until its node confirms it, and while the
// check is outstanding the name server keeps answering and applying other
// registrations.
func TestConfirmationKeepsRoutesAndDoesNotBlock(t *testing.T) {
	g := newGate()
	s, _ := startServer(t, Config{Checker: CheckerFunc(func(ctx context.Context, c Claim) error {
		if c.Term < 2 {
			return nil // the first term's members are confirmed at once
		}
		return g.Check(ctx, c)
	})})
	ns := s.Addr().String()
	c := newClient(t)
	tp := topic("T", 4)
	registerAll(t, s, c, brokerReq(0, 0, 1, tp), brokerReq(1, 1, 1, tp))

	// Node 1 wins term 2; until it is confirmed, node 0 stays the leader.
	if err := RegisterBroker(ctxGuard(t), c, ns, brokerReq(1, 0, 2, tp)); err != nil {
		t.Fatal(err)
	}
	<-g.asking
	if got := mustRoute(t, c, ns, "T").BrokerDataList[0].BrokerAddresses; !maps.Equal(got, map[int64]string{0: addr(0), 1: addr(1)}) {
		t.Fatalf("routes while the claim is checked: %v", got)
	}
	// Other registrations are served meanwhile: a heartbeat, another group.
	other := claim("broker-b", addr(5), 0, 1, topic("U", 1))
	registerAll(t, s, c, brokerReq(0, 0, 1, tp), other)

	close(g.open)
	waitMember(t, s, "broker-a", addr(1), 0, 2)
	if got := mustRoute(t, c, ns, "T").BrokerDataList[0].BrokerAddresses; !maps.Equal(got, map[int64]string{0: addr(1)}) {
		t.Fatalf("routes after the claim was confirmed: %v", got)
	}
}

// TestConfirmationRealFailover: the new leader of a real election (its
// node answers RAFT_STATUS as the leader of the new term) is routed, and
// the former leader's connection closing removes it.
func TestConfirmationRealFailover(t *testing.T) {
	s, _ := startCheckingServer(t, Config{})
	ns := s.Addr().String()
	n0 := startFakeNode(t, "broker-a", "leader", 1)
	n1 := startFakeNode(t, "broker-a", "follower", 1)
	c0, c1 := remoting.NewClient(remoting.ClientConfig{}), newClient(t)
	defer c0.Close()
	registerAll(t, s, c0, claim("broker-a", n0.addr(), 0, 1, topic("T", 4)))
	registerAll(t, s, c1, claim("broker-a", n1.addr(), 1, 1, topic("T", 4)))

	_ = c0.Close() // the leader dies
	n1.set("broker-a", "leader", 2)
	registerAll(t, s, c1, claim("broker-a", n1.addr(), 0, 2, topic("T", 4)))
	if got := leaderOf(t, c1, ns, "T", "broker-a"); got != n1.addr() {
		t.Fatalf("new leader %q, want %s", got, n1.addr())
	}
	if n1.asked.Load() == 0 {
		t.Fatal("the new leader was never asked")
	}
	// A follower that changes term is confirmed too; a heartbeat is not
	// asked again.
	before := n1.asked.Load()
	registerAll(t, s, c1, claim("broker-a", n1.addr(), 0, 2, topic("T", 4)))
	if n1.asked.Load() != before {
		t.Fatal("a heartbeat of a confirmed member was checked again")
	}
}

// TestHeartbeatCopyFromAnotherConnection: a stranger who repeats a
// member's registration and then disconnects does not take the member
// with it.
func TestHeartbeatCopyFromAnotherConnection(t *testing.T) {
	s, _ := startServer(t, Config{})
	leader := newClient(t)
	req := brokerReq(0, 0, 1, topic("T", 1))
	registerAll(t, s, leader, req)
	copier := remoting.NewClient(remoting.ClientConfig{})
	registerAll(t, s, copier, req)
	_ = copier.Close()
	waitFor(t, "the copier's connection to be forgotten", func() bool {
		ms := s.Table().Members()
		return len(ms) == 1 && len(ms[0].Conns) == 1
	})
	// The member's own connection still counts.
	if err := UnregisterBroker(ctxGuard(t), leader, s.Addr().String(),
		UnregisterRequest{ClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerAddr: addr(0)}); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Table().Members()); n != 0 {
		t.Fatalf("%d members after the leader's unregister", n)
	}
}

// TestPendingBound: at most MaxPendingClaims registrations wait; the next
// is answered SYSTEM_BUSY.
func TestPendingBound(t *testing.T) {
	g := newGate()
	g.asking = make(chan Claim, MaxPendingClaims+1)
	s, _ := startServer(t, Config{Checker: g})
	c := newClient(t)
	for i := range MaxPendingClaims {
		r := claim(fmt.Sprintf("g%d", i), addr(1), 0, 1)
		if err := RegisterBroker(ctxGuard(t), c, s.Addr().String(), r); err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
	}
	resp := invokeRegister(t, c, s.Addr().String(), claim("one-too-many", addr(1), 0, 1))
	if resp.Code != remoting.SystemBusy {
		t.Fatalf("claim past the bound answered %v", resp)
	}
	close(g.open)
	settle(t, s)
	if n := len(s.Table().Members()); n != MaxPendingClaims {
		t.Fatalf("%d members after the gate opened, want %d", n, MaxPendingClaims)
	}
}

const testSecret = "0123456789abcdef-test-secret"

// TestSecretRequired: with a cluster secret, unsigned, wrongly signed,
// stale and replayed registrations are refused with NO_PERMISSION and
// change nothing; a signed one is routed; a signed unregister is
// honoured from any connection.
func TestSecretRequired(t *testing.T) {
	s, _ := startServer(t, Config{Secret: testSecret})
	ns := s.Addr().String()
	c := newClient(t)
	signed := func(r RegisterRequest, secret string, at time.Time) RegisterRequest {
		r.Secret, r.SignTime = secret, at
		return r
	}
	for name, r := range map[string]RegisterRequest{
		"unsigned":     brokerReq(0, 0, 1, topic("T", 1)),
		"wrong secret": signed(brokerReq(0, 0, 1, topic("T", 1)), "another-secret-of-16+", t0),
		"stale":        signed(brokerReq(0, 0, 1, topic("T", 1)), testSecret, t0.Add(-6*time.Minute)),
		"future":       signed(brokerReq(0, 0, 1, topic("T", 1)), testSecret, t0.Add(6*time.Minute)),
	} {
		err := RegisterBroker(ctxGuard(t), c, ns, r)
		var ce *remoting.CodeError
		if !errors.Is(err, ErrUnauthenticated) || !errors.As(err, &ce) || ce.Code != remoting.NoPermission {
			t.Errorf("%s: %v, want NO_PERMISSION", name, err)
		}
	}
	// A signed request whose body was changed on the way is refused too.
	cmd, err := RegisterCommand(signed(brokerReq(0, 0, 1, topic("T", 1)), testSecret, t0))
	if err != nil {
		t.Fatal(err)
	}
	tampered := *cmd
	tampered.Body = append([]byte(nil), cmd.Body...)
	tampered.Body[len(tampered.Body)-2] ^= 1
	tampered.ExtFields = maps.Clone(cmd.ExtFields)
	tampered.ExtFields["bodyCrc32"] = "0"
	if resp, err := c.Invoke(ctxGuard(t), ns, &tampered); err != nil || resp.Code != remoting.NoPermission {
		t.Fatalf("tampered body: %v %v", resp, err)
	}
	if n := len(s.Table().Members()); n != 0 {
		t.Fatalf("refused registrations made %d members", n)
	}

	if resp, err := c.Invoke(ctxGuard(t), ns, cmd); err != nil || resp.Code != remoting.Success {
		t.Fatalf("signed registration: %v %v", resp, err)
	}
	waitMember(t, s, "broker-a", addr(0), 0, 1)
	// The same bytes again: a replay.
	if resp, err := c.Invoke(ctxGuard(t), ns, cmd); err != nil || resp.Code != remoting.NoPermission {
		t.Fatalf("replayed registration: %v %v", resp, err)
	}

	// Unsigned unregister, even from the registrant's connection: refused.
	bye := UnregisterRequest{ClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerAddr: addr(0)}
	var ce *remoting.CodeError
	if err := UnregisterBroker(ctxGuard(t), c, ns, bye); !errors.As(err, &ce) || ce.Code != remoting.NoPermission {
		t.Fatalf("unsigned unregister: %v, want NO_PERMISSION", err)
	}
	if n := len(s.Table().Members()); n != 1 {
		t.Fatalf("%d members after an unsigned unregister", n)
	}
	bye.Secret, bye.SignTime = testSecret, t0
	if err := UnregisterBroker(ctxGuard(t), newClient(t), ns, bye); err != nil {
		t.Fatalf("signed unregister from another connection: %v", err)
	}
	if n := len(s.Table().Members()); n != 0 {
		t.Fatalf("%d members after a signed unregister", n)
	}
}

func TestConfigSecret(t *testing.T) {
	if err := (Config{Secret: "short"}).Validate(); err == nil {
		t.Fatal("a short secret was accepted")
	}
	c := Config{Secret: testSecret}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if s := c.String(); !strings.Contains(s, "clusterSecret=set") || strings.Contains(s, testSecret) {
		t.Fatalf("String() = %s", s)
	}
	if auth.CheckSecret(testSecret) != nil {
		t.Fatal("test secret too short")
	}
}
