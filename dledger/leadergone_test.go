package dledger_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/message"
)

// TestLeaderGoneCampaignsEarly kills a leader as kill -9 does (its
// connections reset, its port refuses): both followers find it gone from
// the reset connections, at least one campaigns at its turn rather than at
// raft's heartbeat timeout, a new leader takes writes with nothing lost,
// and every survivor runs with the configured timeouts again afterwards.
// Killing a follower first makes no one find the leader gone.
func TestLeaderGoneCampaignsEarly(t *testing.T) {
	// A lease far below the heartbeat timeout: the early turns (100 and
	// 133 ms after the last contact) come long before raft's own timeout
	// (1 to 2 s) however slowly a loaded machine schedules the test.
	timing := dledger.Timing{Name: "leader-gone", HeartbeatTimeout: time.Second, ElectionTimeout: time.Second,
		LeaderLease: 100 * time.Millisecond, CommitTimeout: 5 * time.Millisecond}
	c := dledgertest.MakeCluster(t, 3, func(_ int, cfg *dledger.Config) { cfg.Timing = timing })
	ctx := ctxT(t, 60*time.Second)
	l, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	propose := func(g *dledger.Group, n int, tag string) {
		t.Helper()
		var msgs []*message.Ext
		for i := range n {
			msgs = append(msgs, dledger.NewTestMsg("T", 0, fmt.Sprintf("%s-%d", tag, i)))
		}
		if _, err := g.Propose(ctx, msgs); err != nil {
			t.Fatalf("propose %s: %v", tag, err)
		}
	}
	propose(l.Group(), 20, "first")

	// A follower dies and comes back: the leader stays, no one campaigns.
	var follower string
	for _, n := range c.Up() {
		if n.ID != l.ID {
			follower = n.ID
			break
		}
	}
	if err := c.Kill(follower); err != nil {
		t.Fatal(err)
	}
	propose(l.Group(), 20, "follower-down")
	if err := c.Restart(follower); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Up() {
		if seen, early := n.Group().LeaderGoneForTest(); seen != 0 || early != 0 {
			t.Fatalf("%s found the leader gone (%d, %d) while it lived", n.ID, seen, early)
		}
	}
	if l2, err := c.Leader(ctx); err != nil || l2.ID != l.ID {
		t.Fatalf("leader after a follower's restart: %v %v, want %s", l2, err, l.ID)
	}

	// The leader dies.
	if err := c.Kill(l.ID); err != nil {
		t.Fatal(err)
	}
	survivors := c.Up()
	// Each follower's check asks the dead leader's port; on a machine
	// loaded enough that the question times out the check says nothing
	// (by design: raft's own timeout stays), so one follower finding the
	// leader gone is what the test can count on.
	waitUntil(t, ctx, "a follower finds the leader gone", func() bool {
		for _, n := range survivors {
			if seen, _ := n.Group().LeaderGoneForTest(); seen != 0 {
				return true
			}
		}
		return false
	})
	nl, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	propose(nl.Group(), 20, "new-leader")
	var early uint64
	for _, n := range survivors {
		_, e := n.Group().LeaderGoneForTest()
		early += e
	}
	if early == 0 {
		t.Fatal("no follower campaigned early")
	}
	waitUntil(t, ctx, "the configured timeouts again", func() bool {
		for _, n := range survivors {
			rc := n.Group().Raft().ReloadableConfig()
			if rc.HeartbeatTimeout != timing.HeartbeatTimeout || rc.ElectionTimeout != timing.ElectionTimeout {
				return false
			}
		}
		return true
	})
	if err := c.Restart(l.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.CompareReplicas(); err != nil {
		t.Fatal(err)
	}
}
