package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/remoting"
)

// delayCluster is a 3-node group with short delay levels.
func delayCluster(t *testing.T) *brokertest.Cluster {
	return brokertest.StartCluster(t, 3, func(_ int, c *broker.Config) {
		c.DelayLevels = []time.Duration{300 * time.Millisecond, 600 * time.Millisecond}
	})
}

// queueLen is a queue's max offset on g (0 for a queue never written).
func queueLen(g *dledger.Group, topic string, q int32) int64 {
	n, err := messagestore.Of(g).MaxOffset(topic, q)
	if err != nil {
		return 0
	}
	return n
}

func TestDelayedMessageWaitsThenArrives(t *testing.T) {
	tc := delayCluster(t)
	c := newProdClient(t)
	_, addr, g := leaderOf(t, tc)
	mustOK(t, invoke(t, c, addr, broker.SendRequest("DelayTopic", 0, nil, "plain"))) // creates the topic
	resp := invoke(t, c, addr, broker.SendRequest("DelayTopic", 2, map[string]string{message.PropertyDelayLevel: "1", message.PropertyKeys: "k1"}, "later"))
	mustOK(t, resp)
	// The answer names the topic's queue the message is for (as Java's), not
	// the level's queue it is parked in; the offset is the parked copy's.
	if resp.ExtFields["queueId"] != "2" || resp.ExtFields["queueOffset"] != "0" {
		t.Fatalf("delayed send answered queue %s offset %s, want queue 2 of DelayTopic, offset 0",
			resp.ExtFields["queueId"], resp.ExtFields["queueOffset"])
	}
	if n := queueLen(g, "DelayTopic", 2); n != 0 {
		t.Fatalf("the delayed message is on its topic at once (%d)", n)
	}
	parked := readBack(t, g, broker.ScheduleTopic, 0, 0)
	if parked.Properties[message.PropertyRealTopic] != "DelayTopic" || parked.Properties[message.PropertyRealQueueID] != "2" {
		t.Fatalf("parked %+v", parked.Properties)
	}
	broker.WaitUntil(t, 10*time.Second, "the delayed message delivered", func() bool { return queueLen(g, "DelayTopic", 2) == 1 })
	got := readBack(t, g, "DelayTopic", 2, 0)
	if string(got.Body) != "later" || got.Properties[message.PropertyDelayLevel] != "" || got.Properties[message.PropertyKeys] != "k1" ||
		got.UniqKey() != resp.ExtFields["transactionId"] || got.StoreTimestamp-parked.StoreTimestamp < 300 {
		t.Fatalf("delivered %+v (parked at %d)", got, parked.StoreTimestamp)
	}
	// DELAY above the table is its last level (queue 1); the answer still
	// names the topic's queue.
	resp = invoke(t, c, addr, broker.SendRequest("DelayTopic", 3, map[string]string{message.PropertyDelayLevel: "17"}, "clamped"))
	mustOK(t, resp)
	if resp.ExtFields["queueId"] != "3" {
		t.Fatalf("DELAY=17 answered queue %s, want 3", resp.ExtFields["queueId"])
	}
	if n := queueLen(g, broker.ScheduleTopic, 1); n != 1 {
		t.Fatalf("DELAY=17: %d messages parked at the last level", n)
	}
	broker.WaitUntil(t, 10*time.Second, "the clamped message delivered", func() bool { return queueLen(g, "DelayTopic", 3) == 1 })
}

// TestDelayedDeliveryExactlyOnceAcrossFailover parks messages, kills the
// leader before they are due, and checks that the next leader delivers each
// exactly once and that the replicas agree afterwards.
func TestDelayedDeliveryExactlyOnceAcrossFailover(t *testing.T) {
	tc := delayCluster(t)
	c := newProdClient(t)
	leaderID, addr, _ := leaderOf(t, tc)
	mustOK(t, invoke(t, c, addr, broker.SendRequest("FailDelay", 0, nil, "plain")))
	const n = 40
	for i := 0; i < n; i++ {
		mustOK(t, invoke(t, c, addr, broker.SendRequest("FailDelay", 1, map[string]string{message.PropertyDelayLevel: "2"}, fmt.Sprintf("d%d", i))))
	}
	tc.Kill(leaderID)
	_, _, g := leaderOf(t, tc)
	broker.WaitUntil(t, 15*time.Second, "every parked message delivered", func() bool { return queueLen(g, "FailDelay", 1) >= n })
	broker.WaitUntil(t, 10*time.Second, "the scheduler's progress at the end of the level", func() bool {
		off, _ := g.Metadata().Offset(broker.ScheduleGroup, broker.ScheduleTopic, 1)
		return off == n
	})
	// Progress equals the parked count, so nothing more can be delivered:
	// the delivered queue is final.
	if got := queueLen(g, "FailDelay", 1); got != n {
		t.Fatalf("%d deliveries of %d parked messages", got, n)
	}
	seen := map[string]bool{}
	for off := int64(0); off < n; off++ {
		m := readBack(t, g, "FailDelay", 1, off)
		if seen[string(m.Body)] {
			t.Fatalf("%s delivered twice", m.Body)
		}
		seen[string(m.Body)] = true
	}
	tc.Restart(leaderID)
	if err := tc.Raft.WaitConverged(testCtx(t)); err != nil {
		t.Fatal(err)
	}

	// Again, killing the leader as soon as it has delivered something.
	leaderID, addr, g = leaderOf(t, tc)
	for i := 0; i < n; i++ {
		mustOK(t, invoke(t, c, addr, broker.SendRequest("FailDelay", 2, map[string]string{message.PropertyDelayLevel: "1"}, fmt.Sprintf("e%d", i))))
	}
	broker.WaitUntil(t, 10*time.Second, "a first delivery", func() bool { return queueLen(g, "FailDelay", 2) > 0 })
	tc.Kill(leaderID)
	_, _, g = leaderOf(t, tc)
	broker.WaitUntil(t, 15*time.Second, "the scheduler's progress at the end of level 1", func() bool {
		off, _ := g.Metadata().Offset(broker.ScheduleGroup, broker.ScheduleTopic, 0)
		return off == n
	})
	if got := queueLen(g, "FailDelay", 2); got != n {
		t.Fatalf("%d deliveries of %d parked messages after a kill mid-delivery", got, n)
	}
	tc.Restart(leaderID)
	if err := tc.Raft.WaitConverged(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := tc.Raft.CompareReplicas(); err != nil {
		t.Fatal(err)
	}
}

func TestConsumerSendMsgBack(t *testing.T) {
	tc := delayCluster(t)
	c := newProdClient(t)
	_, addr, g := leaderOf(t, tc)
	resp := invoke(t, c, addr, broker.SendRequest("BackTopic", 0, map[string]string{message.PropertyKeys: "kb"}, "fail-me"))
	mustOK(t, resp)
	orig := readBack(t, g, "BackTopic", 0, 0)
	back := func(ext map[string]string) *remoting.Command {
		base := map[string]string{"group": "back-cg", "offset": fmt.Sprint(orig.PhysicalOffset), "delayLevel": "0",
			"originMsgId": orig.MsgID(), "originTopic": "BackTopic", "unitMode": "false", "maxReconsumeTimes": "16"}
		for k, v := range ext {
			base[k] = v
		}
		return invoke(t, c, addr, remoting.NewRequest(remoting.ConsumerSendMsgBack, base, nil))
	}

	// delayLevel 1 through a follower: parked, then in %RETRY%back-cg.
	leaderID, _, _ := leaderOf(t, tc)
	_, faddr := followerOf(t, tc, leaderID)
	base := map[string]string{"group": "back-cg", "offset": fmt.Sprint(orig.PhysicalOffset), "delayLevel": "1", "maxReconsumeTimes": "16"}
	mustOK(t, invoke(t, c, faddr, remoting.NewRequest(remoting.ConsumerSendMsgBack, base, nil)))
	broker.WaitUntil(t, 10*time.Second, "the retry copy", func() bool { return queueLen(g, "%RETRY%back-cg", 0) == 1 })
	r := readBack(t, g, "%RETRY%back-cg", 0, 0)
	if string(r.Body) != "fail-me" || r.ReconsumeTimes != 1 || r.UniqKey() != orig.UniqKey() ||
		r.Properties[message.PropertyRetryTopic] != "BackTopic" || r.Properties[message.PropertyOriginMessageID] != orig.MsgID() ||
		r.Properties[message.PropertyKeys] != "kb" || r.Properties[message.PropertyDelayLevel] != "" {
		t.Fatalf("retry copy %+v", r)
	}

	// delayLevel -1, and a message retried maxReconsumeTimes times, go to
	// the DLQ at once.
	// g applies what the leader acknowledged a moment later when the
	// leadership has moved since (addr then forwards), so wait for it.
	mustOK(t, back(map[string]string{"delayLevel": "-1"}))
	broker.WaitUntil(t, 10*time.Second, "the DLQ copy", func() bool { return queueLen(g, "%DLQ%back-cg", 0) >= 1 })
	if n := queueLen(g, "%DLQ%back-cg", 0); n != 1 {
		t.Fatalf("DLQ holds %d after delayLevel -1", n)
	}
	rt := readBack(t, g, "%RETRY%back-cg", 0, 0)
	retried := map[string]string{"offset": fmt.Sprint(rt.PhysicalOffset), "maxReconsumeTimes": "1"}
	mustOK(t, back(retried))
	broker.WaitUntil(t, 10*time.Second, "the second DLQ copy", func() bool { return queueLen(g, "%DLQ%back-cg", 0) >= 2 })
	if n := queueLen(g, "%DLQ%back-cg", 0); n != 2 {
		t.Fatalf("DLQ holds %d after the last retry", n)
	}

	for _, bad := range []map[string]string{{"offset": "x"}, {"offset": "999999999"}, {"group": ""}, {"delayLevel": "z"}} {
		if resp := back(bad); resp.Code == remoting.Success {
			t.Errorf("36 with %v accepted", bad)
		}
	}
}

// TestConsumerSendMsgBackRepeated: a send-back repeated for the same
// attempt (the consumer lost the answer), or followed by the consumer's
// own send of the retry to %RETRY% (it believed the send-back failed),
// stores the retry once; another group's send-back of the same message,
// and the next attempt's, are stored.
func TestConsumerSendMsgBackRepeated(t *testing.T) {
	tc := delayCluster(t)
	c := newProdClient(t)
	_, addr, g := leaderOf(t, tc)
	mustOK(t, invoke(t, c, addr, broker.SendRequest("RepeatBack", 0, nil, "fail-me")))
	orig := readBack(t, g, "RepeatBack", 0, 0)
	back := func(group string, m *message.Ext, level string) {
		t.Helper()
		mustOK(t, invoke(t, c, addr, remoting.NewRequest(remoting.ConsumerSendMsgBack, map[string]string{
			"group": group, "offset": fmt.Sprint(m.PhysicalOffset), "delayLevel": level, "maxReconsumeTimes": "16"}, nil)))
	}
	parked := func() int64 { return queueLen(g, broker.ScheduleTopic, 0) }

	for range 3 {
		back("rb-a", orig, "1")
	}
	fallback := broker.SendRequest("%RETRY%rb-a", 0, map[string]string{message.PropertyUniqKey: orig.UniqKey(),
		message.PropertyDelayLevel: "1", message.PropertyReconsumeTime: "1"}, "fail-me")
	fallback.ExtFields["reconsumeTimes"] = "1"
	mustOK(t, invoke(t, c, addr, fallback))
	back("rb-b", orig, "1")
	if n := parked(); n != 2 {
		t.Fatalf("%d copies parked for three send-backs and a send of one attempt by one group and one by another, want 2", n)
	}
	broker.WaitUntil(t, 10*time.Second, "each group's retry delivered", func() bool {
		return queueLen(g, "%RETRY%rb-a", 0) == 1 && queueLen(g, "%RETRY%rb-b", 0) == 1
	})

	// The next attempt is a retry of its own, stored once however often
	// it is sent back; so is the way to the DLQ.
	rt := readBack(t, g, "%RETRY%rb-a", 0, 0)
	if rt.ReconsumeTimes != 1 || rt.UniqKey() != orig.UniqKey() {
		t.Fatalf("retry copy %+v", rt)
	}
	back("rb-a", rt, "1")
	back("rb-a", rt, "1")
	if n := parked(); n != 3 {
		t.Fatalf("%d copies parked after the second attempt's send-back, want 3", n)
	}
	back("rb-a", orig, "-1")
	back("rb-a", orig, "-1")
	if n := queueLen(g, "%DLQ%rb-a", 0); n != 1 {
		t.Fatalf("DLQ holds %d after a repeated send-back to it, want 1", n)
	}
	if err := tc.Raft.WaitConverged(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := tc.Raft.CompareReplicas(); err != nil {
		t.Fatal(err)
	}
}

func TestScheduleTopicRefused(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	c := newProdClient(t)
	_, addr, _ := leaderOf(t, tc)
	if resp := invoke(t, c, addr, broker.SendRequest(broker.ScheduleTopic, 0, nil, "x")); resp.Code != remoting.InvalidParameter {
		t.Errorf("a send to %s: %d %s", broker.ScheduleTopic, resp.Code, resp.Remark)
	}
}

// A batch with a DELAY, in its header or in one message, is refused
// rather than stored at once (which would deliver it early).
func TestDelayedBatchRefused(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	c := newProdClient(t)
	_, addr, _ := leaderOf(t, tc)
	req := broker.BatchRequest("DelayBatch", 0, broker.CapturedBatch())
	req.ExtFields["i"] = string(message.EncodeProperties(map[string]string{message.PropertyDelayLevel: "2"}))
	if resp := invoke(t, c, addr, req); resp.Code != remoting.MessageIllegal {
		t.Fatalf("delayed batch: %d %s", resp.Code, resp.Remark)
	}
}
