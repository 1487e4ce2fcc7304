package broker_test

import (
	"testing"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/remoting"
)

// A leader cut off from its group, and deposed, must not answer a
// consumer-offset query from its own state: the group has committed a
// newer offset since, and a client that reads it there would go back.
func TestQueryOffsetOfDeposedLeaderIsNotStale(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	createTestTopic(t, tc, "LT", 1)
	_, oldID := leaderGroup(t, tc)
	c := newTestClient(t)
	const group = "cg_lin"
	commit := func(addr, off string) {
		t.Helper()
		r := c.call(t, addr, remoting.UpdateConsumerOffset, map[string]string{
			"consumerGroup": group, "topic": "LT", "queueId": "0", "commitOffset": off}, nil)
		if r.Code != remoting.Success {
			t.Fatalf("commit %s at %s: %d %s", off, addr, r.Code, r.Remark)
		}
	}
	commit(tc.Peers[oldID], "7")
	broker.WaitFor(t, "offset 7 on every node", func() bool { return offsetEverywhere(t, tc, c, group, "LT", 0, "7") })

	tc.Raft.Net.Isolate(oldID)
	var newID string
	broker.WaitFor(t, "another leader", func() bool {
		for _, n := range tc.Raft.Up() {
			if g := n.Group(); n.ID != oldID && g != nil && g.IsLeader() {
				newID = n.ID
				return true
			}
		}
		return false
	})
	commit(tc.Peers[newID], "9")
	broker.WaitFor(t, "offset 9 at the new leader", func() bool {
		code, off := queryOffset(t, c, tc.Peers[newID], group, "LT", 0)
		return code == remoting.Success && off == "9"
	})
	// The old leader, still cut off: an error (no leader it can reach,
	// no barrier it can pass) or the group's offset, never its own 7.
	if code, off := queryOffset(t, c, tc.Peers[oldID], group, "LT", 0); code == remoting.Success && off != "9" {
		t.Fatalf("the deposed leader answered offset %s; the group committed 9", off)
	}
	tc.Raft.Net.Rejoin(oldID)
	broker.WaitFor(t, "offset 9 everywhere after the heal", func() bool { return offsetEverywhere(t, tc, c, group, "LT", 0, "9") })
}

// BenchmarkQueryConsumerOffset is one QUERY_CONSUMER_OFFSET at the leader
// of a 3-node group: with linearizable reads, a raft barrier each.
func BenchmarkQueryConsumerOffset(b *testing.B) {
	tc := brokertest.StartCluster(b, 3, nil)
	createTestTopic(b, tc, "BQ", 1)
	_, leaderID := leaderGroup(b, tc)
	c := newTestClient(b)
	leader := tc.Peers[leaderID]
	c.call(b, leader, remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": "cg_bench", "topic": "BQ", "queueId": "0", "commitOffset": "3"}, nil)
	broker.WaitFor(b, "offset 3", func() bool { return offsetEverywhere(b, tc, c, "cg_bench", "BQ", 0, "3") })
	b.ResetTimer()
	refused := 0
	for range b.N {
		if code, _ := queryOffset(b, c, leader, "cg_bench", "BQ", 0); code != remoting.Success {
			refused++ // a leader change under the test's short raft timing
		}
	}
	b.ReportMetric(float64(refused), "refused")
}
