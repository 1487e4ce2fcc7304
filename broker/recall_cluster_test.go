package broker_test

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

func recallRequest(topic, handle string) func() *remoting.Command {
	return func() *remoting.Command {
		h := protocol.RecallMessageRequestHeader{ProducerGroup: "PG", Topic: topic, RecallHandle: handle}
		return h.Request()
	}
}

// recallsHeld: the recall groups g's replica holds.
func recallsHeld(g *dledger.Group) int {
	return len(g.Metadata().OffsetGroupsWithPrefix(broker.RecallGroupPrefix))
}

// sendTimer sends a timer message of topic queue 0 due in d and returns
// its recall handle, checked against the parked copy: Java's form, its
// TIMER_OUT_MS + 1, its UNIQ_KEY.
func sendTimer(t *testing.T, tc *brokertest.Cluster, c *remoting.Client, g *dledger.Group, topic string, d time.Duration, body string) string {
	t.Helper()
	resp := send(t, tc, c, topic, 0, timerProps(message.PropertyTimerDelayMS, d.Milliseconds()), body)
	raw := resp.ExtFields[protocol.ExtRecallHandle]
	h, err := protocol.DecodeRecallHandle(raw)
	if err != nil {
		t.Fatalf("send of a timer answered recall handle %q: %v", raw, err)
	}
	id := resp.ExtFields["transactionId"]
	if h.Topic != topic || h.MessageID != id || h.BrokerName == "" {
		t.Fatalf("handle %+v for topic %s, message %s", h, topic, id)
	}
	broker.WaitUntil(t, 10*time.Second, "the timer parked on the leader's replica", func() bool {
		_, ok := parkedFor(t, g, topic, 0)[id]
		return ok
	})
	off, ok := parkedFor(t, g, topic, 0)[id]
	if !ok {
		t.Fatalf("timer %s not parked", id)
	}
	out, _ := strconv.ParseInt(readBack(t, g, broker.TimerTopic, 0, off).Properties[broker.TimerOutMS], 10, 64)
	if h.TimestampMS() != out+1 {
		t.Fatalf("handle time %s, want TIMER_OUT_MS %d + 1", h.Timestamp, out)
	}
	return raw
}

// queueBodies are the bodies queue 0 of topic holds on g.
func queueBodies(t *testing.T, g *dledger.Group, topic string) []string {
	t.Helper()
	var out []string
	for off := int64(0); off < queueLen(g, topic, 0); off++ {
		out = append(out, string(readBack(t, g, topic, 0, off).Body))
	}
	return out
}

// TestRecallTimerMessage recalls a timer message 3 s before it is due on
// a 3-node group: it is never delivered (its neighbour is), every replica
// holds the recall until its time passed, then none; a recall through a
// follower is forwarded; a delivered message, a passed time, a garbage
// handle, another topic and an unknown topic are answered as Java
// answers them.
func TestRecallTimerMessage(t *testing.T) {
	clk := &testClock{}
	tc := timerCluster(t, 3, clk)
	c := newProdClient(t)
	leaderID, _, g := leaderOf(t, tc)
	send(t, tc, c, "RecallTopic", 0, nil, "plain")
	send(t, tc, c, "TimerProbe", 0, nil, "probe-0")

	recalled := sendTimer(t, tc, c, g, "RecallTopic", 3*time.Second, "recalled")
	sendTimer(t, tc, c, g, "RecallTopic", 3*time.Second, "kept")
	resp := ask(t, tc, c, recallRequest("RecallTopic", recalled))
	mustOK(t, resp)
	h, _ := protocol.DecodeRecallHandle(recalled)
	if resp.ExtFields["msgId"] != h.MessageID {
		t.Fatalf("recall answered msgId %q, want %q", resp.ExtFields["msgId"], h.MessageID)
	}
	// Through a follower, which forwards it: again OK (idempotent).
	_, faddr := followerOf(t, tc, leaderID)
	mustOK(t, invoke(t, c, faddr, recallRequest("RecallTopic", recalled)()))
	for _, n := range tc.Raft.Up() {
		broker.WaitUntil(t, 10*time.Second, "the recall on "+n.ID, func() bool { return recallsHeld(n.Group()) == 1 })
	}

	// Past its time: the probe, due later, delivered means the recalled
	// timer was handled (the scheduler goes in due order).
	clk.advance(10 * time.Second)
	probe(t, tc, c, g, 2)
	broker.WaitUntil(t, 10*time.Second, "every timer handled", func() bool { return allDelivered(g) })
	if got := strings.Join(queueBodies(t, g, "RecallTopic"), ","); got != "plain,kept" {
		t.Fatalf("RecallTopic holds %s, want plain,kept", got)
	}
	for _, n := range tc.Raft.Up() {
		broker.WaitUntil(t, 10*time.Second, "the recall dropped on "+n.ID, func() bool { return recallsHeld(n.Group()) == 0 })
	}

	illegal := func(what, topic, handle, remark string) {
		t.Helper()
		resp := ask(t, tc, c, recallRequest(topic, handle))
		if resp.Code != remoting.IllegalOperation || !strings.Contains(resp.Remark, remark) {
			t.Fatalf("%s: code %d remark %q, want ILLEGAL_OPERATION %q", what, resp.Code, resp.Remark, remark)
		}
	}
	// Its time passed.
	illegal("a recall after its time", "RecallTopic", recalled, "timestamp invalid")
	// Delivered: a timer due in 1 s, delivered, then recalled (its
	// time may not have passed on the clock yet: the cursor has).
	delivered := sendTimer(t, tc, c, g, "RecallTopic", time.Second, "delivered")
	clk.advance(2 * time.Second)
	broker.WaitUntil(t, 10*time.Second, "the 1 s timer delivered", func() bool { return queueLen(g, "RecallTopic", 0) == 3 })
	illegal("a delivered timer", "RecallTopic", delivered, "timestamp invalid")
	// Not a handle, another topic's, another group's.
	illegal("a garbage handle", "RecallTopic", "not a handle!", "recall handle is invalid")
	illegal("a v2 handle", "RecallTopic", base64.URLEncoding.EncodeToString([]byte("v2 RecallTopic b 1 c")), "recall handle is invalid")
	future := protocol.RecallHandle{Topic: "TimerProbe", BrokerName: h.BrokerName,
		Timestamp: strconv.FormatInt(clk.ms()+60_000, 10), MessageID: "X"}.String()
	illegal("another topic's handle", "RecallTopic", future, "topic not match")
	other := protocol.RecallHandle{Topic: "RecallTopic", BrokerName: "broker-z",
		Timestamp: strconv.FormatInt(clk.ms()+60_000, 10), MessageID: "X"}.String()
	illegal("another group's handle", "RecallTopic", other, "broker service not available")
	if resp := ask(t, tc, c, recallRequest("NoSuchTopic", future)); resp.Code != remoting.TopicNotExist {
		t.Fatalf("unknown topic: code %d %q, want TOPIC_NOT_EXIST", resp.Code, resp.Remark)
	}
	// A message id no send parked, with its time ahead: OK, as Java.
	unknown := protocol.RecallHandle{Topic: "RecallTopic", BrokerName: h.BrokerName,
		Timestamp: strconv.FormatInt(clk.ms()+60_000, 10), MessageID: "NOSUCHMESSAGE"}.String()
	mustOK(t, ask(t, tc, c, recallRequest("RecallTopic", unknown)))
}

// TestRecallSurvivesLeaderKill recalls a timer, kills the leader, and
// checks that the next leader does not deliver it (and delivers the one
// beside it).
func TestRecallSurvivesLeaderKill(t *testing.T) {
	clk := &testClock{}
	tc := timerCluster(t, 3, clk)
	c := newProdClient(t)
	leaderID, _, g := leaderOf(t, tc)
	send(t, tc, c, "RecallKill", 0, nil, "plain")
	send(t, tc, c, "TimerProbe", 0, nil, "probe-0")
	recalled := sendTimer(t, tc, c, g, "RecallKill", 3*time.Second, "recalled")
	sendTimer(t, tc, c, g, "RecallKill", 3*time.Second, "kept")
	mustOK(t, ask(t, tc, c, recallRequest("RecallKill", recalled)))

	tc.Kill(leaderID)
	newID, _, g := leaderOf(t, tc)
	if newID == leaderID {
		t.Fatalf("the killed node %s still leads", leaderID)
	}
	clk.advance(10 * time.Second)
	probe(t, tc, c, g, 2)
	broker.WaitUntil(t, 10*time.Second, "every timer handled", func() bool { return allDelivered(g) })
	if got := strings.Join(queueBodies(t, g, "RecallKill"), ","); got != "plain,kept" {
		t.Fatalf("RecallKill holds %s after the failover, want plain,kept", got)
	}
	tc.Restart(leaderID)
}
