package dledger_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/metadata"
)

// TestACLOpWaitsForVersion3: while a member supports only format version
// 2, an access-control op is refused before it is proposed
// (ErrFormatVersion) and the group stays at 2; once that member runs this
// binary the group reaches 3, the op is replicated, and every node has the
// rules.
func TestACLOpWaitsForVersion3(t *testing.T) {
	c := dledgertest.MakeCluster(t, 3, func(i int, cfg *dledger.Config) {
		if i == 2 {
			cfg.MaxFormatVersion = 2
		}
	})
	ctx := ctxT(t, 60*time.Second)
	leader := leaderOtherThan(t, ctx, c, "n2")
	waitUntil(t, ctx, "the group reaches version 2", func() bool { return leader.Group().FormatVersion() == 2 })
	checks := leader.Group().VersionChecksForTest().Load()
	waitUntil(t, ctx, "the leader checks its members' versions twice", func() bool {
		return leader.Group().VersionChecksForTest().Load() >= checks+2
	})
	op := metadata.Op{Kind: metadata.OpACL, ACL: &metadata.ACLChange{Content: []byte("accounts: []\n"), Node: leader.ID}}
	if err := leader.Group().ProposeMetadata(ctx, op); !errors.Is(err, dledger.ErrFormatVersion) {
		t.Fatalf("an acl op in a group of version 2: %v", err)
	}
	if leader.Group().FormatVersion() != 2 {
		t.Fatalf("group version %d with a member of version 2", leader.Group().FormatVersion())
	}
	if err := c.Stop("n2"); err != nil {
		t.Fatal(err)
	}
	c.Node("n2").Cfg.MaxFormatVersion = 0
	if err := c.Restart("n2"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "the group reaches version 3", func() bool {
		l, err := c.Leader(ctx)
		return err == nil && l.Group().FormatVersion() >= 3
	})
	l, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Group().ProposeMetadata(ctx, op); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "every node has the rules", func() bool {
		for _, n := range c.Nodes {
			g := n.Group()
			if g == nil {
				return false
			}
			r, ok := g.Metadata().ACL()
			if !ok || string(r.Content) != "accounts: []\n" || r.Index == 0 {
				return false
			}
		}
		return true
	})
}

// TestACLEntryStopsAnOlderNode: a node whose binary applies up to version
// 2 (a downgraded node, or the gate bypassed) stops on the group's move to
// version 3 and never applies an access-control entry it does not know:
// it names the version and asks for a newer binary.
func TestACLEntryStopsAnOlderNode(t *testing.T) {
	c := dledgertest.MakeCluster(t, 3, func(i int, cfg *dledger.Config) {
		if i == 2 {
			cfg.MaxFormatVersion = 2
		}
	})
	ctx := ctxT(t, 60*time.Second)
	proposeOnLeaderOtherThan(t, ctx, c, "n2", metadata.Op{Kind: metadata.OpFormatVersion, Version: 3})
	op := metadata.Op{Kind: metadata.OpACL, ACL: &metadata.ACLChange{Content: []byte("accounts: []\n")}}
	proposeOnLeaderOtherThan(t, ctx, c, "n2", op)
	old := c.Node("n2").Group()
	waitUntil(t, ctx, "the older node stops", func() bool { return isStopped(old) })
	if err := old.Err(); err == nil || !strings.Contains(err.Error(), "run a newer binary") {
		t.Fatalf("the older node stopped with %v", err)
	}
	if _, ok := old.Metadata().ACL(); ok {
		t.Fatal("the older node applied the access-control entry")
	}
}
