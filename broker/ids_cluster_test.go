package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/dledger"
)

// listedIDs returns the name server's broker ids of broker-a by node id.
func listedIDs(tc *brokertest.Cluster) map[string]int64 {
	out := map[string]int64{}
	for _, m := range tc.Namesrv.Table().Members() {
		for id, addr := range tc.Peers {
			if addr == m.Addr {
				out[id] = m.BrokerID
			}
		}
	}
	return out
}

// TestBrokerIDsThroughFailovers: across leader changes every node is
// listed either as brokerId 0 (while it leads) or under its own follower
// id (n0 → 1, n1 → 2, n2 → 3); the others are never renumbered.
func TestBrokerIDsThroughFailovers(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	slot := map[string]int64{"n0": 1, "n1": 2, "n2": 3}
	for round := range 4 {
		leaderID, _, g := leaderOf(t, tc)
		want := map[string]int64{}
		for id, s := range slot {
			want[id] = s
		}
		want[leaderID] = 0
		broker.WaitUntil(t, 20*time.Second, fmt.Sprintf("round %d: ids %v", round, want), func() bool {
			return fmt.Sprint(listedIDs(tc)) == fmt.Sprint(want)
		})
		if round == 3 {
			break
		}
		next := fmt.Sprintf("n%d", (int(slot[leaderID]))%3)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		broker.WaitUntil(t, 20*time.Second, "leadership moved to "+next, func() bool {
			if ld, _, _ := leaderOf(t, tc); ld == next {
				return true
			}
			_ = g.TransferLeadership(ctx, next)
			_, _, g = leaderOf(t, tc)
			return false
		})
		cancel()
	}
}

// TestCandidateStaysListed: a node whose group has lost its leader (and
// here its majority) campaigns as a candidate and stays listed under its
// own id, as a RocketMQ DLedger slave does, rather than leaving the routes
// during every election.
func TestCandidateStaysListed(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	leaderID, _, _ := leaderOf(t, tc)
	survivor := ""
	for _, n := range tc.Raft.Up() {
		if n.ID != leaderID {
			survivor = n.ID
		}
	}
	for _, n := range tc.Raft.Up() {
		if n.ID != survivor {
			tc.Kill(n.ID)
		}
	}
	g := tc.Raft.Node(survivor).Group()
	want := map[string]int64{survivor: int64(survivor[1]-'0') + 1}
	// With pre-vote a node that cannot win goes back to follower between
	// tries, so it is a candidate only now and then: what matters is that,
	// leaderless, it stays listed under its own id.
	broker.WaitUntil(t, 20*time.Second, fmt.Sprintf("%s campaigning and listed as %v", survivor, want), func() bool {
		r := g.Role()
		return r.Role != dledger.RoleLeader && r.LeaderID == "" && fmt.Sprint(listedIDs(tc)) == fmt.Sprint(want)
	})
}
