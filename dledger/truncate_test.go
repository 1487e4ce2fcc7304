package dledger_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/message"
)

// TestGroupOldLeaderRestartsAfterClearingSuffix is the way a node comes to
// truncate its raft log's tail: a leader cut off from the others takes
// proposals it cannot commit, the others elect a new leader and commit
// other entries at the same indexes, and when the partition heals the old
// leader clears its conflicting suffix (raft's "clearing log suffix",
// DeleteRange on the tail). The node is then crashed and restarted. With
// raft-wal v0.4.0 the truncated segment was left marked sealed without an
// index block (hashicorp/raft-wal#31), which only shows once the log is
// reopened: raft.NewRaft panicked reading it and the node could never
// start again. It must start, catch up and hold the same replicas, with
// every acknowledged write and none of the cleared ones.
func TestGroupOldLeaderRestartsAfterClearingSuffix(t *testing.T) {
	c := dledgertest.MakeCluster(t, 3)
	ctx := ctxT(t, 30*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var acked []string
	for i := 0; i < 5; i++ {
		acked = append(acked, mustPropose(t, ctx, leader.Group(), fmt.Sprintf("before-%d", i)))
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}

	old, og, base, top, orphans := isolateWithUncommitted(t, ctx, c)
	orphanTerm := termAt(t, og, base+1)

	// The majority moves on: a new leader, whose own entries (its no-op,
	// its barrier, these writes) take the indexes after base.
	waitUntil(t, ctx, "the majority elects a new leader", func() bool {
		for _, n := range c.Up() {
			if n != old && n.Group().IsLeader() {
				return true
			}
		}
		return false
	})
	ng := leaderGroup(c)
	for i := 0; i < 10; i++ {
		acked = append(acked, mustPropose(t, ctx, ng, fmt.Sprintf("after-%d", i)))
	}
	if last, _ := ng.WALForTest().LastIndex(); last < top {
		t.Fatalf("new leader's log ends at %d, before the old leader's uncommitted %d", last, top)
	}
	if nt := termAt(t, ng, base+1); nt == orphanTerm {
		t.Fatalf("index %d has term %d on both leaders: nothing conflicts", base+1, nt)
	}

	// Healed, the old leader must replace base+1..top with the new
	// leader's entries: raft deletes its suffix first (the truncation under
	// test) and then appends. The terms tell that it has done both.
	c.Net.Heal()
	waitUntil(t, ctx, fmt.Sprintf("%s clears its suffix %d..%d", old.ID, base+1, top), func() bool {
		return logMatches(og, ng, base+1, top)
	})

	// Crash it with the truncated log on disk as it is, and start it.
	if err := c.Kill(old.ID); err != nil {
		t.Fatal(err)
	}
	if err := restartCatchingPanic(c, old.ID); err != nil {
		t.Fatalf("%s cannot start after clearing its log suffix: %v", old.ID, err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.CompareReplicas(); err != nil {
		t.Fatal(err)
	}
	if !logMatches(old.Group(), ng, 1, top) {
		t.Fatalf("%s's log after restart differs from %s's in 1..%d", old.ID, ng.NodeID(), top)
	}
	for _, n := range c.Up() {
		got := bodies(t, n.Group(), "T")
		for _, b := range acked {
			if got[b] != 1 {
				t.Errorf("%s holds acknowledged %q %d times", n.ID, b, got[b])
			}
		}
		for _, b := range orphans {
			if got[b] != 0 {
				t.Errorf("%s holds %q, which only the cleared suffix carried", n.ID, b)
			}
		}
	}
}

// isolateWithUncommitted isolates the leader and has it take proposals it
// cannot commit, until entries of its own term land in its log past what
// the others hold. It returns the old leader, its group, the last index the
// group shares (base), the old leader's last index (top) and the bodies
// only base+1..top carry. The leader steps down after its lease
// (TimingTest: 100 ms), and a proposal that reaches it after that never
// enters its log; should that happen, the partition is healed and the
// round is tried again with the leader of the moment.
func isolateWithUncommitted(t *testing.T, ctx context.Context, c *dledgertest.Cluster) (*dledgertest.Node, *dledger.Group, uint64, uint64, []string) {
	t.Helper()
	for round := 0; round < 3; round++ {
		leader, err := c.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		g := leader.Group()
		base, err := g.WALForTest().LastIndex()
		if err != nil {
			t.Fatal(err)
		}
		c.Net.Isolate(leader.ID)
		bodies := make([]string, 4)
		errs := make([]error, len(bodies))
		var wg sync.WaitGroup
		for i := range bodies {
			bodies[i] = fmt.Sprintf("uncommitted-%d-%d", round, i)
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				cut, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				_, errs[i] = g.Propose(cut, []*message.Ext{dledger.NewTestMsg("T", 0, bodies[i])})
			}(i)
		}
		wg.Wait()
		for i, err := range errs {
			if err == nil {
				t.Fatalf("the isolated leader acknowledged %q", bodies[i])
			}
		}
		// Only once it has stepped down is its log final.
		waitUntil(t, ctx, leader.ID+" steps down", func() bool { return g.Raft().State() != raft.Leader })
		top, err := g.WALForTest().LastIndex()
		if err != nil {
			t.Fatal(err)
		}
		if top > base {
			return leader, g, base, top, bodies
		}
		t.Logf("round %d: %s stepped down before taking a proposal (%v); again", round, leader.ID, errs[0])
		c.Net.Heal()
		if err := c.WaitConverged(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("no isolated leader took an uncommitted entry")
	return nil, nil, 0, 0, nil
}

// mustPropose replicates one message to topic T through g and returns its
// body.
func mustPropose(t *testing.T, ctx context.Context, g *dledger.Group, body string) string {
	t.Helper()
	if _, err := g.Propose(ctx, []*message.Ext{dledger.NewTestMsg("T", 0, body)}); err != nil {
		t.Fatalf("propose %q: %v", body, err)
	}
	return body
}

// termAt is the term of entry i in g's raft log.
func termAt(t *testing.T, g *dledger.Group, i uint64) uint64 {
	t.Helper()
	var e raft.Log
	if err := g.WALForTest().GetLog(i, &e); err != nil {
		t.Fatalf("%s: entry %d: %v", g.NodeID(), i, err)
	}
	return e.Term
}

// logMatches reports whether a's and b's raft logs hold entries from..to
// with the same terms (raft's log matching: then they hold the same
// entries).
func logMatches(a, b *dledger.Group, from, to uint64) bool {
	if a == nil || b == nil {
		return false
	}
	for i := from; i <= to; i++ {
		var ea, eb raft.Log
		if a.WALForTest().GetLog(i, &ea) != nil || b.WALForTest().GetLog(i, &eb) != nil || ea.Term != eb.Term {
			return false
		}
	}
	return true
}

// restartCatchingPanic restarts node id and returns a panic from Open as an
// error: raft.NewRaft panics when it cannot read its log, and that is the
// failure this test looks for, to be reported as the test's own and not to
// abort the package's run. A node that panicked is left half open; the
// test fails anyway.
func restartCatchingPanic(c *dledgertest.Cluster, id string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("open panicked: %v", p)
		}
	}()
	return c.Restart(id)
}
