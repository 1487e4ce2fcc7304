package routing

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// stallAttack opens n connections that each announce a 16 MiB frame of
// code, send sent bytes of it (a valid header first) and stop; the test's
// cleanup closes them.
func stallAttack(t *testing.T, ns string, code int32, n, sent int) {
	t.Helper()
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		nc, err := remoting.StallFrame(ctx, ns, code, remoting.DefaultMaxFrameSize, sent)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = nc.Close() })
	}
}

// 32 connections each stalled inside a 16 MiB registration frame filled
// the name server's read budget, and every other request timed out for as
// long as they stayed open. Now routes are read, clusters listed and a
// registration of 10 000 topics (a large body, admitted once the stalled
// frames are closed) accepted while the attack runs; a frame of a code
// that carries no large body is refused at once.
func TestStalledRegistrationsDoNotStopTheNameServer(t *testing.T) {
	s, _ := startServer(t, Config{Limits: remoting.Limits{StallGrace: 20 * time.Millisecond}})
	ns := s.Addr().String()
	c := newClient(t)
	if err := RegisterBroker(ctxGuard(t), c, ns, brokerReq(0, 0, 1, topic("T", 4))); err != nil {
		t.Fatal(err)
	}
	waitMember(t, s, "broker-a", addr(0), 0, 1)

	stallAttack(t, ns, remoting.RegisterBroker, 32, 1<<20)
	waitFor(t, "the attack holding the budget's large part", func() bool {
		st := s.Stats().Remoting
		return st.ReadWaiting > 0 || st.StalledCloses > 0
	})
	for range 20 {
		mustRoute(t, c, ns, "T")
		if resp := invoke(t, c, ns, remoting.GetBrokerClusterInfo, nil, nil); resp.Code != remoting.Success {
			t.Fatalf("cluster info: %v", resp)
		}
	}

	topics := make([]protocol.TopicConfig, 10_000)
	for i := range topics {
		topics[i] = topic(fmt.Sprintf("topic-%05d", i), 8)
	}
	big := brokerReq(1, 0, 1, topics...)
	big.BrokerName = "broker-b"
	cmd, err := RegisterCommand(big)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmd.Body) <= remoting.SmallFrameSize {
		t.Fatalf("registration of %d bytes is not a large body", len(cmd.Body))
	}
	if err := RegisterBroker(ctxGuard(t), c, ns, big); err != nil {
		t.Fatal(err)
	}
	waitMember(t, s, "broker-b", addr(1), 0, 1)
	mustRoute(t, c, ns, "topic-09999")

	// A route request with a large body is refused before its body is
	// read; the attack's frames are closed as stalled.
	if resp := invoke(t, c, ns, remoting.GetRouteInfoByTopic, map[string]string{"topic": "T"},
		make([]byte, remoting.SmallFrameSize+1)); resp.Code != remoting.SystemError {
		t.Fatalf("large route request: %v", resp)
	}
	st := s.Stats().Remoting
	if st.RefusedBodies != 1 || st.StalledCloses == 0 || s.ReadHealth() != nil {
		t.Fatalf("stats %+v, health %v", st, s.ReadHealth())
	}
}

// With the cluster secret set, an unsigned registration is refused its
// large body before it is read.
func TestUnsignedLargeRegistrationRefused(t *testing.T) {
	s, _ := startServer(t, Config{Secret: "0123456789abcdef-secret"})
	ns := s.Addr().String()
	raw, err := net.Dial("tcp", ns)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	c := newClient(t)
	resp := invoke(t, c, ns, remoting.RegisterBroker, map[string]string{"brokerName": "x"}, make([]byte, remoting.SmallFrameSize+1))
	if resp.Code != remoting.SystemError || s.Stats().Remoting.RefusedBodies != 1 {
		t.Fatalf("%v %+v", resp, s.Stats().Remoting)
	}
}
