package broker_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// putGroupRequest is UPDATE_AND_CREATE_SUBSCRIPTIONGROUP of cfg.
func putGroupRequest(t testing.TB, cfg protocol.SubscriptionGroupConfig) *remoting.Command {
	t.Helper()
	body, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return remoting.NewRequest(remoting.UpdateAndCreateSubscriptionGroup, nil, body)
}

// netipLoopback is the peer admin requests come from.
var netipLoopback = netip.MustParseAddrPort("127.0.0.1:1")

func bodies(ps []broker.Popped) string {
	var s []string
	for _, p := range ps {
		s = append(s, strings.TrimPrefix(string(p.Msg.Body), "body-"))
	}
	return strings.Join(s, " ")
}

// TestPopFIFOGroup: a FIFO group (consumeMessageOrderly) receives a
// queue's messages in order and nothing more of the queue while any is in
// flight: an unacknowledged one comes back alone, in order, once due, and
// the next ones only after it is acknowledged. Another group of the same
// topic receives everything at once.
func TestPopFIFOGroup(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	_, b := popReady(t, tc)
	g, _ := leaderGroup(t, tc)
	broker.WaitFor(t, "format version 5", func() bool { return g.FormatVersion() >= 5 })
	createTestTopic(t, tc, "PopFifo", 1)
	putTestMessages(t, tc, "PopFifo", 0, "a", "b", "c", "d", "e", "f")
	cfg := protocol.DefaultSubscriptionGroupConfig("cg_fifo")
	cfg.ConsumeMessageOrderly = true
	if resp := b.ServeLocal(testCtx(t), netipLoopback, putGroupRequest(t, cfg)); resp.Code != remoting.Success {
		t.Fatalf("put the FIFO group: %d %s", resp.Code, resp.Remark)
	}
	if !b.PopOrderly("cg_fifo") {
		t.Fatal("the group is not FIFO once put")
	}

	req := broker.PopRequest{Group: "cg_fifo", Topic: "PopFifo", Expression: "*", Max: 2, Invisible: time.Second}
	first, err := b.PopMessages(testCtx(t), req)
	if err != nil || bodies(first) != "0-a 1-b" {
		t.Fatalf("first receive: %q %v, want 0-a 1-b", bodies(first), err)
	}
	req.Max = 8
	if got, err := b.PopMessages(testCtx(t), req); err != nil || len(got) != 0 {
		t.Fatalf("with two in flight the queue gave %q %v", bodies(got), err)
	}
	if errs, err := b.AckPopped(testCtx(t), req.Group, req.Topic, []string{first[0].Handle}); err != nil || errors.Join(errs...) != nil {
		t.Fatalf("ack: %v %v", err, errs)
	}
	if got, err := b.PopMessages(testCtx(t), req); err != nil || len(got) != 0 {
		t.Fatalf("with one in flight the queue gave %q %v", bodies(got), err)
	}
	// The unacknowledged one comes back alone, at attempt 2, once due.
	req.Wait = 10 * time.Second
	again := popAll(t, b, req, 1)
	if bodies(again) != "1-b" || again[0].Attempt != 2 {
		t.Fatalf("after the invisible time: %q (attempt %d), want 1-b at attempt 2", bodies(again), again[0].Attempt)
	}
	if errs, err := b.AckPopped(testCtx(t), req.Group, req.Topic, handles(again)); err != nil || errors.Join(errs...) != nil {
		t.Fatalf("ack: %v %v", err, errs)
	}
	rest := popAll(t, b, req, 4)
	if bodies(rest) != "2-c 3-d 4-e 5-f" {
		t.Fatalf("after the acks: %q, want 2-c 3-d 4-e 5-f", bodies(rest))
	}

	// A group that is not FIFO gets the whole queue at once.
	other := broker.PopRequest{Group: "cg_any", Topic: "PopFifo", Expression: "*", Max: 8, Invisible: time.Second}
	if got := popAll(t, b, other, 6); len(got) != 6 {
		t.Fatalf("a plain group received %d of 6", len(got))
	}
}

// TestFIFOGroupRefusedBelowVersion5: while a member applies only up to
// format version 4, a FIFO group is refused (its binary would drop the
// flag and serve the group unordered); a plain group is put.
func TestFIFOGroupRefusedBelowVersion5(t *testing.T) {
	tc := brokertest.StartClusterWith(t, 3, nil, func(i int, c *dledger.Config) {
		if i == 2 {
			c.MaxFormatVersion = 4
		}
	})
	g, id := leaderGroup(t, tc)
	broker.WaitFor(t, "the group at version 4", func() bool { return g.FormatVersion() == 4 })
	cfg := protocol.DefaultSubscriptionGroupConfig("cg_fifo4")
	cfg.ConsumeMessageOrderly = true
	resp := tc.Broker(id).ServeLocal(testCtx(t), netipLoopback, putGroupRequest(t, cfg))
	if resp.Code != remoting.InvalidParameter || !strings.Contains(resp.Remark, "format version 5") {
		t.Fatalf("a FIFO group at version 4: %d %q", resp.Code, resp.Remark)
	}
	cfg.ConsumeMessageOrderly = false
	if resp := tc.Broker(id).ServeLocal(testCtx(t), netipLoopback, putGroupRequest(t, cfg)); resp.Code != remoting.Success {
		t.Fatalf("a plain group at version 4: %d %q", resp.Code, resp.Remark)
	}
}

// TestServeLocalSendAnswerIsAMap: the remoting port writes a send's answer
// from a list; an in-process caller (the gRPC port) reads its header as a
// map, as it reads every other answer.
func TestServeLocalSendAnswerIsAMap(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	_, b := popReady(t, tc)
	createTestTopic(t, tc, "LocalSend", 1)
	resp := b.ServeLocal(testCtx(t), netipLoopback, broker.SendRequest("LocalSend", 0, nil, "body"))
	if resp.Code != remoting.Success {
		t.Fatalf("send: %d %s", resp.Code, resp.Remark)
	}
	var h protocol.SendMessageResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil || h.MsgID == "" {
		t.Fatalf("the answer's header as a map: %+v %v", h, err)
	}
}
