package dledger_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
)

// bootAfterCrash makes node id's next start see another machine boot.
func bootAfterCrash(c *dledgertest.Cluster, id string) {
	c.Node(id).Cfg.BootID = func() string { return "boot-after-" + id }
}

func readBoot(t *testing.T, n *dledgertest.Node) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.Cfg.DataDir, "raft", "boot.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// A node killed with its log unflushed, on a machine that booted since,
// may have lost entries that counted towards commits: it must not let a
// node that lacks them win an election. With the old leader down, the
// remaining follower cannot get its vote; once the old leader is back,
// the group elects, the recovering node catches up and votes again, and
// nothing acknowledged is lost.
func TestAbstainAfterMachineCrash(t *testing.T) {
	c, ctx, leader, l := loadedCluster(t, dledgertest.OneLog)
	f := followerOf(c, leader)
	var other *dledgertest.Node
	for _, n := range c.Nodes {
		if n != leader && n != f {
			other = n
		}
	}
	if got := readBoot(t, f); got["unsynced"] != true || got["clean"] == true {
		t.Fatalf("a running one-log node under ASYNC_FLUSH records %v", got)
	}
	if err := c.Kill(f.ID); err != nil {
		t.Fatal(err)
	}
	l.waitAcked(t, l.ackedCount()+50, 30*time.Second)
	l.halt()
	if err := c.Kill(leader.ID); err != nil {
		t.Fatal(err)
	}
	bootAfterCrash(c, f.ID)
	if err := c.Restart(f.ID); err != nil {
		t.Fatal(err)
	}
	if !f.Group().Abstaining() {
		t.Fatal("a node restarted after a machine crash with its log unflushed votes")
	}
	if got := readBoot(t, f); got["recovering"] != true {
		t.Fatalf("boot record %v", got)
	}
	// The other follower campaigns and is refused, again and again.
	waitUntil(t, ctx, "the recovering node refuses 3 votes", func() bool { return f.Group().VotesRefused() >= 3 })
	if other.Group().Raft().State() == raft.Leader || f.Group().Raft().State() == raft.Leader {
		t.Fatal("a leader was elected without the old leader's log")
	}
	if err := c.Restart(leader.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "the recovering node votes again", func() bool { return !f.Group().Abstaining() })
	if got := readBoot(t, f); got["recovering"] == true {
		t.Fatalf("boot record after recovery %v", got)
	}
	l.finish(t, ctx, "T")
}

// When most of the group lost power at once, no majority kept its log
// whole: the nodes stop abstaining and elect from what they have rather
// than stay without a leader.
func TestAbstainingMajorityElects(t *testing.T) {
	c, ctx, _, l := loadedCluster(t, dledgertest.OneLog)
	l.halt()
	for _, n := range c.Nodes {
		if err := c.Kill(n.ID); err != nil {
			t.Fatal(err)
		}
		bootAfterCrash(c, n.ID)
	}
	for _, n := range c.Nodes {
		if err := c.Restart(n.ID); err != nil {
			t.Fatal(err)
		}
		if !n.Group().Abstaining() {
			t.Fatalf("%s votes after a machine crash", n.ID)
		}
	}
	if _, err := c.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		waitUntil(t, ctx, n.ID+" votes again", func() bool { return !n.Group().Abstaining() })
	}
	// Nothing was cut from the files here: nothing is lost either.
	l.finish(t, ctx, "T")
}

// A node that stopped cleanly flushed everything: a new boot is no reason
// to abstain. Neither is a kill -9 on the same boot (the page cache
// outlived the process).
func TestNoAbstainAfterCleanStopOrProcessCrash(t *testing.T) {
	c, ctx, leader, l := loadedCluster(t, dledgertest.OneLog)
	l.halt()
	f := followerOf(c, leader)
	if err := c.Stop(f.ID); err != nil {
		t.Fatal(err)
	}
	if got := readBoot(t, f); got["clean"] != true {
		t.Fatalf("boot record after a clean stop %v", got)
	}
	bootAfterCrash(c, f.ID)
	if err := c.Restart(f.ID); err != nil {
		t.Fatal(err)
	}
	if f.Group().Abstaining() {
		t.Fatal("a node that stopped cleanly abstains")
	}
	if err := c.Kill(f.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(f.ID); err != nil {
		t.Fatal(err)
	}
	if f.Group().Abstaining() {
		t.Fatal("a node killed on the same boot abstains")
	}
	l.finish(t, ctx, "T")
}

// MarkPowerLoss (the chaos harness's power nemesis) makes the next start
// see a new boot.
func TestMarkPowerLoss(t *testing.T) {
	c, ctx, leader, l := loadedCluster(t, dledgertest.OneLog)
	l.halt()
	f := followerOf(c, leader)
	if err := c.Kill(f.ID); err != nil {
		t.Fatal(err)
	}
	if err := dledger.MarkPowerLoss(f.Cfg.DataDir); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(f.ID); err != nil {
		t.Fatal(err)
	}
	if !f.Group().Abstaining() {
		t.Fatal("a node marked as power-cut votes at once")
	}
	waitUntil(t, ctx, "it catches up and votes again", func() bool { return !f.Group().Abstaining() })
	l.finish(t, ctx, "T")
}
