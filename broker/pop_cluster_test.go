package broker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
)

// popReady waits until the group's leader serves POP (format version 4
// applied, the leader writable) and returns its id and broker.
func popReady(t testing.TB, tc *brokertest.Cluster) (string, *broker.Broker) {
	t.Helper()
	var id string
	var b *broker.Broker
	broker.WaitFor(t, "a leader serving POP", func() bool {
		n, err := tc.Raft.Leader(testCtx(t))
		if err != nil || n.Group() == nil || n.Group().FormatVersion() < 4 || !n.Group().IsLeader() {
			return false
		}
		id, b = n.ID, tc.Broker(n.ID)
		return b != nil
	})
	return id, b
}

// popAll receives from b until want messages came or wait passed.
func popAll(t testing.TB, b *broker.Broker, r broker.PopRequest, want int) []broker.Popped {
	t.Helper()
	var out []broker.Popped
	deadline := time.Now().Add(broker.TestWait)
	for len(out) < want && time.Now().Before(deadline) {
		got, err := b.PopMessages(testCtx(t), r)
		if err != nil {
			t.Fatalf("pop: %v", err)
		}
		out = append(out, got...)
	}
	return out
}

func handles(ps []broker.Popped) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Handle
	}
	return out
}

// TestPopFailoverKeepsReceipts: messages received and not acknowledged on
// the leader are delivered again (attempt 2) by the next leader once
// their invisible time ends; those acknowledged before the failover are
// not, and their handles stay refused.
func TestPopFailoverKeepsReceipts(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	popReady(t, tc)
	createTestTopic(t, tc, "PopFT", 2)
	putTestMessages(t, tc, "PopFT", 0, "a", "b", "c", "d")
	putTestMessages(t, tc, "PopFT", 1, "e", "f", "g", "h")
	leaderID, b := popReady(t, tc)
	req := broker.PopRequest{Group: "cg_popft", Topic: "PopFT", Expression: "*", Max: 8, Invisible: 3 * time.Second, Wait: time.Second}
	got := popAll(t, b, req, 8)
	if len(got) != 8 {
		t.Fatalf("received %d of 8", len(got))
	}
	acked, kept := got[:4], got[4:]
	errs, err := b.AckPopped(testCtx(t), req.Group, req.Topic, handles(acked))
	if err != nil || errors.Join(errs...) != nil {
		t.Fatalf("ack: %v %v", err, errs)
	}
	keptBodies := map[string]bool{}
	for _, p := range kept {
		keptBodies[string(p.Msg.Body)] = true
	}

	tc.Kill(leaderID)
	_, nb := popReady(t, tc)
	req.Wait = 10 * time.Second
	again := popAll(t, nb, req, 4)
	if len(again) != 4 {
		t.Fatalf("the new leader delivered %d of the 4 unacknowledged messages", len(again))
	}
	for _, p := range again {
		if !keptBodies[string(p.Msg.Body)] || p.Attempt != 2 {
			t.Fatalf("the new leader delivered %q attempt %d; want one of %v at attempt 2", p.Msg.Body, p.Attempt, keptBodies)
		}
	}
	errs, err = nb.AckPopped(testCtx(t), req.Group, req.Topic, append(handles(acked), kept[0].Handle))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if !errors.Is(e, broker.ErrInvalidReceipt) {
			t.Fatalf("stale handle %d acknowledged on the new leader: %v", i, e)
		}
	}
	if errs, err := nb.AckPopped(testCtx(t), req.Group, req.Topic, handles(again)); err != nil || errors.Join(errs...) != nil {
		t.Fatalf("ack on the new leader: %v %v", err, errs)
	}
	req.Wait = 300 * time.Millisecond
	if rest, err := nb.PopMessages(testCtx(t), req); err != nil || len(rest) != 0 {
		t.Fatalf("after every ack: %d messages, %v", len(rest), err)
	}
}

// TestPopRefusedBelowVersion4: while a member's binary applies only up to
// format version 3, the group stays there and POP is refused with
// ErrPopUnsupported, before anything is proposed.
func TestPopRefusedBelowVersion4(t *testing.T) {
	tc := brokertest.StartClusterWith(t, 3, nil, func(i int, c *dledger.Config) {
		if i == 2 {
			c.MaxFormatVersion = 3
		}
	})
	createTestTopic(t, tc, "PopV", 1)
	g, id := leaderGroup(t, tc)
	broker.WaitFor(t, "the group at version 3", func() bool { return g.FormatVersion() == 3 })
	_, err := tc.Broker(id).PopMessages(testCtx(t), broker.PopRequest{Group: "cg_v", Topic: "PopV", Max: 1, Invisible: time.Second})
	if !errors.Is(err, broker.ErrPopUnsupported) {
		t.Fatalf("pop at version 3: %v", err)
	}
}

// TestPopMaxAttemptsToDLQ: a message never acknowledged is delivered the
// group's retry max times, then goes to %DLQ%<group>, where another group
// receives it with its original body.
func TestPopMaxAttemptsToDLQ(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	createTestTopic(t, tc, "PopDLQ", 1)
	_, b := popReady(t, tc)
	g, _ := leaderGroup(t, tc)
	if err := g.ProposeMetadata(testCtx(t), metadata.Op{Kind: metadata.OpPutGroup,
		Group: &metadata.SubscriptionGroup{GroupName: "cg_dlq", ConsumeEnable: true, RetryMaxTimes: 3}}); err != nil {
		t.Fatal(err)
	}
	putTestMessages(t, tc, "PopDLQ", 0, "doomed")
	req := broker.PopRequest{Group: "cg_dlq", Topic: "PopDLQ", Max: 4, Invisible: 150 * time.Millisecond, Wait: 5 * time.Second}
	for attempt := int32(1); attempt <= 3; attempt++ {
		got := popAll(t, b, req, 1)
		if len(got) != 1 || got[0].Attempt != attempt {
			t.Fatalf("delivery %d: %d messages, attempt %v", attempt, len(got), got)
		}
	}
	// The fourth look finds the third delivery's time over: to the DLQ.
	req.Wait = time.Second
	if got, err := b.PopMessages(testCtx(t), req); err != nil || len(got) != 0 {
		t.Fatalf("a fourth delivery: %d, %v", len(got), err)
	}
	dlq := popAll(t, b, broker.PopRequest{Group: "cg_reader", Topic: protocol.DLQTopic("cg_dlq"), Max: 4, Invisible: time.Second, Wait: 5 * time.Second}, 1)
	if len(dlq) != 1 || string(dlq[0].Msg.Body) != "body-0-doomed" || dlq[0].Msg.Properties["RETRY_TOPIC"] != "PopDLQ" {
		t.Fatalf("dead-letter queue: %+v", dlq)
	}
	if n := g.Metadata().PopInflight("cg_dlq", "PopDLQ", 0); n != 0 {
		t.Fatalf("%d receipts left after the DLQ", n)
	}
}

// TestPopConsumersNeverShareInFlight: consumers of one group receiving at
// once from a topic of 4 queues never get a message another holds; every
// message is received exactly once while none is acknowledged late.
func TestPopConsumersNeverShareInFlight(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	createTestTopic(t, tc, "PopShare", 4)
	_, b := popReady(t, tc)
	const perQueue = 50
	for q := int32(0); q < 4; q++ {
		tags := make([]string, perQueue)
		for i := range tags {
			tags[i] = fmt.Sprintf("q%d-%d", q, i)
		}
		putTestMessages(t, tc, "PopShare", q, tags...)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	total := 0
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), broker.TestWait)
	defer cancel()
	for c := 0; c < 3; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				got, err := b.PopMessages(ctx, broker.PopRequest{Group: "cg_share", Topic: "PopShare", Max: 16, Invisible: time.Minute, Wait: 200 * time.Millisecond})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, p := range got {
					seen[string(p.Msg.Body)]++
				}
				total += len(got)
				done := total >= 4*perQueue
				mu.Unlock()
				if done || len(got) == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	if total != 4*perQueue || len(seen) != 4*perQueue {
		t.Fatalf("received %d messages, %d distinct, of %d", total, len(seen), 4*perQueue)
	}
}

// TestPopCapAndTagFilter: a queue hands a group at most PopMaxInflight
// messages unacknowledged (more once some are acknowledged), and a tag
// expression receives only the messages with a matching tag, passing the
// others by.
func TestPopCapAndTagFilter(t *testing.T) {
	tc := brokertest.StartNode(t, func(_ int, c *broker.Config) { c.PopMaxInflight = 2 })
	createTestTopic(t, tc, "PopCap", 1)
	_, b := popReady(t, tc)
	putTestMessages(t, tc, "PopCap", 0, "A", "B", "A", "A", "C")
	req := broker.PopRequest{Group: "cg_cap", Topic: "PopCap", Expression: "A || C", Max: 10, Invisible: time.Minute}
	first, err := b.PopMessages(testCtx(t), req)
	if err != nil || len(first) != 2 {
		t.Fatalf("first receive: %d messages, %v", len(first), err)
	}
	req.Wait = 200 * time.Millisecond
	if more, err := b.PopMessages(testCtx(t), req); err != nil || len(more) != 0 {
		t.Fatalf("a receive at the cap: %d messages, %v", len(more), err)
	}
	if errs, err := b.AckPopped(testCtx(t), req.Group, req.Topic, handles(first)); err != nil || errors.Join(errs...) != nil {
		t.Fatal(err, errs)
	}
	rest := popAll(t, b, req, 2)
	var bodies []string
	for _, p := range append(first, rest...) {
		bodies = append(bodies, string(p.Msg.Body))
	}
	if fmt.Sprint(bodies) != "[body-0-A body-2-A body-3-A body-4-C]" {
		t.Fatalf("received %v", bodies)
	}
}

// TestPopLongPollWokenBySend: a receive waiting on an empty topic is
// answered by the message sent meanwhile, well before its wait ends.
func TestPopLongPollWokenBySend(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	createTestTopic(t, tc, "PopWake", 2)
	_, b := popReady(t, tc)
	type result struct {
		got []broker.Popped
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		got, err := b.PopMessages(testCtx(t), broker.PopRequest{Group: "cg_wake", Topic: "PopWake", Max: 4, Invisible: time.Minute, Wait: 15 * time.Second})
		done <- result{got, err}
	}()
	broker.WaitFor(t, "the receive waiting", func() bool { return b.PopWaitingForTest() == 1 })
	putTestMessages(t, tc, "PopWake", 1, "wake")
	r := <-done
	if r.err != nil || len(r.got) != 1 || string(r.got[0].Msg.Body) != "body-0-wake" {
		t.Fatalf("woken receive: %+v %v", r.got, r.err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("answered after %v", d)
	}
	if n := b.PopWaitingForTest(); n != 0 {
		t.Fatalf("%d receives still counted as waiting", n)
	}
}

// BenchmarkPopReceiveAck: receive 32 messages and acknowledge them, on a
// one-node group (in-memory raft) and on a three-node group (raft over
// loopback TCP); ns/op is per message.
func BenchmarkPopReceiveAck(b *testing.B) {
	b.Run("1node", func(b *testing.B) { benchPop(b, brokertest.StartNode(b, nil)) })
	b.Run("3nodes", func(b *testing.B) { benchPop(b, brokertest.StartCluster(b, 3, nil)) })
}

func benchPop(b *testing.B, tc *brokertest.Cluster) {
	popReady(b, tc)
	createTestTopic(b, tc, "PopBench", 4)
	_, br := popReady(b, tc)
	for q := int32(0); q < 4; q++ {
		tags := make([]string, b.N/4+32)
		putTestMessages(b, tc, "PopBench", q, tags...)
	}
	b.ResetTimer()
	n := 0
	for n < b.N {
		got, err := br.PopMessages(testCtx(b), broker.PopRequest{Group: "cg_bench", Topic: "PopBench", Max: 32, Invisible: time.Minute})
		if err != nil || len(got) == 0 {
			b.Fatalf("pop: %d %v", len(got), err)
		}
		if errs, err := br.AckPopped(testCtx(b), "cg_bench", "PopBench", handles(got)); err != nil || errors.Join(errs...) != nil {
			b.Fatal(err, errs)
		}
		n += len(got)
	}
}
