package dledger_test

import (
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/message"
)

// TestTransportInMemoryNode: MakeNode's one-node group on the in-memory
// raft layer leads, stores what it is sent, and keeps it across a kill
// and restart.
func TestTransportInMemoryNode(t *testing.T) {
	c := dledgertest.MakeNode(t)
	ctx := ctxT(t, 30*time.Second)
	n, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Addr != "mem-n0" || c.Net != nil {
		t.Fatalf("node at %q, net %v: want the in-memory layer", n.Addr, c.Net)
	}
	msg := []*message.Ext{{Message: message.Message{Topic: "M", Body: []byte("kept")}}}
	if _, err := n.Group().Propose(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(n.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(n.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := messagestore.Of(n.Group()).MaxOffset("M", 0); err != nil || got != 1 {
		t.Fatalf("after restart: max offset %d, %v; want 1", got, err)
	}
}
