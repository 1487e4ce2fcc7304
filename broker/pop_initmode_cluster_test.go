package broker_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// shiftClock is the real time moved on by a shift the test sets.
type shiftClock struct{ shift atomic.Int64 }

func (c *shiftClock) Now() time.Time { return time.Now().Add(time.Duration(c.shift.Load())) }

// popInit pops from queue 0 of topic over remoting with initMode, as a
// Java POP consumer does, and returns the tags of what came.
func popInit(t *testing.T, c *testClient, addr, group, topic string, initMode int32) string {
	t.Helper()
	h := protocol.PopMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: 0, MaxMsgNums: 32,
		InvisibleTime: time.Minute.Milliseconds(), BornTime: time.Now().UnixMilli(), InitMode: initMode}
	resp, err := c.Invoke(testCtx(t), addr, h.Request())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code == remoting.PollingTimeout {
		return ""
	}
	if resp.Code != remoting.Success {
		t.Fatalf("POP_MESSAGE of %s: %d %q", group, resp.Code, resp.Remark)
	}
	msgs, err := message.DecodeRecords(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(tagsOf(msgs), "")
}

// TestPopInitMode: a group with neither POP position nor committed
// offset starts, with initMode MIN, at the queue's first message; with
// MAX, at its first too while that message is young (stored less than
// 10 minutes before, by the broker's clock), else at its last message;
// and a MAX group that first found its queue empty gets what is sent
// after. The gRPC port's receives start as MAX ones.
func TestPopInitMode(t *testing.T) {
	clock := &shiftClock{}
	tc := brokertest.StartNode(t, func(_ int, c *broker.Config) { c.Clock = clock.Now })
	_, b := popReady(t, tc)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t)
	createTestTopic(t, tc, "InitT", 1)
	createTestTopic(t, tc, "InitEmptyT", 1)
	putTestMessages(t, tc, "InitT", 0, "a", "b", "c")

	// Young: both modes from the first message.
	if got := popInit(t, c, addr, "cg_min_young", "InitT", protocol.PopInitModeMin); got != "abc" {
		t.Fatalf("MIN on a young queue: %q", got)
	}
	if got := popInit(t, c, addr, "cg_max_young", "InitT", protocol.PopInitModeMax); got != "abc" {
		t.Fatalf("MAX on a young queue: %q", got)
	}
	// A MAX group that found the queue empty gets what comes next.
	if got := popInit(t, c, addr, "cg_max_empty", "InitEmptyT", protocol.PopInitModeMax); got != "" {
		t.Fatalf("MAX on an empty queue: %q", got)
	}
	putTestMessages(t, tc, "InitEmptyT", 0, "x", "y")
	if got := popInit(t, c, addr, "cg_max_empty", "InitEmptyT", protocol.PopInitModeMax); got != "xy" {
		t.Fatalf("MAX after the empty queue got messages: %q", got)
	}

	// Old: the first message stored 11 minutes before the broker's now.
	clock.shift.Store(int64(11 * time.Minute))
	if got := popInit(t, c, addr, "cg_max_old", "InitT", protocol.PopInitModeMax); got != "c" {
		t.Fatalf("MAX on an old queue: %q, want its last message", got)
	}
	putTestMessages(t, tc, "InitT", 0, "d")
	if got := popInit(t, c, addr, "cg_max_old", "InitT", protocol.PopInitModeMax); got != "d" {
		t.Fatalf("MAX after its start: %q", got)
	}
	if got := popInit(t, c, addr, "cg_min_old", "InitT", protocol.PopInitModeMin); got != "abcd" {
		t.Fatalf("MIN on an old queue: %q", got)
	}
	// A group with a committed offset starts there, whatever the mode.
	commitOffset(t, c, addr, "cg_committed", "InitT", 0, 1)
	if got := popInit(t, c, addr, "cg_committed", "InitT", protocol.PopInitModeMax); got != "bcd" {
		t.Fatalf("MAX with a committed offset: %q", got)
	}
	// In process, as the gRPC port asks: MAX.
	got := popAll(t, b, broker.PopRequest{Group: "cg_grpc_old", Topic: "InitT", Expression: "*", Max: 32,
		Invisible: time.Minute, InitMode: protocol.PopInitModeMax}, 1)
	if len(got) != 1 || got[0].Msg.Tags() != "d" {
		t.Fatalf("an in-process MAX receive on an old queue: %v", got)
	}
}

// commitOffset commits group's offset of the queue over remoting and
// waits until the leader answers it.
func commitOffset(t *testing.T, c *testClient, addr, group, topic string, qid int32, off int64) {
	t.Helper()
	q := itoa(int64(qid))
	if r := c.call(t, addr, remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": q, "commitOffset": itoa(off)}, nil); r.Code != remoting.Success {
		t.Fatalf("commit: %d %s", r.Code, r.Remark)
	}
	broker.WaitFor(t, "the committed offset", func() bool {
		r := c.call(t, addr, remoting.QueryConsumerOffset, map[string]string{"consumerGroup": group, "topic": topic, "queueId": q}, nil)
		return r.Code == remoting.Success && r.ExtFields["offset"] == itoa(off)
	})
}
