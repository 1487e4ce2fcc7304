package dledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/message"
)

// TestBarrier: a barrier on the leader passes once what it proposed is
// applied; a follower cannot pass one; a cancelled context and a shut-down
// group answer at once instead of blocking.
func TestBarrier(t *testing.T) {
	c := dledgertest.MakeCluster(t, 3)
	ctx := ctxT(t, 60*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g := leader.Group()
	if _, err := g.Propose(ctx, []*message.Ext{{Message: message.Message{Topic: "B", Body: []byte("x")}}}); err != nil {
		t.Fatal(err)
	}
	if err := g.Barrier(ctx); err != nil {
		t.Fatalf("leader barrier: %v", err)
	}
	for _, n := range c.Up() {
		if n.ID == leader.ID {
			continue
		}
		if err := n.Group().Barrier(ctx); !errors.Is(err, raft.ErrNotLeader) {
			t.Fatalf("follower %s barrier = %v, want raft.ErrNotLeader", n.ID, err)
		}
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := g.Barrier(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("barrier with a cancelled context = %v", err)
	}
	if err := c.Kill(leader.ID); err != nil {
		t.Fatal(err)
	}
	if err := g.Barrier(ctx); err == nil {
		t.Fatal("barrier on a killed group passed")
	}
}
