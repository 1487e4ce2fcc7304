package broker

import (
	"testing"

	"github.com/ledgermq/ledgermq/dledger"
)

func TestBrokerIDs(t *testing.T) {
	b := &Broker{cfg: Config{NodeID: "n1", Peers: map[string]string{"n0": "", "n1": "", "n2": ""}}}
	for _, c := range []struct {
		role string
		want int64
	}{{dledger.RoleLeader, 0}, {dledger.RoleFollower, 2}, {dledger.RoleCandidate, 2}} {
		if got := b.brokerID(dledger.RoleEvent{Role: c.role}); got != c.want {
			t.Errorf("%s: id %d, want %d", c.role, got, c.want)
		}
	}
}

// TestFollowerIDStableForLife: a node's follower id comes from its own
// node id (RocketMQ's DLedger rule, number + 1), so it does not move when
// the membership changes or when ids sort differently as text; only a
// group with ids that carry no number falls back to positions.
func TestFollowerIDStableForLife(t *testing.T) {
	peers := func(ids ...string) map[string]string {
		m := map[string]string{}
		for _, id := range ids {
			m[id] = ""
		}
		return m
	}
	for _, c := range []struct {
		node  string
		peers map[string]string
		want  int64
	}{
		{"n0", peers("n0", "n1", "n2"), 1},
		{"n2", peers("n0", "n1", "n2"), 3},
		// n1 removed and n3 added: n2 keeps 3, n3 does not take it.
		{"n2", peers("n0", "n2", "n3"), 3},
		{"n3", peers("n0", "n2", "n3"), 4},
		// Eleven nodes: "n10" sorts before "n2" as text.
		{"n2", peers("n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10"), 3},
		{"n10", peers("n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10"), 11},
		{"broker-7", peers("broker-5", "broker-7"), 8},
		// No numbers, or the same number twice: positions.
		{"b", peers("a", "b", "c"), 2},
		{"x1", peers("a1", "x1", "z"), 2},
		{"b1", peers("a1", "b1", "c01"), 2},
	} {
		if got := followerID(c.node, c.peers); got != c.want {
			t.Errorf("%s among %d peers: %d, want %d", c.node, len(c.peers), got, c.want)
		}
	}
}
