package broker_test

import (
	"slices"
	"testing"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

func queryOffset(t testing.TB, c *testClient, addr, group, topic string, qid int32) (int32, string) {
	t.Helper()
	resp := c.call(t, addr, remoting.QueryConsumerOffset,
		map[string]string{"consumerGroup": group, "topic": topic, "queueId": itoa(int64(qid)), "bname": "broker-a"}, nil)
	return resp.Code, resp.ExtFields["offset"]
}

// offsetEverywhere reports whether every running node answers want.
func offsetEverywhere(t testing.TB, tc *brokertest.Cluster, c *testClient, group, topic string, qid int32, want string) bool {
	for _, n := range tc.Raft.Up() {
		if tc.Broker(n.ID) == nil {
			return false
		}
		code, off := queryOffset(t, c, tc.Peers[n.ID], group, topic, qid)
		if code != remoting.Success || off != want {
			return false
		}
	}
	return true
}

func TestOffsetsCommitReplicatedAndSurviveFailover(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	createTestTopic(t, tc, "OT", 4)
	putTestMessages(t, tc, "OT", 1, "a", "b", "c")
	_, leaderID := leaderGroup(t, tc)
	leader := tc.Peers[leaderID]
	c := newTestClient(t)
	const group = "cg_off"

	// UPDATE_CONSUMER_OFFSET with flag 0, as the Go client sends it.
	r := c.call(t, leader, remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": "OT", "queueId": "0", "commitOffset": "7", "bname": "broker-a"}, nil)
	if r.Code != remoting.Success {
		t.Fatalf("update: %d %s", r.Code, r.Remark)
	}
	// ... and with the one-way bit: no answer, still applied.
	req := remoting.NewRequest(remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": "OT", "queueId": "2", "commitOffset": "5"}, nil)
	if err := c.InvokeOneway(testCtx(t), leader, req); err != nil {
		t.Fatal(err)
	}
	// The COMMIT_OFFSET bit of a pull.
	pr := c.call(t, leader, remoting.PullMessage, func() map[string]string {
		e := pullExt(group, "OT", 1, 0, broker.PullFlagCommitOffset, 0, "")
		e["commitOffset"] = "2"
		return e
	}(), nil)
	if pr.Code != remoting.Success {
		t.Fatalf("pull: %d", pr.Code)
	}
	// A follower forwards what it is sent to the leader.
	var followerID string
	for id := range tc.Peers {
		if id != leaderID {
			followerID = id
			break
		}
	}
	c.call(t, tc.Peers[followerID], remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": "OT", "queueId": "3", "commitOffset": "11"}, nil)

	want := map[int32]string{0: "7", 1: "2", 2: "5", 3: "11"}
	check := func(stage string) {
		t.Helper()
		for qid, off := range want {
			broker.WaitFor(t, stage+": offset of queue "+itoa(int64(qid))+" on every node", func() bool {
				return offsetEverywhere(t, tc, c, group, "OT", qid, off)
			})
		}
	}
	check("committed")

	tc.Kill(leaderID)
	if _, err := tc.Raft.Leader(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	check("after the leader was killed")
	tc.Restart(leaderID)
	check("after the old leader restarted")
}

func TestQueryOffsetOfNewGroup(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	createTestTopic(t, tc, "NG", 2)
	putTestMessages(t, tc, "NG", 0, "a")
	c := newTestClient(t)
	for _, tt := range []struct {
		name  string
		topic string
		qid   int32
	}{
		{"young queue with messages", "NG", 0},
		{"empty queue", "NG", 1},
		{"unknown topic", "Nope", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Nothing deleted from the queue yet: read from its first message.
			if code, off := queryOffset(t, c, addr, "fresh", tt.topic, tt.qid); code != remoting.Success || off != "0" {
				t.Fatalf("code %d offset %q", code, off)
			}
		})
	}
	r := c.call(t, addr, remoting.QueryConsumerOffset, map[string]string{"topic": "NG", "queueId": "0"}, nil)
	if r.Code != remoting.SystemError {
		t.Fatalf("missing group: %d", r.Code)
	}
}

func TestQueueOffsetQueries(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	b := tc.Broker(tc.Raft.Nodes[0].ID)
	createTestTopic(t, tc, "QO", 2)
	putTestMessages(t, tc, "QO", 0, "a", "b", "c")
	st := b.GroupForTest().Store()
	first, err := st.MessageAt(mustPhy(t, b, "QO", 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	last, err := st.MessageAt(mustPhy(t, b, "QO", 0, 2))
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t)
	q := func(topic, qid string) map[string]string {
		return map[string]string{"topic": topic, "queueId": qid, "bname": "broker-a"}
	}
	withTS := func(topic string, ts int64) map[string]string {
		m := q(topic, "0")
		m["timestamp"] = itoa(ts)
		return m
	}
	for _, tt := range []struct {
		name string
		code int32
		ext  map[string]string
		key  string
		want string
	}{
		{"max", remoting.GetMaxOffset, q("QO", "0"), "offset", "3"},
		{"max of empty queue", remoting.GetMaxOffset, q("QO", "1"), "offset", "0"},
		{"max of unknown topic", remoting.GetMaxOffset, q("Nope", "0"), "offset", "0"},
		{"min", remoting.GetMinOffset, q("QO", "0"), "offset", "0"},
		{"search before all", remoting.SearchOffsetByTimestamp, withTS("QO", 0), "offset", "0"},
		{"search at the first", remoting.SearchOffsetByTimestamp, withTS("QO", first.StoreTimestamp), "offset", "0"},
		{"search after all", remoting.SearchOffsetByTimestamp, withTS("QO", last.StoreTimestamp+1), "offset", "3"},
		{"search unknown topic", remoting.SearchOffsetByTimestamp, withTS("Nope", 1), "offset", "0"},
		{"search without timestamp", remoting.SearchOffsetByTimestamp, q("QO", "0"), "offset", "0"},
		{"earliest", remoting.GetEarliestMsgStoretime, q("QO", "0"), "timestamp", itoa(first.StoreTimestamp)},
		{"earliest of empty queue", remoting.GetEarliestMsgStoretime, q("QO", "1"), "timestamp", "-1"},
		{"bad queue id", remoting.GetMaxOffset, q("QO", "x"), "offset", "0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := c.call(t, addr, tt.code, tt.ext, nil)
			if got, ok := r.ExtFields[tt.key]; !ok || got != tt.want {
				t.Fatalf("%s = %q (present %v, code %d %s), want %q", tt.key, got, ok, r.Code, r.Remark, tt.want)
			}
		})
	}
}

func mustPhy(t testing.TB, b *broker.Broker, topic string, qid int32, off int64) int64 {
	t.Helper()
	res, err := b.GroupForTest().Store().Get(topic, qid, off, 1, nil)
	if err != nil || len(res.Records) != 1 {
		t.Fatalf("get %s/%d@%d: %v", topic, qid, off, err)
	}
	defer res.Release()
	return res.Records[0].PhysicalOffset
}

// TestQueryTopicConsumeByWho: QUERY_TOPIC_CONSUME_BY_WHO (300) names the
// groups whose consumers subscribe to the topic and the groups that have
// committed an offset of it, once each, sorted; another topic has none.
func TestQueryTopicConsumeByWho(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	createTestTopic(t, tc, "CT", 2)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t)
	if r := c.call(t, addr, remoting.HeartBeat, nil, heartbeatBody("10.0.0.1@1", "cg_sub", map[string]string{"CT": "*"})); r.Code != remoting.Success {
		t.Fatalf("heartbeat: %d %s", r.Code, r.Remark)
	}
	for _, g := range []string{"cg_off", "cg_sub"} {
		if r := c.call(t, addr, remoting.UpdateConsumerOffset, map[string]string{
			"consumerGroup": g, "topic": "CT", "queueId": "1", "commitOffset": "3"}, nil); r.Code != remoting.Success {
			t.Fatalf("update: %d %s", r.Code, r.Remark)
		}
	}
	who := func(topic string) []string {
		t.Helper()
		r := c.call(t, addr, remoting.QueryTopicConsumeByWho, (&protocol.QueryTopicConsumeByWhoRequestHeader{Topic: topic}).Encode(), nil)
		if r.Code != remoting.Success {
			t.Fatalf("query %s: %d %s", topic, r.Code, r.Remark)
		}
		gl, err := protocol.DecodeGroupList(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		return gl.GroupList
	}
	broker.WaitFor(t, "both groups named", func() bool {
		return slices.Equal(who("CT"), []string{"cg_off", "cg_sub"})
	})
	if got := who("Other"); got == nil || len(got) != 0 {
		t.Fatalf("a topic nobody consumes: %#v", got)
	}
	if r := c.call(t, addr, remoting.QueryTopicConsumeByWho, map[string]string{}, nil); r.Code == remoting.Success {
		t.Fatal("a request without a topic was answered")
	}
}

// TestQueryConsumeTimeSpan: QUERY_CONSUME_TIME_SPAN (303) gives per write
// queue the oldest, newest and last consumed store times and the wait of
// the next message; an empty queue is all zeros; an unknown topic is
// TOPIC_NOT_EXIST.
func TestQueryConsumeTimeSpan(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	createTestTopic(t, tc, "ST", 2)
	putTestMessages(t, tc, "ST", 0, "a", "b", "c")
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t)
	if r := c.call(t, addr, remoting.UpdateConsumerOffset, map[string]string{
		"consumerGroup": "cg_done", "topic": "ST", "queueId": "0", "commitOffset": "3"}, nil); r.Code != remoting.Success {
		t.Fatalf("update: %d %s", r.Code, r.Remark)
	}
	broker.WaitFor(t, "the committed offset applied", func() bool {
		code, off := queryOffset(t, c, addr, "cg_done", "ST", 0)
		return code == remoting.Success && off == "3"
	})
	spans := func(group string) []protocol.QueueTimeSpan {
		t.Helper()
		r := c.call(t, addr, remoting.QueryConsumeTimeSpan, (&protocol.QueryConsumeTimeSpanRequestHeader{Topic: "ST", Group: group}).Encode(), nil)
		if r.Code != remoting.Success {
			t.Fatalf("query: %d %s", r.Code, r.Remark)
		}
		body, err := protocol.DecodeQueryConsumeTimeSpanBody(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		if len(body.ConsumeTimeSpanSet) != 2 {
			t.Fatalf("%d queues", len(body.ConsumeTimeSpanSet))
		}
		return body.ConsumeTimeSpanSet
	}
	done := spans("cg_done")
	q0, q1 := done[0], done[1]
	if q0.MessageQueue.QueueID != 0 || q0.MinTimeStamp <= 0 || q0.MaxTimeStamp < q0.MinTimeStamp ||
		q0.ConsumeTimeStamp != q0.MaxTimeStamp || q0.DelayTime != 0 {
		t.Fatalf("queue 0 consumed to its end: %+v", q0)
	}
	if q1 != (protocol.QueueTimeSpan{MessageQueue: protocol.MessageQueue{Topic: "ST", BrokerName: q0.MessageQueue.BrokerName, QueueID: 1}}) {
		t.Fatalf("empty queue 1: %+v", q1)
	}
	if fresh := spans("cg_fresh")[0]; fresh.ConsumeTimeStamp != fresh.MinTimeStamp || fresh.DelayTime < 0 {
		t.Fatalf("queue 0 of a group that consumed nothing: %+v", fresh)
	}
	if r := c.call(t, addr, remoting.QueryConsumeTimeSpan, (&protocol.QueryConsumeTimeSpanRequestHeader{Topic: "Nope", Group: "cg_done"}).Encode(), nil); r.Code != remoting.TopicNotExist {
		t.Fatalf("unknown topic: %d %s", r.Code, r.Remark)
	}
}

// TestCloneGroupOffset: CLONE_GROUP_OFFSET (314) makes the source group's
// committed offsets the destination's, on the leader through raft (a
// follower forwards it); with no topic, every topic the source has
// offsets of; offline=false skips a topic the source's online consumers
// do not subscribe to.
func TestCloneGroupOffset(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	createTestTopic(t, tc, "C1", 2)
	createTestTopic(t, tc, "C2", 1)
	_, leaderID := leaderGroup(t, tc)
	leader := tc.Peers[leaderID]
	c := newTestClient(t)
	for _, o := range []struct {
		topic, qid, off string
	}{{"C1", "0", "3"}, {"C1", "1", "5"}, {"C2", "0", "7"}} {
		if r := c.call(t, leader, remoting.UpdateConsumerOffset, map[string]string{
			"consumerGroup": "cg_src", "topic": o.topic, "queueId": o.qid, "commitOffset": o.off}, nil); r.Code != remoting.Success {
			t.Fatalf("update: %d %s", r.Code, r.Remark)
		}
	}
	broker.WaitFor(t, "the source's offsets applied", func() bool {
		code, off := queryOffset(t, c, leader, "cg_src", "C2", 0)
		return code == remoting.Success && off == "7"
	})
	var follower string
	for id, addr := range tc.Peers {
		if id != leaderID {
			follower = addr
			break
		}
	}
	clone := func(addr string, h protocol.CloneGroupOffsetRequestHeader) {
		t.Helper()
		if r := c.call(t, addr, remoting.CloneGroupOffset, h.Encode(), nil); r.Code != remoting.Success {
			t.Fatalf("clone %+v: %d %s", h, r.Code, r.Remark)
		}
	}
	clone(follower, protocol.CloneGroupOffsetRequestHeader{SrcGroup: "cg_src", DestGroup: "cg_one", Topic: "C1", Offline: true})
	clone(leader, protocol.CloneGroupOffsetRequestHeader{SrcGroup: "cg_src", DestGroup: "cg_all", Offline: true})
	for _, want := range []struct {
		group, topic string
		qid          int32
		off          string
	}{{"cg_one", "C1", 0, "3"}, {"cg_one", "C1", 1, "5"}, {"cg_all", "C1", 1, "5"}, {"cg_all", "C2", 0, "7"}} {
		if code, off := queryOffset(t, c, leader, want.group, want.topic, want.qid); code != remoting.Success || off != want.off {
			t.Fatalf("%s %s/%d: %d %q, want %s", want.group, want.topic, want.qid, code, off, want.off)
		}
	}
	if _, off := queryOffset(t, c, leader, "cg_one", "C2", 0); off == "7" {
		t.Fatal("a clone of one topic copied another")
	}

	// Online: the source's consumers subscribe to C1 only, so C2 is skipped.
	if r := c.call(t, leader, remoting.HeartBeat, nil, heartbeatBody("10.0.0.5@1", "cg_src", map[string]string{"C1": "*"})); r.Code != remoting.Success {
		t.Fatalf("heartbeat: %d %s", r.Code, r.Remark)
	}
	clone(leader, protocol.CloneGroupOffsetRequestHeader{SrcGroup: "cg_src", DestGroup: "cg_online"})
	if code, off := queryOffset(t, c, leader, "cg_online", "C1", 1); code != remoting.Success || off != "5" {
		t.Fatalf("online clone of a subscribed topic: %d %q", code, off)
	}
	if _, off := queryOffset(t, c, leader, "cg_online", "C2", 0); off == "7" {
		t.Fatal("an online clone copied a topic the source does not subscribe to")
	}
}

// TestQueryOffsetSetZeroIfNotFound: a group without an offset, on a queue
// that still starts at 0, reads 0 (4.x's answer) unless the request says
// setZeroIfNotFound=false (RocketMQ 5's clients and proxy): then
// QUERY_NOT_FOUND, so the client starts where its policy says.
func TestQueryOffsetSetZeroIfNotFound(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	createTestTopic(t, tc, "ZT", 1)
	putTestMessages(t, tc, "ZT", 0, "a")
	_, leaderID := leaderGroup(t, tc)
	c := newTestClient(t)
	ext := map[string]string{"consumerGroup": "cg_new", "topic": "ZT", "queueId": "0"}
	if r := c.call(t, tc.Peers[leaderID], remoting.QueryConsumerOffset, ext, nil); r.Code != remoting.Success || r.ExtFields["offset"] != "0" {
		t.Fatalf("without setZeroIfNotFound: %d %v", r.Code, r.ExtFields)
	}
	for v, want := range map[string]int32{"true": remoting.Success, "false": remoting.QueryNotFound} {
		ext["setZeroIfNotFound"] = v
		if r := c.call(t, tc.Peers[leaderID], remoting.QueryConsumerOffset, ext, nil); r.Code != want {
			t.Fatalf("setZeroIfNotFound=%s: %d %q, want %d", v, r.Code, r.Remark, want)
		}
	}
}
