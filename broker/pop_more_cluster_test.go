package broker_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// remotePeek sends one PEEK_MESSAGE and returns the answer's code,
// restNum and messages.
func remotePeek(t *testing.T, c *testClient, addr, group, topic string, queue, max int32) (int32, int64, []*message.Ext) {
	t.Helper()
	h := protocol.PeekMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queue, MaxMsgNums: max}
	resp, err := c.Invoke(testCtx(t), addr, h.Request())
	if err != nil {
		t.Fatalf("PEEK_MESSAGE: %v", err)
	}
	if resp.Code != remoting.Success && resp.Code != remoting.PullNotFound {
		return resp.Code, 0, nil
	}
	var rh protocol.PopMessageResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		t.Fatalf("PEEK_MESSAGE answer %d %q: %v", resp.Code, resp.Remark, err)
	}
	msgs, err := message.DecodeRecords(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if (resp.Code == remoting.Success) != (len(msgs) > 0) {
		t.Fatalf("PEEK_MESSAGE answered %d with %d messages", resp.Code, len(msgs))
	}
	return resp.Code, rh.RestNum, msgs
}

// notifyRequest is a NOTIFICATION as a Java client builds it.
func notifyRequest(group, topic string, queue int32, poll time.Duration) *remoting.Command {
	h := protocol.NotificationRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queue, PollTime: poll.Milliseconds(), BornTime: time.Now().UnixMilli()}
	return h.Request()
}

// notifyAnswer decodes a NOTIFICATION answer, which must be SUCCESS.
func notifyAnswer(t *testing.T, resp *remoting.Command, err error) protocol.NotificationResponseHeader {
	t.Helper()
	if err != nil {
		t.Fatalf("NOTIFICATION: %v", err)
	}
	var rh protocol.NotificationResponseHeader
	if resp.Code != remoting.Success {
		t.Fatalf("NOTIFICATION answered %d %q", resp.Code, resp.Remark)
	}
	if err := rh.Decode(resp.ExtFields); err != nil {
		t.Fatal(err)
	}
	return rh
}

func remoteNotify(t *testing.T, c *testClient, addr, group, topic string, queue int32, poll time.Duration) protocol.NotificationResponseHeader {
	t.Helper()
	resp, err := c.Invoke(testCtx(t), addr, notifyRequest(group, topic, queue, poll))
	return notifyAnswer(t, resp, err)
}

// goInvoke sends req in a goroutine; the answer comes on the channel.
func goInvoke(t *testing.T, c *testClient, addr string, req *remoting.Command) <-chan *remoting.Command {
	ch := make(chan *remoting.Command, 1)
	ctx := testCtx(t)
	go func() {
		resp, err := c.Invoke(ctx, addr, req)
		if err != nil {
			resp = remoting.NewResponse(req, remoting.RPCUnknown, err.Error())
		}
		ch <- resp
	}()
	return ch
}

// await is the answer goInvoke delivers.
func await(t *testing.T, ch <-chan *remoting.Command) *remoting.Command {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-testCtx(t).Done():
		t.Fatal("no answer")
		return nil
	}
}

func pollingNum(t *testing.T, c *testClient, addr, group, topic string, queue int32) int32 {
	t.Helper()
	h := protocol.PollingInfoRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queue}
	resp, err := c.Invoke(testCtx(t), addr, h.Request())
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("POLLING_INFO: %v %+v", err, resp)
	}
	var rh protocol.PollingInfoResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		t.Fatal(err)
	}
	return rh.PollingNum
}

// popRequest is a POP_MESSAGE of up to 32 messages, invisible a minute.
func popRequest(group, topic string, queue int32, poll time.Duration) *remoting.Command {
	h := protocol.PopMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queue, MaxMsgNums: 32,
		InvisibleTime: time.Minute.Milliseconds(), PollTime: poll.Milliseconds(), BornTime: time.Now().UnixMilli()}
	return h.Request()
}

// popN pops over remoting until n messages came, keyed by the body's
// last byte (the tag putTestMessages gives it).
func popN(t *testing.T, c *testClient, addr, group, topic string, invisible time.Duration, n int) map[string]remotePopped {
	t.Helper()
	out := map[string]remotePopped{}
	broker.WaitFor(t, fmt.Sprintf("%d messages popped", n), func() bool {
		code, got := remotePop(t, c, addr, group, topic, invisible, time.Second)
		if code != remoting.Success && code != remoting.PollingTimeout {
			t.Fatalf("POP_MESSAGE answered %d", code)
		}
		for _, p := range got {
			out[string(p.msg.Body[len(p.msg.Body)-1:])] = p
		}
		return len(out) >= n
	})
	if len(out) != n {
		t.Fatalf("popped %d messages, want %d", len(out), n)
	}
	return out
}

// batchOf is the BATCH_ACK_MESSAGE body a Java client builds for ps: one
// entry per retry, queue, start offset and pop time, a bit per message.
func batchOf(group string, ps ...remotePopped) *protocol.BatchAckMessageRequestBody {
	body := &protocol.BatchAckMessageRequestBody{BrokerName: "broker-a"}
	at := map[string]int{}
	for _, p := range ps {
		x := p.extra
		k := fmt.Sprint(x.Retry, "@", x.QueueID, "@", x.StartOffset, "@", x.PopTime)
		i, ok := at[k]
		if !ok {
			i = len(body.Acks)
			at[k] = i
			body.Acks = append(body.Acks, protocol.BatchAck{ConsumerGroup: group, Topic: p.msg.Topic, Retry: x.Retry, StartOffset: x.StartOffset,
				QueueID: x.QueueID, ReviveQueueID: x.ReviveQid, PopTime: x.PopTime, InvisibleTime: x.InvisibleTime})
		}
		body.Acks[i].Offsets = append(body.Acks[i].Offsets, x.QueueOffset)
	}
	return body
}

func batchAck(t *testing.T, c *testClient, addr string, body *protocol.BatchAckMessageRequestBody) *remoting.Command {
	t.Helper()
	req, err := body.Request()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Invoke(testCtx(t), addr, req)
	if err != nil {
		t.Fatalf("BATCH_ACK_MESSAGE: %v", err)
	}
	return resp
}

// TestRemotingPeekLeavesMessagesPoppable: PEEK_MESSAGE shows the messages
// a POP of the group would get — every queue's or one's, up to
// maxMsgNums, with restNum — and changes nothing: peeked twice, they are
// all still handed out by the next POP; in flight, nothing is peeked;
// once visible again, they are peeked again and POP hands them out at
// attempt 2; acknowledged, nothing is.
func TestRemotingPeekLeavesMessagesPoppable(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	popReady(t, tc)
	createTestTopic(t, tc, "PeekT", 2)
	putTestMessages(t, tc, "PeekT", 0, "a", "b")
	putTestMessages(t, tc, "PeekT", 1, "c")
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t)
	const group = "cg_peek"
	for range 2 {
		if code, rest, msgs := remotePeek(t, c, addr, group, "PeekT", -1, 32); code != remoting.Success || rest != 3 || len(msgs) != 3 {
			t.Fatalf("peek of every queue: %d, restNum %d, %d messages", code, rest, len(msgs))
		}
	}
	if code, rest, msgs := remotePeek(t, c, addr, group, "PeekT", 1, 32); code != remoting.Success || rest != 1 || len(msgs) != 1 || msgs[0].QueueID != 1 {
		t.Fatalf("peek of queue 1: %d, restNum %d, %d messages", code, rest, len(msgs))
	}
	if _, _, msgs := remotePeek(t, c, addr, group, "PeekT", -1, 2); len(msgs) != 2 {
		t.Fatalf("peek of 2: %d messages", len(msgs))
	}

	popped := popN(t, c, addr, group, "PeekT", time.Minute, 3)
	for _, p := range popped {
		if p.msg.ReconsumeTimes != 0 {
			t.Fatalf("%q popped after peeks at reconsume times %d", p.msg.Body, p.msg.ReconsumeTimes)
		}
	}
	if code, rest, msgs := remotePeek(t, c, addr, group, "PeekT", -1, 32); code != remoting.PullNotFound || rest != 0 || len(msgs) != 0 {
		t.Fatalf("peek with everything in flight: %d, restNum %d, %d messages", code, rest, len(msgs))
	}

	// Visible again at once: peeked (twice, still nothing changes), then
	// POP hands them out again.
	for _, p := range popped {
		remoteChange(t, c, addr, group, p, 0)
	}
	for range 2 {
		if code, _, msgs := remotePeek(t, c, addr, group, "PeekT", -1, 32); code != remoting.Success || len(msgs) != 3 {
			t.Fatalf("peek of the messages due again: %d, %d messages", code, len(msgs))
		}
	}
	again := popN(t, c, addr, group, "PeekT", time.Minute, 3)
	for _, p := range again {
		if p.msg.ReconsumeTimes != 1 {
			t.Fatalf("%q again at reconsume times %d, want 1", p.msg.Body, p.msg.ReconsumeTimes)
		}
		if code := remoteAck(t, c, addr, group, p); code != remoting.Success {
			t.Fatalf("ack: %d", code)
		}
	}
	if code, _, msgs := remotePeek(t, c, addr, group, "PeekT", -1, 32); code != remoting.PullNotFound || len(msgs) != 0 {
		t.Fatalf("peek after the acks: %d, %d messages", code, len(msgs))
	}

	for what, want := range map[string]struct {
		topic string
		queue int32
		max   int32
		code  int32
	}{
		"unknown topic": {"NoSuchTopic", -1, 1, remoting.TopicNotExist},
		"queue 2 of 2":  {"PeekT", 2, 1, remoting.InvalidParameter},
		"maxMsgNums 0":  {"PeekT", 0, 0, remoting.InvalidParameter},
	} {
		if code, _, _ := remotePeek(t, c, addr, group, want.topic, want.queue, want.max); code != want.code {
			t.Errorf("peek of %s: %d, want %d", what, code, want.code)
		}
	}
}

// TestRemotingNotification: NOTIFICATION answers hasMsg for the queue
// asked (or any), false while the only message is in flight and true
// once it is visible again; a long poll is held and woken by a send, or
// ends at its pollTime with hasMsg false; past the cap of held requests
// one is answered pollingFull at once.
func TestRemotingNotification(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	_, b := popReady(t, tc)
	createTestTopic(t, tc, "NotifT", 2)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t)
	const group = "cg_notif"
	if rh := remoteNotify(t, c, addr, group, "NotifT", -1, 0); rh.HasMsg || rh.PollingFull {
		t.Fatalf("empty topic: %+v", rh)
	}

	// Held until a message is stored.
	const poll = 20 * time.Second
	start := time.Now()
	held := goInvoke(t, c, addr, notifyRequest(group, "NotifT", -1, poll))
	broker.WaitFor(t, "the notification held", func() bool { return b.HeldNotificationsForTest() == 1 })
	putTestMessages(t, tc, "NotifT", 0, "x")
	r := await(t, held)
	if rh := notifyAnswer(t, r, nil); !rh.HasMsg {
		t.Fatalf("woken by a send: %+v", rh)
	}
	if waited := time.Since(start); waited >= poll {
		t.Fatalf("answered after %v: not woken by the send", waited)
	}
	if n := b.HeldNotificationsForTest(); n != 0 {
		t.Fatalf("%d notifications still held", n)
	}
	if !remoteNotify(t, c, addr, group, "NotifT", 0, 0).HasMsg || remoteNotify(t, c, addr, group, "NotifT", 1, 0).HasMsg {
		t.Fatal("hasMsg per queue: want true for queue 0 only")
	}

	// In flight: nothing a POP would get, until visible again.
	p := popN(t, c, addr, group, "NotifT", time.Minute, 1)["x"]
	if remoteNotify(t, c, addr, group, "NotifT", -1, 0).HasMsg {
		t.Fatal("hasMsg with the only message in flight")
	}
	start = time.Now()
	if rh := remoteNotify(t, c, addr, group, "NotifT", -1, 300*time.Millisecond); rh.HasMsg {
		t.Fatalf("a poll of 300 ms: %+v", rh)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Fatalf("a poll of 300 ms answered after %v", waited)
	}
	remoteChange(t, c, addr, group, p, 0)
	if !remoteNotify(t, c, addr, group, "NotifT", -1, 0).HasMsg {
		t.Fatal("no hasMsg for a message visible again")
	}
	again := popN(t, c, addr, group, "NotifT", time.Minute, 1)["x"]
	if code := remoteAck(t, c, addr, group, again); code != remoting.Success {
		t.Fatalf("ack: %d", code)
	}

	// At the cap, one more is answered at once, pollingFull.
	b.SetMaxHeldNotificationsForTest(1)
	held = goInvoke(t, c, addr, notifyRequest(group, "NotifT", -1, poll))
	broker.WaitFor(t, "the notification held", func() bool { return b.HeldNotificationsForTest() == 1 })
	if rh := remoteNotify(t, c, addr, group, "NotifT", -1, poll); rh.HasMsg || !rh.PollingFull {
		t.Fatalf("past the cap: %+v", rh)
	}
	putTestMessages(t, tc, "NotifT", 1, "y")
	if rh := notifyAnswer(t, await(t, held), nil); !rh.HasMsg {
		t.Fatalf("the held one after a send: %+v", rh)
	}

	for what, want := range map[string]struct {
		topic string
		queue int32
		code  int32
	}{
		"unknown topic": {"NoSuchTopic", -1, remoting.TopicNotExist},
		"queue 2 of 2":  {"NotifT", 2, remoting.InvalidParameter},
	} {
		if r := c.call(t, addr, remoting.Notification, notifyRequest(group, want.topic, want.queue, 0).ExtFields, nil); r.Code != want.code {
			t.Errorf("notification of %s: %d %q, want %d", what, r.Code, r.Remark, want.code)
		}
	}
}

// TestRemotingPollingInfo: POLLING_INFO counts the POP long polls held
// for the group, topic and queue (-1 those of any queue), and none once
// they are answered.
func TestRemotingPollingInfo(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	popReady(t, tc)
	createTestTopic(t, tc, "PollT", 2)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t)
	const group = "cg_polling"
	if n := pollingNum(t, c, addr, group, "PollT", -1); n != 0 {
		t.Fatalf("pollingNum %d with no poll", n)
	}
	anyQueue := goInvoke(t, c, addr, popRequest(group, "PollT", -1, 2*time.Second))
	broker.WaitFor(t, "a POP of any queue held", func() bool { return pollingNum(t, c, addr, group, "PollT", -1) == 1 })
	queue0 := goInvoke(t, c, addr, popRequest(group, "PollT", 0, 2*time.Second))
	broker.WaitFor(t, "a POP of queue 0 held", func() bool { return pollingNum(t, c, addr, group, "PollT", 0) == 1 })
	if n := pollingNum(t, c, addr, group, "PollT", -1); n != 1 {
		t.Fatalf("pollingNum of any queue %d, want 1", n)
	}
	if n, m := pollingNum(t, c, addr, group, "PollT", 1), pollingNum(t, c, addr, "cg_other", "PollT", -1); n != 0 || m != 0 {
		t.Fatalf("pollingNum of queue 1: %d, of another group: %d; want 0", n, m)
	}
	for _, ch := range []<-chan *remoting.Command{anyQueue, queue0} {
		if r := await(t, ch); r.Code != remoting.PollingTimeout {
			t.Fatalf("POP on an empty topic: %d %q", r.Code, r.Remark)
		}
	}
	if n, m := pollingNum(t, c, addr, group, "PollT", -1), pollingNum(t, c, addr, group, "PollT", 0); n != 0 || m != 0 {
		t.Fatalf("pollingNum after the polls ended: %d, %d", n, m)
	}
	if r := c.call(t, addr, remoting.PollingInfo, map[string]string{"consumerGroup": group, "topic": "PollT", "queueId": "2"}, nil); r.Code != remoting.InvalidParameter {
		t.Fatalf("queue 2 of 2: %d %q", r.Code, r.Remark)
	}
}

// TestRemotingBatchAck: over real TCP against a 3-node group, a
// BATCH_ACK_MESSAGE naming one stale receipt is refused NO_MESSAGE and
// acknowledges none of its messages; the right one, sent to a follower,
// is forwarded and acknowledges them all in one request (every replica
// then holds only the receipt not acknowledged); sent again, NO_MESSAGE.
// The message left out comes back alone at attempt 2; bodies the broker
// cannot honour are refused.
func TestRemotingBatchAck(t *testing.T) {
	tc := brokertest.StartClusterWith(t, 3, nil, brokertest.StableLeader)
	popReady(t, tc)
	createTestTopic(t, tc, "BAckT", 2)
	offs := putTestMessages(t, tc, "BAckT", 0, "a", "b", "c")
	putTestMessages(t, tc, "BAckT", 1, "d")
	leaderID, _ := popReady(t, tc)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	_, faddr := followerOf(t, tc, leaderID)
	c := newTestClient(t)
	const group = "cg_backt"
	p := popN(t, c, addr, group, "BAckT", time.Minute, 4)

	stale := p["c"]
	stale.extra.PopTime++
	r := batchAck(t, c, addr, batchOf(group, p["a"], p["b"], p["d"], stale))
	if r.Code != remoting.NoMessage || !strings.Contains(r.Remark, "none of the 4") || !strings.Contains(r.Remark, fmt.Sprintf("BAckT/0/%d", offs[2])) {
		t.Fatalf("a batch with a stale receipt: %d %q", r.Code, r.Remark)
	}
	if r := batchAck(t, c, faddr, batchOf(group, p["a"], p["b"], p["d"])); r.Code != remoting.Success {
		t.Fatalf("batch ack through a follower: %d %q", r.Code, r.Remark)
	}
	if r := batchAck(t, c, addr, batchOf(group, p["a"])); r.Code != remoting.NoMessage {
		t.Fatalf("a batch ack of a message acknowledged: %d %q", r.Code, r.Remark)
	}
	if code := remoteAck(t, c, addr, group, p["d"]); code != remoting.NoMessage {
		t.Fatalf("ACK_MESSAGE of a message batch-acknowledged: %d", code)
	}
	broker.WaitFor(t, "every replica holding c's receipt only", func() bool {
		for _, n := range tc.Raft.Up() {
			md := n.Group().Metadata()
			if _, ok := md.PopReceipt(group, "BAckT", 0, offs[2]); !ok || md.PopInflight(group, "BAckT", 0) != 1 || md.PopInflight(group, "BAckT", 1) != 0 {
				return false
			}
		}
		return true
	})

	// c visible again: it alone comes back, and a batch of it is honoured.
	remoteChange(t, c, addr, group, p["c"], 0)
	again := popN(t, c, addr, group, "BAckT", time.Minute, 1)
	cm, ok := again["c"]
	if !ok || cm.msg.ReconsumeTimes != 1 {
		t.Fatalf("redelivered %v, want c at reconsume times 1", again)
	}
	if r := batchAck(t, c, addr, batchOf(group, cm)); r.Code != remoting.Success {
		t.Fatalf("batch ack of c: %d %q", r.Code, r.Remark)
	}
	if code, got := remotePop(t, c, addr, group, "BAckT", time.Minute, 0); code != remoting.PollingTimeout || len(got) != 0 {
		t.Fatalf("POP after the acks: %d, %d messages", code, len(got))
	}

	// Refused: another broker's, a retry topic's, no offset, a long group
	// name, a body that does not decode.
	other := batchOf(group, cm)
	other.BrokerName = "broker-b"
	retry := batchOf(group, cm)
	retry.Acks[0].Retry = "1"
	empty := batchOf(group)
	long := batchOf(strings.Repeat("g", 200), cm)
	for what, want := range map[string]struct {
		body *protocol.BatchAckMessageRequestBody
		code int32
	}{
		"another broker's": {other, remoting.NoMessage},
		"a retry topic's":  {retry, remoting.NoMessage},
		"no offset":        {empty, remoting.NoMessage},
		"a long group":     {long, remoting.InvalidParameter},
	} {
		if r := batchAck(t, c, addr, want.body); r.Code != want.code {
			t.Errorf("batch ack of %s: %d %q, want %d", what, r.Code, r.Remark, want.code)
		}
	}
	if r := c.call(t, addr, remoting.BatchAckMessage, map[string]string{}, []byte(`{"acks":[{"c":"g"}]}`)); r.Code != remoting.InvalidParameter {
		t.Errorf("a body without a topic: %d %q", r.Code, r.Remark)
	}
}

// TestACLPopMoreRequests: with the ACL on, PEEK_MESSAGE, NOTIFICATION and
// POLLING_INFO need SUB on their group and topic, as POP_MESSAGE does, and
// BATCH_ACK_MESSAGE SUB on every group and topic of its body.
func TestACLPopMoreRequests(t *testing.T) {
	tc := startACLNode(t)
	popReady(t, tc)
	c := newTestClient(t)
	_, addr, _ := leaderOf(t, tc)
	header := func(group, topic string) map[string]string {
		return map[string]string{"consumerGroup": group, "topic": topic, "queueId": "-1", "maxMsgNums": "1", "pollTime": "0"}
	}
	for _, code := range []int32{remoting.PeekMessage, remoting.Notification, remoting.PollingInfo} {
		name := remoting.RequestCodeName(code)
		wantRefused(t, name+" of a PUB-only topic", signedCall(t, c, addr, code, header("cg_acl", "AclPub"), nil, aclProducer), "AclPub")
		wantRefused(t, name+" of another group", signedCall(t, c, addr, code, header("cg_other", "AclSub"), nil, aclProducer), "cg_other")
		// Allowed: the topic does not exist.
		if r := signedCall(t, c, addr, code, header("cg_acl", "AclSub"), nil, aclProducer); r.Code != remoting.TopicNotExist {
			t.Errorf("%s allowed: %d %q, want TOPIC_NOT_EXIST", name, r.Code, r.Remark)
		}
	}
	body := func(group, topic string) []byte {
		b := protocol.BatchAckMessageRequestBody{Acks: []protocol.BatchAck{{ConsumerGroup: "cg_acl", Topic: "AclSub", Retry: "0", Offsets: []int64{0}},
			{ConsumerGroup: group, Topic: topic, Retry: "0", Offsets: []int64{1}}}}
		out, err := b.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	wantRefused(t, "batch ack naming a PUB-only topic", signedCall(t, c, addr, remoting.BatchAckMessage, map[string]string{}, body("cg_acl", "AclPub"), aclProducer), "AclPub")
	wantRefused(t, "batch ack naming another group", signedCall(t, c, addr, remoting.BatchAckMessage, map[string]string{}, body("cg_other", "AclSub"), aclProducer), "cg_other")
	// Allowed: nothing of it was handed out.
	if r := signedCall(t, c, addr, remoting.BatchAckMessage, map[string]string{}, body("cg_acl", "AclSub"), aclProducer); r.Code != remoting.NoMessage {
		t.Errorf("batch ack allowed: %d %q, want NO_MESSAGE", r.Code, r.Remark)
	}
	if r := signedCall(t, c, addr, remoting.BatchAckMessage, map[string]string{}, body("cg_acl", "AclSub"), auth.Credentials{}); r.Code != remoting.NoPermission {
		t.Errorf("batch ack unsigned: %d %q", r.Code, r.Remark)
	}
}

// TestRemotingPopRestNum: a POP_MESSAGE answer's restNum is what is left
// past the group's POP position once the receive is applied — of the
// queue asked for, or of every readable queue for -1.
func TestRemotingPopRestNum(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	popReady(t, tc)
	createTestTopic(t, tc, "RestT", 2)
	putTestMessages(t, tc, "RestT", 0, "a", "b", "c", "d", "e")
	putTestMessages(t, tc, "RestT", 1, "f", "g")
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t)
	pop := func(queue, max int32) (int, int64) {
		h := protocol.PopMessageRequestHeader{ConsumerGroup: "cg_rest", Topic: "RestT", QueueID: queue, MaxMsgNums: max,
			InvisibleTime: time.Minute.Milliseconds(), BornTime: time.Now().UnixMilli()}
		resp, err := c.Invoke(testCtx(t), addr, h.Request())
		if err != nil {
			t.Fatal(err)
		}
		var rh protocol.PopMessageResponseHeader
		if err := rh.Decode(resp.ExtFields); err != nil {
			t.Fatalf("answer %d %q: %v", resp.Code, resp.Remark, err)
		}
		msgs, err := message.DecodeRecords(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return len(msgs), rh.RestNum
	}
	if n, rest := pop(0, 2); n != 2 || rest != 3 {
		t.Fatalf("pop 2 of queue 0's 5: %d messages, restNum %d, want 2 and 3", n, rest)
	}
	if n, rest := pop(1, 1); n != 1 || rest != 1 {
		t.Fatalf("pop 1 of queue 1's 2: %d messages, restNum %d, want 1 and 1", n, rest)
	}
	if n, rest := pop(-1, 32); n != 4 || rest != 0 {
		t.Fatalf("pop the rest of every queue: %d messages, restNum %d, want 4 and 0", n, rest)
	}
	if n, rest := pop(-1, 32); n != 0 || rest != 0 {
		t.Fatalf("pop of nothing left: %d messages, restNum %d", n, rest)
	}
}
