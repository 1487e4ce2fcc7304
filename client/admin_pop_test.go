package client

import (
	"errors"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// TestAdminPopState: a message POP-received by two consumer groups and
// acknowledged by neither is one in flight in each; Admin.PopState lists
// them sorted by group, counts both when its limit keeps one, and a limit
// out of bounds is the broker's INVALID_PARAMETER as a *BrokerError.
func TestAdminPopState(t *testing.T) {
	tc := startCluster(t, nil)
	ctx := ctxGuard(t)
	ns := tc.NamesrvAddr()
	if _, err := newProducer(t, WithNameServers(ns)).Send(ctx, &Message{Topic: "PopC", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"cg_b", "cg_a"} {
		req := broker.PopRequest{Group: g, Topic: "PopC", Expression: "*", Max: 1, Invisible: time.Hour, Wait: 100 * time.Millisecond}
		waitFor(t, g+" received the message", func() bool {
			n, err := tc.Raft.Leader(ctx)
			if err != nil || tc.Broker(n.ID) == nil {
				return false
			}
			got, err := tc.Broker(n.ID).PopMessages(ctx, req)
			return err == nil && len(got) == 1
		})
	}
	a := newAdmin(t, ns)
	var st protocol.PopState
	waitFor(t, "both groups listed", func() bool {
		var err error
		st, err = a.PopState(ctx, "", protocol.PopStateHeader{Topic: "PopC", Limit: 1})
		return err == nil && st.Count == 2
	})
	if len(st.Rows) != 1 || st.Rows[0].Group != "cg_a" || st.Rows[0].Inflight != 1 {
		t.Fatalf("pop state, limit 1: %+v", st)
	}
	if st, err := a.PopState(ctx, "", protocol.PopStateHeader{Group: "cg_b"}); err != nil || st.Count != 1 || st.Rows[0].Topic != "PopC" {
		t.Fatalf("pop state of cg_b: %+v %v", st, err)
	}
	var be *BrokerError
	if _, err := a.PopState(ctx, "", protocol.PopStateHeader{Limit: protocol.MaxPendingList + 1}); !errors.As(err, &be) || be.Code != remoting.InvalidParameter {
		t.Fatalf("a limit out of bounds: %v", err)
	}
}
