package client

import (
	"fmt"
	"testing"

	"github.com/ledgermq/ledgermq/dledger"
)

// TestClusterListNamesEveryMember: the cluster list names every member of
// a group by its node id, a dead one too, whether the group has a leader
// or not (an election under way, here a lost majority, when the name
// server lists only the survivor).
func TestClusterListNamesEveryMember(t *testing.T) {
	tc := startCluster(t, nil)
	ctx := ctxGuard(t)
	a := newAdmin(t, tc.NamesrvAddr())
	describe := func(ms []MemberStatus) string {
		s := ""
		for _, m := range ms {
			s += fmt.Sprintf("[%s %s bid=%d] ", m.ID, m.Role, m.BrokerID)
		}
		return s
	}
	check := func(ms []MemberStatus, dead map[string]bool) {
		t.Helper()
		if len(ms) != 3 {
			t.Fatalf("%d rows, want 3: %s", len(ms), describe(ms))
		}
		for i, m := range ms {
			if want := fmt.Sprintf("n%d", i); m.ID != want {
				t.Fatalf("row %d is %q, want %s: %s", i, m.ID, want, describe(ms))
			}
			if dead[m.ID] != (m.Role == "unreachable") || dead[m.ID] != (m.Error != "") {
				t.Fatalf("%s: role %q error %q: %s", m.ID, m.Role, m.Error, describe(ms))
			}
		}
	}

	// A dead follower, the group led.
	leader, err := tc.Raft.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var followers []string
	for _, n := range tc.Raft.Up() {
		if n.ID != leader.ID {
			followers = append(followers, n.ID)
		}
	}
	tc.Kill(followers[0])
	ms, err := a.ClusterList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(ms, map[string]bool{followers[0]: true})

	// The leader dies too: no leader can be elected; the survivor
	// campaigns and still knows the configuration.
	tc.Kill(leader.ID)
	g := tc.Raft.Node(followers[1]).Group()
	waitFor(t, followers[1]+" campaigning", func() bool { return g.Role().Role == dledger.RoleCandidate })
	waitFor(t, "every member listed by its id", func() bool {
		ms, err = a.ClusterList(ctx)
		return err == nil && len(ms) == 3
	})
	check(ms, map[string]bool{followers[0]: true, leader.ID: true})
	for _, m := range ms {
		if m.ID == followers[1] && (m.Role != dledger.RoleCandidate || m.BrokerID != int64(m.ID[1]-'0')+1) {
			t.Fatalf("the survivor: %s", describe(ms))
		}
	}
}
