package dledger_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/message"
)

func isStopped(g *dledger.Group) bool {
	select {
	case <-g.Failed():
		return true
	default:
		return false
	}
}

func proposeN(t *testing.T, g *dledger.Group, n int, body string) {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	for i := 0; i < n; i++ {
		if _, err := g.Propose(ctx, []*message.Ext{dledger.NewTestMsg("T", int32(i%2), body)}); err != nil {
			t.Fatal(err)
		}
	}
}

// proposeOnLeaders proposes n messages on whichever node other than not
// leads, retrying a proposal that leadership moved under.
func proposeOnLeaders(t *testing.T, ctx context.Context, c *dledgertest.Cluster, not string, n int, body string) *dledgertest.Node {
	t.Helper()
	var leader *dledgertest.Node
	for sent := 0; sent < n; {
		leader = leaderOtherThan(t, ctx, c, not)
		_, err := leader.Group().Propose(ctx, []*message.Ext{dledger.NewTestMsg("T", int32(sent%2), body)})
		switch {
		case err == nil:
			sent++
		case !retryable(err):
			t.Fatal(err)
		}
	}
	return leader
}

// TestMixedVersionGroupWaitsForUpgrade: while one member claims an older
// format version, the group stays at version 1 and no checkpoint is
// proposed; once that member runs a binary that supports version 2, the
// leader raises the group's version and checkpoints follow.
func TestMixedVersionGroupWaitsForUpgrade(t *testing.T) {
	c := dledgertest.MakeCluster(t, 3, func(i int, cfg *dledger.Config) {
		cfg.VerifyInterval = 20 * time.Millisecond
		if i == 2 {
			cfg.MaxFormatVersion = 1
		}
	})
	ctx := ctxT(t, 60*time.Second)
	// n2 must not lead: a leader that claims version 1 raises nothing
	leader := proposeOnLeaders(t, ctx, c, "n2", 10, "old")
	checks := leader.Group().VersionChecksForTest().Load()
	waitUntil(t, ctx, "the leader checks its members' versions twice", func() bool {
		return leader.Group().VersionChecksForTest().Load() >= checks+2
	})
	if err := leader.Group().ProposeCheckpoint(ctx); !errors.Is(err, dledger.ErrFormatVersion) {
		t.Fatalf("checkpoint in a mixed group: %v", err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Up() {
		st := n.Group().Status()
		if st.FormatVersion != 1 || st.Verifier.LastIndex != 0 {
			t.Fatalf("%s: group version %d, verifier %+v in a mixed group", n.ID, st.FormatVersion, st.Verifier)
		}
	}
	// n2 is upgraded: restarted with this binary's versions.
	if err := c.Stop("n2"); err != nil {
		t.Fatal(err)
	}
	c.Node("n2").Cfg.MaxFormatVersion = 0
	if err := c.Restart("n2"); err != nil {
		t.Fatal(err)
	}
	proposeOnLeaders(t, ctx, c, "", 10, "new")
	waitUntil(t, ctx, "every node applies version 2 and matching checkpoints", func() bool {
		for _, n := range c.Nodes {
			g := n.Group()
			if g == nil || g.FormatVersion() < 2 || g.Verifier().Matched == 0 {
				return false
			}
		}
		return true
	})
	for _, n := range c.Up() {
		if isStopped(n.Group()) || n.Group().Verifier().Mismatched != 0 {
			t.Fatalf("%s: %v %+v", n.ID, n.Group().Err(), n.Group().Verifier())
		}
	}
}

// TestOldNodeStopsOnNewKind: a checkpoint entry that reaches a node
// claiming version 1 (the leader's gate bypassed) stops that node, naming
// the index; the others apply it and keep serving.
func TestOldNodeStopsOnNewKind(t *testing.T) {
	c := dledgertest.MakeCluster(t, 3, func(i int, cfg *dledger.Config) {
		cfg.VerifyInterval = -1
		if i == 2 {
			cfg.MaxFormatVersion = 1
		}
	})
	ctx := ctxT(t, 60*time.Second)
	proposeOnLeaders(t, ctx, c, "n2", 5, "x")
	// The checkpoint goes in by raft directly (the gate bypassed), on a
	// leader other than n2; an election on a loaded machine may move the
	// lead between computing the checksum and committing, and then the
	// checkpoint is computed again on the next leader.
	var index uint64
	var tries int
	waitUntil(t, ctx, "a leader other than n2 commits a checkpoint", func() bool {
		tries++
		g := leaderOtherThan(t, ctx, c, "n2").Group()
		to := messagestore.Of(g).MaxPhysicalOffset()
		sum, err := messagestore.Of(g).CommitLogChecksum(0, to, false)
		if err != nil {
			t.Fatal(err)
		}
		fut := g.Raft().Apply(dledger.EncodeCheckpointEntry(0, to, sum), 5*time.Second)
		if err := fut.Error(); err != nil {
			t.Logf("checkpoint on %s: %v", g.NodeID(), err)
			return false
		}
		index = fut.Index()
		return true
	})
	old := c.Node("n2").Group()
	waitUntil(t, ctx, "n2 stops on the entry it does not know", func() bool { return isStopped(old) })
	var ae *dledger.ApplyError
	if err := old.Err(); !errors.As(err, &ae) || !errors.Is(err, dledger.ErrBadEntry) {
		t.Fatalf("n2: %v", err)
	}
	// A checkpoint whose commit was not confirmed to its leader may still
	// have committed; n2 stops on the first one it applies.
	if ae.Index > index || (tries == 1 && ae.Index != index) {
		t.Fatalf("n2 stopped at index %d; the checkpoint is at %d (%d tries)", ae.Index, index, tries)
	}
	proposeOnLeaders(t, ctx, c, "n2", 1, "after")
	for _, id := range []string{"n0", "n1"} {
		n := c.Node(id).Group()
		waitUntil(t, ctx, id+" applies the checkpoint", func() bool { return n.Verifier().Matched >= 1 })
		if isStopped(n) {
			t.Fatalf("%s stopped: %v", id, n.Err())
		}
	}
}

// flipByte flips one byte of a node's CommitLog in place (the file's page
// is the one the store has mapped).
func flipByte(t *testing.T, g *dledger.Group, off int64) {
	t.Helper()
	for _, seg := range messagestore.Of(g).SegmentPaths() {
		if off < seg.Start || off >= seg.Start+seg.Size {
			continue
		}
		f, err := os.OpenFile(seg.Path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b := make([]byte, 1)
		if _, err := f.ReadAt(b, off-seg.Start); err != nil {
			t.Fatal(err)
		}
		b[0] ^= 0x5a
		if _, err := f.WriteAt(b, off-seg.Start); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no segment holds offset %d", off)
}

// TestVerifierDetectsFlippedByte: with VerifyFiles, a byte flipped in one
// follower's committed CommitLog data on disk is found by the next
// checkpoint: the follower reports the range and both checksums, counts it
// and stops; the leader and the other follower match and keep serving.
func TestVerifierDetectsFlippedByte(t *testing.T) {
	c := dledgertest.MakeCluster(t, 3, func(i int, cfg *dledger.Config) {
		cfg.VerifyInterval = -1
		cfg.VerifyFiles = true
		cfg.Timing = stableTiming
	})
	checkDivergenceFound(t, c, func(ctx context.Context, g *dledger.Group, victim *dledgertest.Node) {
		proposeN(t, g, 20, "c")
		if err := c.WaitConverged(ctx); err != nil {
			t.Fatal(err)
		}
		vg := victim.Group()
		from := vg.Verifier().LastTo
		flipByte(t, vg, from+(messagestore.Of(vg).MaxPhysicalOffset()-from)/2)
	})
}

// twiceWhenArmed stores the messages of every entry twice once armed (the
// ApplyTwice fault of the broken builds, on one node).
type twiceWhenArmed struct{ armed atomic.Bool }

func (*twiceWhenArmed) AckBeforeCommit() bool    { return false }
func (f *twiceWhenArmed) ApplyTwice(uint64) bool { return f.armed.Load() }
func (*twiceWhenArmed) SkipFsync() bool          { return false }

// TestVerifierDetectsDivergentWrite: with the default checksums (the sums
// kept as the bytes are written), a follower that writes other bytes than
// the others (here each message twice) is found by the next checkpoint in
// the same way.
func TestVerifierDetectsDivergentWrite(t *testing.T) {
	faults := make(map[string]*twiceWhenArmed)
	c := dledgertest.MakeCluster(t, 3, func(i int, cfg *dledger.Config) {
		cfg.VerifyInterval = -1
		cfg.Timing = stableTiming
		faults[cfg.NodeID] = &twiceWhenArmed{}
		cfg.Faults = faults[cfg.NodeID]
	})
	checkDivergenceFound(t, c, func(ctx context.Context, g *dledger.Group, victim *dledgertest.Node) {
		faults[victim.ID].armed.Store(true)
		proposeN(t, g, 3, "c")
	})
}

// checkDivergenceFound starts a checkpoint chain that every node matches,
// has diverge make one follower's CommitLog differ, and checks that the
// next checkpoint stops that follower (reporting the range and both
// checksums) while the leader and the other follower match and keep
// serving.
func checkDivergenceFound(t *testing.T, c *dledgertest.Cluster, diverge func(context.Context, *dledger.Group, *dledgertest.Node)) {
	t.Helper()
	ctx := ctxT(t, 60*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g := leader.Group()
	waitUntil(t, ctx, "the group reaches version 2", func() bool { return g.FormatVersion() >= 2 })
	proposeN(t, g, 20, "a")
	if err := g.ProposeCheckpoint(ctx); err != nil { // starts the chain
		t.Fatal(err)
	}
	proposeN(t, g, 20, "b")
	if err := g.ProposeCheckpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Up() {
		if v := n.Group().Verifier(); v.Matched != 2 || v.Mismatched != 0 {
			t.Fatalf("%s: %+v", n.ID, v)
		}
	}
	victim := followerOf(c, leader)
	vg := victim.Group()
	diverge(ctx, g, victim)
	if err := g.ProposeCheckpoint(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, victim.ID+" stops on the mismatch", func() bool { return isStopped(vg) })
	v := vg.Verifier()
	if v.Mismatched != 1 || !strings.Contains(v.LastMismatch, "CRC-32C") || !errors.Is(vg.Err(), dledger.ErrDiverged) {
		t.Fatalf("%s: %+v, %v", victim.ID, v, vg.Err())
	}
	if st := vg.Status(); st.Verifier.Mismatched != 1 {
		t.Fatalf("status does not show the mismatch: %+v", st.Verifier)
	}
	proposeN(t, g, 1, "d")
	// The others apply the third checkpoint in their own time: wait for
	// it, and none of them may stop meanwhile.
	for _, n := range c.Up() {
		if n == victim {
			continue
		}
		ng := n.Group()
		waitUntil(t, ctx, n.ID+" matches the third checkpoint", func() bool {
			if isStopped(ng) {
				t.Fatalf("%s stopped: %v %+v", n.ID, ng.Err(), ng.Verifier())
			}
			return ng.Verifier().Matched == 3
		})
		if v := ng.Verifier(); v.Mismatched != 0 {
			t.Fatalf("%s: %+v", n.ID, v)
		}
	}
}

// TestVerifierDetectionDelay measures how long the periodic verifier takes
// to stop a node after one byte of its CommitLog was flipped (logged, not
// asserted: it is about VerifyInterval plus one commit).
func TestVerifierDetectionDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the periodic verifier")
	}
	const interval = time.Second
	c := dledgertest.MakeCluster(t, 3, func(i int, cfg *dledger.Config) {
		cfg.VerifyInterval = interval
		cfg.VerifyFiles = true
		cfg.Timing = stableTiming
	})
	ctx := ctxT(t, 60*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g := leader.Group()
	proposeN(t, g, 20, "a")
	victim := followerOf(c, leader)
	vg := victim.Group()
	waitUntil(t, ctx, "a checkpoint chain has started on "+victim.ID, func() bool { return vg.Verifier().LastTo >= 0 })
	proposeN(t, g, 20, "b")
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	from := vg.Verifier().LastTo
	end := messagestore.Of(vg).MaxPhysicalOffset()
	if from >= end {
		t.Skip("a checkpoint covered everything already")
	}
	start := time.Now()
	flipByte(t, vg, end-1)
	waitUntil(t, ctx, victim.ID+" stops on the mismatch", func() bool { return isStopped(vg) })
	t.Logf("flipped byte detected after %v (VerifyInterval %v)", time.Since(start), interval)
}
