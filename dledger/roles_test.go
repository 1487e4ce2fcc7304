package dledger_test

import (
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
)

// TestRoleChangedWakesOnEveryRoleEvent: the channel a node hands out is
// closed by its next role event, whichever node it is: the old leader's
// (it stops leading) and the new leader's (it becomes the writable leader)
// when leadership moves; one taken after the move stays open while
// nothing changes.
func TestRoleChangedWakesOnEveryRoleEvent(t *testing.T) {
	c := dledgertest.MakeCluster(t, 3)
	ctx := ctxT(t, 60*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var target *dledgertest.Node
	for _, n := range c.Up() {
		if n != leader {
			target = n
			break
		}
	}
	// A node that already leads and is writable: take its channels first,
	// then move leadership.
	waitUntil(t, ctx, "a writable leader", func() bool { return leader.Group().IsLeader() })
	oldCh, newCh := leader.Group().RoleChanged(), target.Group().RoleChanged()
	transferTo(t, ctx, c, target.ID)
	for name, ch := range map[string]<-chan struct{}{"old leader": oldCh, "new leader": newCh} {
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("%s: RoleChanged not closed by the move of leadership", name)
		}
	}
	waitUntil(t, ctx, "the new leader writable", func() bool { return target.Group().IsLeader() })
	// The role now stands: a fresh channel is open, and IsLeader agrees
	// with the role it tells.
	ch := target.Group().RoleChanged()
	if r := target.Group().Role(); r.Role != dledger.RoleLeader {
		t.Fatalf("writable leader's role %q", r.Role)
	}
	select {
	case <-ch:
		// Only a further event may close it: one did (an election under
		// load); the role must then differ or the leader must have moved.
		if r := target.Group().Role(); r.Role == dledger.RoleLeader && r.LeaderID == target.ID {
			t.Fatalf("RoleChanged closed without a role event")
		}
	default:
	}
}
