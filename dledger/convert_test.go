package dledger_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
)

// twoLogCluster starts a three-node group in the two-log layout (whatever
// LEDGERMQ_TEST_TWO_LOG says) that snapshots and compacts its raft log
// often, under load, and returns once 200 messages are acknowledged.
func twoLogCluster(t *testing.T) (*dledgertest.Cluster, context.Context, *load) {
	t.Helper()
	c := dledgertest.MakeCluster(t, 3, snapshotHeavy, func(_ int, cfg *dledger.Config) { cfg.OneLog = false })
	ctx := ctxT(t, 120*time.Second)
	if _, err := c.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	l := startPaddedLoad(c, 4, 900, "T")
	l.waitAcked(t, 200, 30*time.Second)
	waitUntil(t, ctx, "a compacted raft log", func() bool { return compactedPast(c, 1) })
	for _, n := range c.Nodes {
		if messagestore.Of(n.Group()).OneLog() {
			t.Fatalf("%s runs one log before the switch", n.ID)
		}
	}
	return c, ctx, l
}

// restartStopped is a supervisor's pass: every node that stopped itself
// is closed and started again (a start that fails is tried at the next
// pass); it returns the reasons the nodes gave.
func restartStopped(t *testing.T, c *dledgertest.Cluster, down map[string]bool) []error {
	t.Helper()
	var why []error
	for _, n := range c.Nodes {
		if g := n.Group(); g != nil {
			select {
			case <-g.Failed():
				why = append(why, g.Err())
				_ = c.Stop(n.ID)
				down[n.ID] = true
			default:
			}
		}
		if down[n.ID] {
			if err := c.Restart(n.ID); err != nil {
				why = append(why, err)
				continue
			}
			delete(down, n.ID)
		}
	}
	return why
}

// switchAll configures every node for one log with a rolling restart (the
// upgrade's last step) and supervises the nodes until each one has
// converted and the group has a leader again; it returns the reasons the
// nodes stopped for.
func switchAll(t *testing.T, ctx context.Context, c *dledgertest.Cluster, l *load, tweak func(n *dledgertest.Node)) []error {
	t.Helper()
	for _, n := range c.Nodes {
		if err := c.Stop(n.ID); err != nil {
			t.Fatal(err)
		}
		n.Cfg.OneLog = true
		if tweak != nil {
			tweak(n)
		}
		if err := c.Restart(n.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Leader(ctx); err != nil {
			t.Fatal(err)
		}
		// Still two logs: the group switches once every member wants it.
		if messagestore.Of(n.Group()).OneLog() {
			t.Fatalf("%s converted before the group switched", n.ID)
		}
	}
	var why []error
	down := map[string]bool{}
	waitUntil(t, ctx, "every node converted and a leader", func() bool {
		why = append(why, restartStopped(t, c, down)...)
		if len(down) > 0 {
			return false
		}
		for _, n := range c.Nodes {
			if g := n.Group(); g == nil || !messagestore.Of(g).OneLog() {
				return false
			}
		}
		for _, n := range c.Nodes {
			if n.Group().IsLeader() {
				return true
			}
		}
		return false
	})
	return why
}

// finishSupervised is load.finish with the nodes supervised: a node that
// stops itself meanwhile (with one log, a follower sent a snapshot over a
// longer log stops once, ErrRestartNeeded) is started again, as its
// process supervisor would, until every node runs and has applied what
// the leader has.
func finishSupervised(t *testing.T, ctx context.Context, c *dledgertest.Cluster, l *load, topic string) {
	t.Helper()
	l.halt()
	if len(l.errs) > 0 {
		t.Fatalf("unexpected errors: %v", l.errs)
	}
	down := map[string]bool{}
	waitUntil(t, ctx, "every node running and converged", func() bool {
		for _, err := range restartStopped(t, c, down) {
			if !errors.Is(err, dledger.ErrRestartNeeded) {
				t.Logf("a node stopped: %v", err)
			}
		}
		if len(down) > 0 {
			return false
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		err := c.WaitConverged(wctx)
		if err != nil && ctx.Err() == nil && time.Until(deadlineOr(ctx)) < 3*time.Second {
			t.Logf("not converged yet: %v", err)
		}
		return err == nil
	})
	if err := c.CompareReplicas(); err != nil {
		t.Fatal(err)
	}
	checkNoLoss(t, c, l, topic)
}

func deadlineOr(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Hour)
}

func checkConverted(t *testing.T, c *dledgertest.Cluster) {
	t.Helper()
	for _, n := range c.Nodes {
		raftDir := filepath.Join(n.Cfg.DataDir, "raft")
		for _, gone := range []string{"wal", "wal.converted"} {
			if _, err := os.Stat(filepath.Join(raftDir, gone)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: raft/%s is still there (%v)", n.ID, gone, err)
			}
		}
		if _, err := os.Stat(filepath.Join(raftDir, "state.json")); err != nil {
			t.Errorf("%s: raft/state.json: %v", n.ID, err)
		}
		if since := n.Group().Metadata().OneLogSince(); since == 0 {
			t.Errorf("%s: the group's metadata does not record the switch", n.ID)
		}
	}
}

// TestSwitchToOneLogInPlace: a two-log group under load is configured for
// one log node by node; once every member wants it the leader switches
// the group, each node stops once and converts its data as it starts, and
// the group goes on in one log: nothing acknowledged before, during or
// after the switch is lost, replicas stay byte-identical, raft-wal is gone.
func TestSwitchToOneLogInPlace(t *testing.T) {
	c, ctx, l := twoLogCluster(t)
	why := switchAll(t, ctx, c, l, nil)
	restarts := 0
	for _, err := range why {
		if errors.Is(err, dledger.ErrRestartNeeded) {
			restarts++
		} else {
			t.Errorf("a node stopped for another reason: %v", err)
		}
	}
	if restarts < 3 {
		t.Errorf("%d nodes stopped for the switch, want 3: %v", restarts, why)
	}
	before := l.ackedCount()
	l.waitAcked(t, before+200, 30*time.Second)
	finishSupervised(t, ctx, c, l, "T")
	checkConverted(t, c)
	// A restart of the whole group reads the converted data again.
	for _, n := range c.Nodes {
		if err := c.Kill(n.ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.Nodes {
		if err := c.Restart(n.ID); err != nil {
			t.Fatal(err)
		}
	}
	l2 := startLoad(t, c, 2, "T2")
	l2.waitAcked(t, 50, 30*time.Second)
	finishSupervised(t, ctx, c, l2, "T2")
	checkNoLoss(t, c, l, "T")
}

// TestSwitchToOneLogResumesAfterCrash: a node that crashes at any step of
// its conversion completes it at its next start, and the group ends
// byte-identical with nothing acknowledged lost.
func TestSwitchToOneLogResumesAfterCrash(t *testing.T) {
	for step := dledger.ConvertSnapshot; step <= dledger.ConvertDone; step++ {
		t.Run(fmt.Sprint(step), func(t *testing.T) {
			c, ctx, l := twoLogCluster(t)
			crashed := 0
			why := switchAll(t, ctx, c, l, func(n *dledgertest.Node) {
				if n.ID != "n1" {
					return
				}
				dledger.SetConvertStopForTest(&n.Cfg, func(s dledger.ConvertStep) bool {
					if s == step && crashed == 0 {
						crashed++
						return true
					}
					return false
				})
			})
			if crashed != 1 {
				t.Fatalf("the conversion never reached step %v (%v)", step, why)
			}
			l.waitAcked(t, l.ackedCount()+100, 30*time.Second)
			finishSupervised(t, ctx, c, l, "T")
			checkConverted(t, c)
		})
	}
}

// TestSwitchToOneLogReplacedNode: a node of a group that switched loses
// its disk and comes back configured for two logs: it is sent a snapshot
// of the one-log group, stops once, converts what it was sent, and serves
// the same bytes as the others.
func TestSwitchToOneLogReplacedNode(t *testing.T) {
	c, ctx, l := twoLogCluster(t)
	switchAll(t, ctx, c, l, nil)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lost := followerOf(c, leader)
	if err := c.Stop(lost.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Wipe(lost.ID); err != nil {
		t.Fatal(err)
	}
	// It starts in the wal layout, as a node that learned its group's
	// layout before the switch and was cut off since (a node without data
	// would take the one log at once: TestReplacedNodeTakesGroupLayout):
	// raft's term and vote on disk mark it as one that has run before.
	lost.Cfg.OneLog = false
	seedRanBefore(t, lost)
	last := leader.Group().Raft().LastIndex()
	waitUntil(t, ctx, "the leader compacted its log", func() bool {
		g := leaderGroup(c)
		return g != nil && messagestore.Of(g).FirstEntry() > last
	})
	if err := c.Restart(lost.ID); err != nil {
		t.Fatal(err)
	}
	var why []error
	down := map[string]bool{}
	waitUntil(t, ctx, lost.ID+" converted", func() bool {
		why = append(why, restartStopped(t, c, down)...)
		g := lost.Group()
		return len(down) == 0 && g != nil && messagestore.Of(g).OneLog()
	})
	if len(why) != 1 || !errors.Is(why[0], dledger.ErrRestartNeeded) {
		t.Errorf("%s stopped for %v, want one restart for the conversion", lost.ID, why)
	}
	l.waitAcked(t, l.ackedCount()+100, 30*time.Second)
	finishSupervised(t, ctx, c, l, "T")
	checkConverted(t, c)
}

// seedRanBefore gives a wiped node's data directory a raft state file, so
// it starts in its configured layout instead of asking its group's.
func seedRanBefore(t *testing.T, n *dledgertest.Node) {
	t.Helper()
	raftDir := filepath.Join(n.Cfg.DataDir, "raft")
	if err := os.MkdirAll(raftDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(raftDir, "state.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
}
