package dledger_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/internal/testwait"
)

// snapshotHeavy makes every node snapshot and compact its raft log often,
// on small CommitLog segments, so catch-up needs a snapshot soon.
func snapshotHeavy(_ int, c *dledger.Config) {
	c.Store.SegmentSize = 256 << 10
	c.Store.MaxMessageSize = 64 << 10
	c.MaxBatchBytes = 64 << 10
	c.SnapshotThreshold = 64
	c.TrailingLogs = 32
	c.SnapshotInterval = 20 * time.Millisecond
	// Compacted entries stay readable until their raft log segment goes:
	// small segments make compaction really drop them.
	c.RaftSegmentSize = 64 << 10
}

// waitUntil polls cond until it holds or ctx ends.
func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	testwait.Ctx(t, ctx, what, cond)
}

// leaderGroup returns the current writable leader, or nil.
func leaderGroup(c *dledgertest.Cluster) *dledger.Group {
	for _, n := range c.Up() {
		if g := n.Group(); g != nil && g.IsLeader() {
			return g
		}
	}
	return nil
}

// compactedPast reports whether the leader has taken a snapshot and its
// raft log no longer holds index i.
func compactedPast(c *dledgertest.Cluster, i uint64) bool {
	g := leaderGroup(c)
	if g == nil {
		return false
	}
	first, err := g.WALForTest().FirstIndex()
	snap, _ := strconv.ParseUint(g.Raft().Stats()["last_snapshot_index"], 10, 64)
	return err == nil && snap > 0 && first > i
}

// catchUpThroughSnapshot restarts a stopped follower and checks that it
// catches up, through a snapshot install, while the load goes on.
func catchUpThroughSnapshot(t *testing.T, ctx context.Context, c *dledgertest.Cluster, l *load, id string) {
	t.Helper()
	start := time.Now()
	if err := c.Restart(id); err != nil {
		t.Fatal(err)
	}
	g := c.Node(id).Group()
	waitUntil(t, ctx, id+" restored a snapshot", func() bool { return g.SnapshotStats().Restored > 0 })
	restored := time.Since(start)
	// Caught up while writes continue: it reaches what the leader had
	// applied after its restore, and keeps up with new writes.
	var target uint64
	waitUntil(t, ctx, "a leader", func() bool {
		if lg := leaderGroup(c); lg != nil {
			target = lg.AppliedIndex()
			return true
		}
		return false
	})
	before := l.ackedCount()
	waitUntil(t, ctx, id+" caught up", func() bool { return g.AppliedIndex() >= target && l.ackedCount() > before+50 })
	if s, _ := strconv.ParseUint(g.Raft().Stats()["last_snapshot_index"], 10, 64); s == 0 {
		t.Fatalf("%s has no installed snapshot in raft's stats", id)
	}
	st := g.SnapshotStats()
	t.Logf("%s: restored after %v, caught up after %v; snapshots received %d, restored %d",
		id, restored.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), st.Received, st.Restored)
}

func finishAndCompare(t *testing.T, ctx context.Context, c *dledgertest.Cluster, l *load) {
	t.Helper()
	l.finish(t, ctx, "T")
}

func TestGroupWipedFollowerCatchesUpThroughSnapshot(t *testing.T) {
	c := dledgertest.MakeCluster(t, 3, snapshotHeavy)
	ctx := ctxT(t, 60*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	follower := followerOf(c, leader)
	l := startPaddedLoad(c, 4, 900, "T")
	waitUntil(t, ctx, "the leader has several segments and a compacted log", func() bool {
		g := leaderGroup(c)
		return g != nil && len(messagestore.Of(g).SegmentPaths()) >= 4 && compactedPast(c, 1)
	})
	if err := c.Stop(follower.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Wipe(follower.ID); err != nil {
		t.Fatal(err)
	}
	l.waitAcked(t, l.ackedCount()+100, 30*time.Second)
	catchUpThroughSnapshot(t, ctx, c, l, follower.ID)
	finishAndCompare(t, ctx, c, l)
}

func TestGroupLaggingFollowerCatchesUpThroughSnapshot(t *testing.T) {
	c := dledgertest.MakeCluster(t, 3, snapshotHeavy)
	ctx := ctxT(t, 60*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	follower := followerOf(c, leader)
	l := startPaddedLoad(c, 4, 900, "T")
	l.waitAcked(t, 300, 30*time.Second)
	if err := c.Kill(follower.ID); err != nil {
		t.Fatal(err)
	}
	// The follower holds no entry the leader did not have by now.
	last := leader.Group().Raft().LastIndex()
	waitUntil(t, ctx, "the leader compacted past the killed follower", func() bool { return compactedPast(c, last+1) })
	catchUpThroughSnapshot(t, ctx, c, l, follower.ID)
	finishAndCompare(t, ctx, c, l)
}
