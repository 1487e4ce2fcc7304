package dledger_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/internal/testwait"
	"github.com/ledgermq/ledgermq/message"
)

// TestGroupIdleApplyLagClears: entries raft never hands to the FSM (each
// new leader's no-op, the barrier it runs before it accepts writes) count
// as applied, so on an idle group every node's applied index reaches the
// commit index after any number of leader changes: the apply lag (commit
// minus applied, ledgermq_raft_apply_lag_entries) is 0, not 2 for ever.
func TestGroupIdleApplyLagClears(t *testing.T) {
	// No replica checkpoints: they are commands, and one proposed after the
	// last election would hide the entries that precede it.
	c := dledgertest.MakeCluster(t, 3, func(_ int, cfg *dledger.Config) { cfg.VerifyInterval = -1 })
	ctx := ctxT(t, 90*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leader.Group().Propose(ctx, []*message.Ext{dledger.NewTestMsg("T", 0, "m")}); err != nil {
		t.Fatal(err)
	}
	// A new group raises its format version once (a command): let that
	// happen first.
	testwait.For(t, 20*time.Second, "the group's format version raised", func() bool {
		return leader.Group().FormatVersion() == leader.Group().MaxFormatVersion()
	})
	for i := range 5 {
		ld, err := c.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		next := c.Nodes[(indexOf(c, ld.ID)+1)%len(c.Nodes)].ID
		transferTo(t, ctx, c, next)
		t.Logf("leader change %d: %s -> %s", i+1, ld.ID, next)
	}
	testwait.For(t, 20*time.Second, "no apply lag on any node of the idle group", func() bool {
		lg := leaderGroup(c)
		if lg == nil {
			return false
		}
		last := lg.Status().LastIndex
		for _, n := range c.Up() {
			st := n.Group().Status()
			if st.CommitIndex != last || st.CommitIndex-st.AppliedIndex != 0 {
				return false
			}
		}
		return true
	})
	for _, n := range c.Up() {
		st := n.Group().Status()
		if lag := st.CommitIndex - st.AppliedIndex; lag != 0 {
			t.Errorf("%s: commit %d applied %d lag %d", n.ID, st.CommitIndex, st.AppliedIndex, lag)
		}
	}
}

func indexOf(c *dledgertest.Cluster, id string) int {
	for i, n := range c.Nodes {
		if n.ID == id {
			return i
		}
	}
	panic(fmt.Sprintf("no node %s", id))
}
