package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
)

// popRetryMax gives group a retry max through the leader g.
func popRetryMax(t *testing.T, g *dledger.Group, group string, max int32) {
	t.Helper()
	if err := g.ProposeMetadata(testCtx(t), metadata.Op{Kind: metadata.OpPutGroup,
		Group: &metadata.SubscriptionGroup{GroupName: group, ConsumeEnable: true, RetryMaxTimes: max}}); err != nil {
		t.Fatal(err)
	}
}

// dlqDepth is how many messages g's replica holds in group's DLQ.
func dlqDepth(g *dledger.Group, group string) int64 {
	n, err := messagestore.Of(g).MaxOffset(protocol.DLQTopic(group), 0)
	if err != nil {
		return 0
	}
	return n
}

// TestPopReviveWithoutReceive: a message received at its group's last
// attempt and never acknowledged goes to %DLQ%<group> once its invisible
// time ends, with no receive after; a message with attempts left stays
// in flight through the sweep's rounds, for the next receive.
func TestPopReviveWithoutReceive(t *testing.T) {
	tc := brokertest.StartNode(t, func(_ int, c *broker.Config) { c.PopReviveInterval = 50 * time.Millisecond })
	createTestTopic(t, tc, "PopRevive", 1)
	_, b := popReady(t, tc)
	g, _ := leaderGroup(t, tc)
	popRetryMax(t, g, "cg_dead", 1)
	popRetryMax(t, g, "cg_live", 2)
	putTestMessages(t, tc, "PopRevive", 0, "doomed")
	for _, group := range []string{"cg_dead", "cg_live"} {
		got := popAll(t, b, broker.PopRequest{Group: group, Topic: "PopRevive", Max: 4, Invisible: 150 * time.Millisecond, Wait: 5 * time.Second}, 1)
		if len(got) != 1 || got[0].Attempt != 1 {
			t.Fatalf("%s: %d messages %+v", group, len(got), got)
		}
	}
	broker.WaitFor(t, "the used-up message in the DLQ", func() bool {
		return dlqDepth(g, "cg_dead") == 1 && g.Metadata().PopInflight("cg_dead", "PopRevive", 0) == 0
	})
	// Two whole rounds after cg_live's receipt is due: still held.
	broker.WaitFor(t, "cg_live's receipt due", func() bool {
		return g.Metadata().PopStats(time.Now().UnixMilli(), func(group, _ string) bool { return group == "cg_live" })[0].Due == 1
	})
	rounds := b.PopReviveRoundsForTest()
	broker.WaitFor(t, "two more revive rounds", func() bool { return b.PopReviveRoundsForTest() >= rounds+2 })
	if n := g.Metadata().PopInflight("cg_live", "PopRevive", 0); n != 1 || dlqDepth(g, "cg_live") != 0 {
		t.Fatalf("cg_live: %d in flight, %d dead letters", n, dlqDepth(g, "cg_live"))
	}
	again := popAll(t, b, broker.PopRequest{Group: "cg_live", Topic: "PopRevive", Max: 4, Invisible: time.Minute, Wait: 5 * time.Second}, 1)
	if len(again) != 1 || again[0].Attempt != 2 {
		t.Fatalf("cg_live's second delivery: %+v", again)
	}
	dlq := popAll(t, b, broker.PopRequest{Group: "cg_reader", Topic: protocol.DLQTopic("cg_dead"), Max: 4, Invisible: time.Minute, Wait: 5 * time.Second}, 1)
	if len(dlq) != 1 || string(dlq[0].Msg.Body) != "body-0-doomed" || dlq[0].Msg.Properties["RETRY_TOPIC"] != "PopRevive" {
		t.Fatalf("dead-letter queue: %+v", dlq)
	}
	if n := dlqDepth(g, "cg_dead"); n != 1 {
		t.Fatalf("%d dead letters of one message", n)
	}
}

// TestPopReviveFailoverOnce: the leader's sweep stores a used-up
// message's dead letter and stops before it deletes the receipt (killed
// between the two raft entries); the next leader's sweep finds the copy
// and deletes the receipt without a second one: on every replica the DLQ
// holds the message once and no receipt is left.
func TestPopReviveFailoverOnce(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, func(_ int, c *broker.Config) { c.PopReviveInterval = 50 * time.Millisecond })
	popReady(t, tc)
	createTestTopic(t, tc, "PopReviveFT", 1)
	leaderID, b := popReady(t, tc)
	g, _ := leaderGroup(t, tc)
	popRetryMax(t, g, "cg_ft", 1)
	stored := make(chan struct{})
	b.SetPopDeadLetterHookForTest(func(ctx context.Context) bool {
		close(stored)
		<-ctx.Done() // until the kill stops the sweep
		return true
	})
	putTestMessages(t, tc, "PopReviveFT", 0, "doomed")
	got := popAll(t, b, broker.PopRequest{Group: "cg_ft", Topic: "PopReviveFT", Max: 4, Invisible: 150 * time.Millisecond, Wait: 5 * time.Second}, 1)
	if len(got) != 1 {
		t.Fatalf("received %d of 1", len(got))
	}
	select {
	case <-stored:
	case <-testCtx(t).Done():
		t.Fatal("the sweep stored no dead letter")
	}
	tc.Kill(leaderID)
	_, nb := popReady(t, tc)
	ng, _ := leaderGroup(t, tc)
	broker.WaitFor(t, "the receipt deleted by the next leader", func() bool {
		return ng.Metadata().PopInflight("cg_ft", "PopReviveFT", 0) == 0
	})
	for _, n := range tc.Raft.Up() {
		ng := n.Group()
		// The copy follows the receipt's creation in the log, its deletion
		// follows the copy (a lagging node has neither receipt nor copy).
		broker.WaitFor(t, "the copy on "+n.ID+" and the receipt deleted", func() bool {
			return dlqDepth(ng, "cg_ft") >= 1 && ng.Metadata().PopInflight("cg_ft", "PopReviveFT", 0) == 0
		})
		if d := dlqDepth(ng, "cg_ft"); d != 1 {
			t.Fatalf("%s: %d dead letters of one message", n.ID, d)
		}
	}
	dlq := popAll(t, nb, broker.PopRequest{Group: "cg_reader", Topic: protocol.DLQTopic("cg_ft"), Max: 4, Invisible: time.Minute, Wait: 5 * time.Second}, 1)
	if len(dlq) != 1 || string(dlq[0].Msg.Body) != "body-0-doomed" {
		t.Fatalf("dead-letter queue: %+v", dlq)
	}
}
