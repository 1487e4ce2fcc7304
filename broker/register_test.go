package broker

import (
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
)

// testRegistration: the leader registers as brokerId 0 with its raft term,
// followers as 1 + their position among the sorted node ids.
func testRegistration(t *testing.T, tc *TestCluster) {
	leaderID, leaderAddr, g := leaderOf(t, tc)
	term := int64(g.Role().Term)
	want := map[string]int64{"n0": 1, "n1": 2, "n2": 3}
	want[leaderID] = 0
	waitUntil(t, 10*time.Second, "every node registered", func() bool {
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

// TestUnregisterOnClose: a broker that closes leaves the name server.
func TestUnregisterOnClose(t *testing.T) {
	tc := StartTestCluster(t, 1, nil)
	addr := tc.Peers["n0"]
	waitUntil(t, 10*time.Second, "registered", func() bool { return memberID(tc, addr) == 0 })
	tc.Kill("n0")
	if id := memberID(tc, addr); id != -1 {
		t.Fatalf("still registered as %d after Close", id)
	}
}
