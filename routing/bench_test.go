package routing

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// benchTopics returns n topic configs.
func benchTopics(n int) []protocol.TopicConfig {
	out := make([]protocol.TopicConfig, n)
	for i := range out {
		out[i] = topic(fmt.Sprintf("topic-%05d", i), 8)
	}
	return out
}

// benchTable is a table with a 3-member group serving n topics.
func benchTable(b *testing.B, n int) *RouteTable {
	b.Helper()
	tb := NewRouteTable(0)
	for node := range 3 {
		if _, err := tb.Register(reg(node, int64(node), 1, benchTopics(n)...)); err != nil {
			b.Fatal(err)
		}
	}
	return tb
}

// BenchmarkRoute is the GET_ROUTEINFO_BY_TOPIC work without the network:
// lookup and JSON encoding.
func BenchmarkRoute(b *testing.B) {
	tb := benchTable(b, 1000)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r, ok := tb.Route("topic-00500")
			if !ok {
				b.Fatal("no route")
			}
			if _, err := json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkHeartbeat is a periodic leader registration whose topics did
// not change (the common case): decode the 1000-topic body and refresh.
func BenchmarkHeartbeat(b *testing.B) {
	for _, compressed := range []bool{false, true} {
		b.Run(fmt.Sprintf("compressed=%v", compressed), func(b *testing.B) {
			s, err := NewServer(Config{Clock: NewManualClock(t0)})
			if err != nil {
				b.Fatal(err)
			}
			req := brokerReq(0, 0, 1, benchTopics(1000)...)
			req.Compressed = compressed
			cmd, err := RegisterCommand(req)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(cmd.Body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.register(cmd.ExtFields, cmd.Body, fakeConn(1)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTopicChange is a leader registration whose DataVersion changed:
// the group's 1000 topics are replaced.
func BenchmarkTopicChange(b *testing.B) {
	tb := benchTable(b, 1000)
	r := reg(0, 0, 1, benchTopics(1000)...)
	b.ReportAllocs()
	for b.Loop() {
		r.DataVersion.Counter++
		if _, err := tb.Register(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRouteOverTCP is a GET_ROUTEINFO_BY_TOPIC round trip over
// loopback, from concurrent callers sharing one connection.
func BenchmarkRouteOverTCP(b *testing.B) {
	s, _ := startServer(b, Config{})
	ns := s.Addr().String()
	c := newClient(b)
	registerAll(b, s, c, brokerReq(0, 0, 1, benchTopics(100)...), brokerReq(1, 1, 1), brokerReq(2, 2, 1))
	req := remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "topic-00050"}, nil)
	ctx := ctxGuard(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := c.Invoke(ctx, ns, req)
			if err != nil || resp.Code != remoting.Success {
				b.Fatalf("%v %v", resp, err)
			}
		}
	})
}

// BenchmarkLeaderClaim is a failover as the name server sees it: a new
// term's leader registers and the benchmark waits until clients would be
// routed to it. "checked" asks the node for RAFT_STATUS over loopback (the
// default); "unchecked" confirms without asking, so the difference is
// what confirmation adds to a failover.
func BenchmarkLeaderClaim(b *testing.B) {
	for _, mode := range []string{"unchecked", "checked"} {
		b.Run(mode, func(b *testing.B) {
			var s *Server
			if mode == "checked" {
				s, _ = startCheckingServer(b, Config{})
			} else {
				s, _ = startServer(b, Config{})
			}
			node := startFakeNode(b, "broker-a", "leader", 1)
			c := newClient(b)
			ctx := ctxGuard(b)
			term := int64(1)
			registerAll(b, s, c, claim("broker-a", node.addr(), 0, term, topic("T", 4)))
			b.ResetTimer()
			for b.Loop() {
				term++
				node.set("broker-a", "leader", uint64(term))
				if err := RegisterBroker(ctx, c, s.Addr().String(), claim("broker-a", node.addr(), 0, term, topic("T", 4))); err != nil {
					b.Fatal(err)
				}
				for !hasMember(s, "broker-a", node.addr(), 0, term) {
					runtime.Gosched()
				}
			}
		})
	}
}
