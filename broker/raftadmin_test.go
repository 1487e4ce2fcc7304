package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/internal/testwait"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

func raftStatusOf(t *testing.T, c *remoting.Client, addr string) protocol.RaftStatus {
	t.Helper()
	resp := invoke(t, c, addr, remoting.NewRequest(remoting.RaftStatus, nil, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("RAFT_STATUS at %s: %d %s", addr, resp.Code, resp.Remark)
	}
	st, err := protocol.DecodeRaftStatus(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestRaftAdmin drives the raft admin requests against a 3-node group: the
// status every node reports, a transfer to a named member (sent to a
// follower, which forwards it), the refusals, and a member removed and added
// back, first as a non-voter, then promoted.
func TestRaftAdmin(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	c := newProdClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leaderAddr, err := tc.LeaderAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ls := raftStatusOf(t, c, leaderAddr)
	if ls.Role != "leader" || ls.Group != "broker-a" || len(ls.Members) != 3 || ls.LeaderAddr != leaderAddr {
		t.Fatalf("leader's status: %+v", ls)
	}
	var follower protocol.RaftMember
	for _, m := range ls.Members {
		if !m.Voter || m.ClientAddr != tc.Peers[m.ID] || m.RaftAddr == "" {
			t.Fatalf("member %+v", m)
		}
		if m.ID != ls.Node {
			follower = m
		}
		// A follower learns of the leader from its first append, which may
		// come after the leader registered.
		var st protocol.RaftStatus
		testwait.For(t, 10*time.Second, m.ID+" knowing the leader", func() bool {
			st = raftStatusOf(t, c, m.ClientAddr)
			return st.Leader != ""
		})
		if st.Node != m.ID || st.Leader != ls.Node {
			t.Fatalf("%s's status: %+v", m.ID, st)
		}
	}

	// Transfer to the follower, asked of the other follower.
	var other protocol.RaftMember
	for _, m := range ls.Members {
		if m.ID != ls.Node && m.ID != follower.ID {
			other = m
		}
	}
	resp := invoke(t, c, other.ClientAddr, protocol.RaftNodeHeader{Node: follower.ID}.Request(remoting.RaftTransferLeader))
	if resp.Code != remoting.Success {
		t.Fatalf("transfer: %d %s", resp.Code, resp.Remark)
	}
	broker.WaitUntil(t, 10*time.Second, "the named member to lead", func() bool {
		return raftStatusOf(t, c, follower.ClientAddr).Role == "leader"
	})
	leader, old := follower, ls

	// Refusals: the leader itself, an unknown member, malformed headers.
	for _, tt := range []struct {
		name string
		req  *remoting.Command
		code int32
	}{
		{"remove the leader", protocol.RaftNodeHeader{Node: leader.ID}.Request(remoting.RaftRemoveNode), remoting.InvalidParameter},
		{"remove a stranger", protocol.RaftNodeHeader{Node: "n9"}.Request(remoting.RaftRemoveNode), remoting.InvalidParameter},
		{"remove without a node", remoting.NewRequest(remoting.RaftRemoveNode, nil, nil), remoting.SystemError},
		{"add with a bad address", remoting.NewRequest(remoting.RaftAddNode, map[string]string{"node": "n9", "raftAddr": "nowhere", "voter": "false"}, nil), remoting.SystemError},
	} {
		if resp := invoke(t, c, leader.ClientAddr, tt.req); resp.Code != tt.code {
			t.Errorf("%s: code %d %s, want %d", tt.name, resp.Code, resp.Remark, tt.code)
		}
	}

	// Remove the old leader (now a follower), add it back as a non-voter,
	// then promote it.
	gone := old.Node
	addr, _ := old.Member(gone)
	if resp := invoke(t, c, leader.ClientAddr, protocol.RaftNodeHeader{Node: gone}.Request(remoting.RaftRemoveNode)); resp.Code != remoting.Success {
		t.Fatalf("remove %s: %d %s", gone, resp.Code, resp.Remark)
	}
	if _, ok := raftStatusOf(t, c, leader.ClientAddr).Member(gone); ok {
		t.Fatalf("%s still a member after removal", gone)
	}
	for _, voter := range []bool{false, true} {
		req := protocol.RaftNodeHeader{Node: gone, RaftAddr: addr.RaftAddr, Voter: voter}.Request(remoting.RaftAddNode)
		if resp := invoke(t, c, leader.ClientAddr, req); resp.Code != remoting.Success {
			t.Fatalf("add %s (voter %v): %d %s", gone, voter, resp.Code, resp.Remark)
		}
		m, ok := raftStatusOf(t, c, leader.ClientAddr).Member(gone)
		if !ok || m.Voter != voter {
			t.Fatalf("after add (voter %v): %+v %v", voter, m, ok)
		}
	}
	broker.WaitUntil(t, 10*time.Second, "the re-added node to follow the leader", func() bool {
		st := raftStatusOf(t, c, addr.ClientAddr)
		return st.Leader == leader.ID && len(st.Members) == 3
	})
}
