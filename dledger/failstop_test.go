package dledger_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/store"
)

// TestUndecodableEntryStopsEveryNode: an entry no node can decode (here an
// unknown type, as an old binary would see a new kind) stops each node that
// meets it, with the raft index in the reason, instead of being skipped
// while the node keeps serving.
func TestUndecodableEntryStopsEveryNode(t *testing.T) {
	c := dledgertest.MakeCluster(t, 3)
	ctx := ctxT(t, 30*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leader.Group().Propose(ctx, []*message.Ext{dledger.NewTestMsg("T", 0, "before")}); err != nil {
		t.Fatal(err)
	}
	fut := leader.Group().Raft().Apply([]byte{dledger.EntryVersion, 0x7f, 1, 2, 3}, 5*time.Second)
	if err := fut.Error(); err != nil {
		t.Fatal(err)
	}
	bad := fut.Index()
	stopped := func(g *dledger.Group) bool {
		select {
		case <-g.Failed():
			return true
		default:
			return false
		}
	}
	// The leader stops as it applies the entry, and the follower elected
	// next commits and applies it too; the last node may never learn the
	// entry was committed (no leader is left to tell it), so it waits
	// without having applied it.
	waitUntil(t, ctx, "a majority stops on the entry it cannot decode", func() bool {
		k := 0
		for _, n := range c.Up() {
			if stopped(n.Group()) {
				k++
			}
		}
		return k >= 2
	})
	for _, n := range c.Up() {
		g := n.Group()
		if got := g.AppliedIndex(); got >= bad {
			t.Fatalf("%s: applied index %d moved past the entry it could not apply (%d)", n.ID, got, bad)
		}
		if !stopped(g) {
			continue
		}
		err := g.Err()
		if !errors.Is(err, dledger.ErrFailed) || !errors.Is(err, dledger.ErrBadEntry) || !strings.Contains(err.Error(), "raft index") {
			t.Fatalf("%s: reason %v", n.ID, err)
		}
		var ae *dledger.ApplyError
		if !errors.As(err, &ae) || ae.Index != bad {
			t.Fatalf("%s: reason %v does not name index %d", n.ID, err, bad)
		}
		if _, err := g.Propose(ctx, []*message.Ext{dledger.NewTestMsg("T", 0, "after")}); !errors.Is(err, dledger.ErrFailed) {
			t.Fatalf("%s: a stopped node answered a proposal with %v", n.ID, err)
		}
	}
}

// TestDifferentMaxMessageSizeDoesNotDiverge: a node configured with a
// smaller maxMessageSize than the leader used to refuse, at apply, a
// message the leader had stored, and carried on one message short. The
// group's value now holds on every node: either every node stores the
// message or the leader refuses it before proposing.
func TestDifferentMaxMessageSizeDoesNotDiverge(t *testing.T) {
	c := dledgertest.MakeCluster(t, 3, func(i int, cfg *dledger.Config) {
		if i == 2 {
			cfg.Store.MaxMessageSize = 64 << 10
		}
	})
	ctx := ctxT(t, 60*time.Second)
	leader := leaderOtherThan(t, ctx, c, "n2")
	big := dledger.NewTestMsg("T", 0, "big")
	big.Body = []byte(strings.Repeat("b", 100<<10))
	_, perr := leader.Group().Propose(ctx, []*message.Ext{big})
	if perr != nil && !errors.Is(perr, store.ErrBadMessage) {
		t.Fatal(perr)
	}
	if _, err := leader.Group().Propose(ctx, []*message.Ext{dledger.NewTestMsg("T", 0, "small")}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	want := int64(2)
	if perr != nil {
		want = 1
	}
	for _, n := range c.Up() {
		if max, err := messagestore.Of(n.Group()).MaxOffset("T", 0); err != nil || max != want {
			t.Errorf("%s: T-0 holds %d messages, want %d (send: %v)", n.ID, max, want, perr)
		}
	}
	if err := c.CompareReplicas(); err != nil {
		t.Fatal(err)
	}
}

// TestDifferentSegmentSizeDoesNotDiverge: the CommitLog segment size moves
// where a segment ends and so every later physical offset (and offset
// message id). A node configured with another size used to write other
// offsets and keep serving; it now adopts the group's size, also when it
// restarts with its own configuration. (The wal layout only:
// LEDGERMQ_TEST_TWO_LOG=1.)
func TestDifferentSegmentSizeDoesNotDiverge(t *testing.T) {
	if os.Getenv("LEDGERMQ_TEST_TWO_LOG") != "1" {
		// With one log a store holds raft entries from the start, so it
		// cannot be re-created with the group's geometry: a node
		// configured differently stops (TestOneLogDifferentSegmentSizeStops).
		t.Skip("the one-log layout stops a node with another segment size")
	}
	c := dledgertest.MakeCluster(t, 3, func(i int, cfg *dledger.Config) {
		if i == 2 {
			cfg.Store.SegmentSize = 1 << 20
		}
	})
	ctx := ctxT(t, 60*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	send := func(n int, tag string) {
		t.Helper()
		for i := 0; i < n; i++ {
			m := dledger.NewTestMsg("T", int32(i%2), tag)
			m.Body = []byte(strings.Repeat("s", 60<<10))
			l, err := c.Leader(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Group().Propose(ctx, []*message.Ext{m}); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(24, "a") // about 1.4 MiB: past a 1 MiB segment's end
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.CompareReplicas(); err != nil {
		t.Fatal(err)
	}
	// A restart with the node's own (different) configuration keeps the
	// group's size.
	victim := followerOf(c, leader)
	if err := c.Stop(victim.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(victim.ID); err != nil {
		t.Fatal(err)
	}
	send(8, "b")
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.CompareReplicas(); err != nil {
		t.Fatal(err)
	}
}

// TestDelayLevelMismatchStopsThenAdopts: a node whose delay table differs
// from the group's stops once, naming the key and both values, and adopts
// the group's table when it restarts with its own configuration.
func TestDelayLevelMismatchStopsThenAdopts(t *testing.T) {
	c := dledgertest.MakeCluster(t, 3, func(i int, cfg *dledger.Config) {
		cfg.DelayLevels = "1s 5s"
		if i == 2 {
			cfg.DelayLevels = "1s 2s"
		}
	})
	ctx := ctxT(t, 60*time.Second)
	var group string
	waitUntil(t, ctx, "a node records the group's settings", func() bool {
		for _, n := range c.Nodes {
			if g := n.Group(); g != nil {
				if s, ok := g.Settings(); ok {
					group = s.DelayLevels
					return true
				}
			}
		}
		return false
	})
	for _, n := range c.Nodes {
		g := n.Group()
		if n.Cfg.DelayLevels == group {
			continue
		}
		waitUntil(t, ctx, n.ID+" stops on the delay table it does not share", func() bool {
			select {
			case <-g.Failed():
				return true
			default:
				return false
			}
		})
		if err := g.Err(); !errors.Is(err, dledger.ErrSettings) || !strings.Contains(err.Error(), "messageDelayLevel") ||
			!strings.Contains(err.Error(), group) || !strings.Contains(err.Error(), n.Cfg.DelayLevels) {
			t.Fatalf("%s: reason %v", n.ID, err)
		}
		if err := c.Kill(n.ID); err != nil {
			t.Fatal(err)
		}
		if err := c.Restart(n.ID); err != nil {
			t.Fatal(err)
		}
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leader.Group().Propose(ctx, []*message.Ext{dledger.NewTestMsg("T", 0, "x")}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Up() {
		s, ok := n.Group().Settings()
		if !ok || s.DelayLevels != group || n.Group().DelayLevelsForTest() != group {
			t.Fatalf("%s: settings %+v %v, runs %q; want %q", n.ID, s, ok, n.Group().DelayLevelsForTest(), group)
		}
		select {
		case <-n.Group().Failed():
			t.Fatalf("%s stopped again: %v", n.ID, n.Group().Err())
		default:
		}
	}
}

// TestProposeSettings: the maximum message size grows through raft on
// every node; the geometry and a smaller maximum are refused before they
// are proposed.
func TestProposeSettings(t *testing.T) {
	c := dledgertest.MakeCluster(t, 3)
	ctx := ctxT(t, 30*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g := leader.Group()
	s, ok := g.Settings()
	if !ok {
		t.Fatal("a writable leader without the group's settings")
	}
	small := s
	small.MaxMessageSize--
	if err := g.ProposeSettings(ctx, small); !errors.Is(err, dledger.ErrSettings) {
		t.Fatalf("smaller maxMessageSize: %v", err)
	}
	seg := s
	seg.SegmentSize *= 2
	if err := g.ProposeSettings(ctx, seg); !errors.Is(err, dledger.ErrSettings) || !strings.Contains(err.Error(), "segmentSize") {
		t.Fatalf("segment size change: %v", err)
	}
	big := s
	big.MaxMessageSize *= 2
	if err := g.ProposeSettings(ctx, big); err != nil {
		t.Fatal(err)
	}
	m := dledger.NewTestMsg("T", 0, "big")
	m.Body = make([]byte, s.MaxMessageSize+1)
	if _, err := g.Propose(ctx, []*message.Ext{m}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Up() {
		if got, _ := n.Group().Settings(); got != big || messagestore.Of(n.Group()).MaxMessageSize() != big.MaxMessageSize {
			t.Fatalf("%s: settings %+v, store max %d", n.ID, got, messagestore.Of(n.Group()).MaxMessageSize())
		}
	}
	if err := c.CompareReplicas(); err != nil {
		t.Fatal(err)
	}
}
