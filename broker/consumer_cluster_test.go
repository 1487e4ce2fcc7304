package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/remoting"
)

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), broker.TestWait)
	t.Cleanup(cancel)
	return ctx
}

// leaderGroup returns the current leader's raft group and node id.
func leaderGroup(t testing.TB, tc *brokertest.Cluster) (*dledger.Group, string) {
	t.Helper()
	n, err := tc.Raft.Leader(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return n.Group(), n.ID
}

// createTestTopic creates topic with queues queues through the leader and
// waits until every running node has applied it.
func createTestTopic(t testing.TB, tc *brokertest.Cluster, topic string, queues int32) {
	t.Helper()
	g, _ := leaderGroup(t, tc)
	cfg := metadata.TopicConfig{TopicName: topic, ReadQueueNums: queues, WriteQueueNums: queues, Perm: 6, TopicFilterType: "SINGLE_TAG"}
	if err := g.ProposeMetadata(testCtx(t), metadata.Op{Kind: metadata.OpPutTopic, Topic: &cfg}); err != nil {
		t.Fatal(err)
	}
	broker.WaitFor(t, "topic on every node", func() bool {
		for _, n := range tc.Raft.Up() {
			if _, ok := n.Group().Metadata().Topic(topic); !ok {
				return false
			}
		}
		return true
	})
}

// putTestMessages writes one message per tag ("" = untagged) to a queue
// through the leader and returns their queue offsets.
func putTestMessages(t testing.TB, tc *brokertest.Cluster, topic string, qid int32, tags ...string) []int64 {
	t.Helper()
	g, _ := leaderGroup(t, tc)
	msgs := make([]*message.Ext, len(tags))
	for i, tag := range tags {
		m := &message.Ext{QueueID: qid, BornTimestamp: time.Now().UnixMilli()}
		m.Topic = topic
		m.Body = fmt.Appendf(nil, "body-%d-%s", i, tag)
		m.Properties = map[string]string{}
		if tag != "" {
			m.Properties[message.PropertyTags] = tag
		}
		msgs[i] = m
	}
	res, err := g.Propose(testCtx(t), msgs)
	if err != nil {
		t.Fatal(err)
	}
	offs := make([]int64, len(res))
	for i, r := range res {
		offs[i] = r.QueueOffset
	}
	return offs
}

// testClient is a remoting client that records the requests brokers send
// it (NOTIFY_CONSUMER_IDS_CHANGED).
type testClient struct {
	*remoting.Client
	mu       sync.Mutex
	notified []string // consumerGroup of each notification
}

func newTestClient(t testing.TB) *testClient {
	tcl := &testClient{}
	tcl.Client = remoting.NewClient(remoting.ClientConfig{
		OnRequest: remoting.HandlerFunc(func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
			if req.Code == remoting.NotifyConsumerIdsChanged {
				tcl.mu.Lock()
				tcl.notified = append(tcl.notified, req.ExtFields["consumerGroup"])
				tcl.mu.Unlock()
			}
			return nil
		}),
	})
	t.Cleanup(func() { _ = tcl.Close() })
	return tcl
}

func (c *testClient) notifications() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.notified)
}

func (c *testClient) call(t testing.TB, addr string, code int32, ext map[string]string, body []byte) *remoting.Command {
	t.Helper()
	resp, err := c.Invoke(testCtx(t), addr, remoting.NewRequest(code, ext, body))
	if err != nil {
		t.Fatalf("request %d to %s: %v", code, addr, err)
	}
	return resp
}

func heartbeatBody(clientID, group string, subs map[string]string) []byte {
	hb := broker.HeartbeatData{ClientID: clientID}
	cd := broker.ConsumerData{GroupName: group, ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET"}
	for topic, expr := range subs {
		cd.SubscriptionDataSet = append(cd.SubscriptionDataSet, broker.SubscriptionData{Topic: topic, SubString: expr, SubVersion: 1795975709349293848, ExpressionType: "TAG"})
	}
	hb.ConsumerDataSet = []broker.ConsumerData{cd}
	b, _ := json.Marshal(hb)
	return b
}

func consumerList(t testing.TB, c *testClient, addr, group string) []string {
	t.Helper()
	resp := c.call(t, addr, remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": group}, nil)
	var body broker.ConsumerListBody
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		t.Fatalf("consumer list body %q: %v", resp.Body, err)
	}
	return body.ConsumerIDList
}

// --- tests -------------------------------------------------------------------------

func TestHeartbeatConsumerListAndNotify(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	const group = "cg_notify"

	// Nobody yet: Java's SYSTEM_ERROR, but always with a list.
	resp := newTestClient(t).call(t, addr, remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": group}, nil)
	if resp.Code != remoting.SystemError || string(resp.Body) != `{"consumerIdList":[]}` {
		t.Fatalf("empty group: code %d body %q", resp.Code, resp.Body)
	}

	a := newTestClient(t)
	if r := a.call(t, addr, remoting.HeartBeat, nil, heartbeatBody("10.0.0.1@1", group, map[string]string{"T": "*"})); r.Code != remoting.Success {
		t.Fatalf("heartbeat: %d %s", r.Code, r.Remark)
	}
	if got := consumerList(t, a, addr, group); !slices.Equal(got, []string{"10.0.0.1@1"}) {
		t.Fatalf("list after A = %v", got)
	}
	// The leader auto-creates the subscription group and its retry topic.
	md := tc.Broker(tc.Raft.Nodes[0].ID).GroupForTest().Metadata()
	broker.WaitFor(t, "subscription group and retry topic", func() bool {
		_, g := md.Group(group)
		rt, r := md.Topic("%RETRY%" + group)
		return g && r && rt.ReadQueueNums == 1 && rt.Perm == 6
	})
	// ... and the name servers learn the retry topic's route.
	broker.WaitFor(t, "retry topic route", func() bool {
		r := a.call(t, tc.NamesrvAddr(), remoting.GetRouteInfoByTopic, map[string]string{"topic": "%RETRY%" + group}, nil)
		return r.Code == remoting.Success
	})

	// B joins: A is told, B is not.
	bcl := newTestClient(t)
	bcl.call(t, addr, remoting.HeartBeat, nil, heartbeatBody("10.0.0.2@2", group, map[string]string{"T": "*"}))
	broker.WaitFor(t, "notification to A", func() bool { return slices.Equal(a.notifications(), []string{group}) })
	if got := consumerList(t, a, addr, group); !slices.Equal(got, []string{"10.0.0.1@1", "10.0.0.2@2"}) {
		t.Fatalf("list after B = %v", got)
	}
	if n := bcl.notifications(); len(n) != 0 {
		t.Fatalf("joiner notified: %v", n)
	}
	// A heartbeat from a known client changes nothing.
	bcl.call(t, addr, remoting.HeartBeat, nil, heartbeatBody("10.0.0.2@2", group, map[string]string{"T": "*"}))

	// B's connection closes: B leaves the list and A is told again.
	if err := bcl.Close(); err != nil {
		t.Fatal(err)
	}
	broker.WaitFor(t, "B removed", func() bool { return slices.Equal(consumerList(t, a, addr, group), []string{"10.0.0.1@1"}) })
	broker.WaitFor(t, "second notification to A", func() bool { return len(a.notifications()) == 2 })

	// UNREGISTER_CLIENT removes A.
	if r := a.call(t, addr, remoting.UnregisterClient, map[string]string{"clientID": "10.0.0.1@1", "consumerGroup": group}, nil); r.Code != remoting.Success {
		t.Fatalf("unregister: %d", r.Code)
	}
	if got := consumerList(t, a, addr, group); len(got) != 0 {
		t.Fatalf("list after unregister = %v", got)
	}
}

func TestHeartbeatRejectsBadBodies(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t)
	for _, tt := range []struct {
		name string
		body string
		code int32
	}{
		{"not json", `{`, remoting.SystemError},
		{"no client id", `{"consumerDataSet":[]}`, remoting.SystemError},
		{"bad group", `{"clientID":"x","consumerDataSet":[{"groupName":"a b"}]}`, remoting.InvalidParameter},
		{"producer only", `{"clientID":"x","producerDataSet":[{"groupName":"pg"}]}`, remoting.Success},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if r := c.call(t, addr, remoting.HeartBeat, nil, []byte(tt.body)); r.Code != tt.code {
				t.Fatalf("code %d (%s), want %d", r.Code, r.Remark, tt.code)
			}
		})
	}
	b := tc.Broker(tc.Raft.Nodes[0].ID)
	if conns := b.ProducerConnsForTest("pg"); len(conns) != 1 {
		t.Fatalf("producer conns = %d", len(conns))
	}
}

// manualClock is an injectable Config.Clock.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestClientExpiry(t *testing.T) {
	clock := &manualClock{now: time.Unix(1_700_000_000, 0)}
	tc := brokertest.StartNode(t, func(_ int, c *broker.Config) { c.Clock = clock.Now })
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	b := tc.Broker(tc.Raft.Nodes[0].ID)
	a, c := newTestClient(t), newTestClient(t)
	a.call(t, addr, remoting.HeartBeat, nil, heartbeatBody("A@1", "cg_exp", map[string]string{"T": "*"}))
	clock.Advance(100 * time.Second)
	c.call(t, addr, remoting.HeartBeat, nil, heartbeatBody("C@1", "cg_exp", map[string]string{"T": "*"}))
	broker.WaitFor(t, "A told of C", func() bool { return len(a.notifications()) == 1 })

	clock.Advance(21 * time.Second) // A silent for 121 s, C for 21 s
	if left := b.ExpireConsumersForTest(clock.Now()); !slices.Equal(left, []string{"cg_exp"}) {
		t.Fatalf("expired groups = %v", left)
	}
	if got := b.ConsumerClientIDsForTest("cg_exp"); !slices.Equal(got, []string{"C@1"}) {
		t.Fatalf("after expiry = %v", got)
	}
	b.NotifyGroupsForTest([]string{"cg_exp"}, "")
	broker.WaitFor(t, "C told of A's expiry", func() bool { return len(c.notifications()) == 1 })
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestRelayToConsumer: GET_CONSUMER_RUNNING_INFO (307) and
// CONSUME_MESSAGE_DIRECTLY (309) reach the consumer named by group and
// client id through its own connection, and its answer comes back; 309
// carries the stored record of the message id. A consumer the node does
// not hold, or one that does not answer, is SYSTEM_ERROR.
func TestRelayToConsumer(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	createTestTopic(t, tc, "RT", 1)
	putTestMessages(t, tc, "RT", 0, "direct")
	type seen struct {
		code int32
		ext  map[string]string
		body []byte
	}
	got := make(chan seen, 4)
	consumer := remoting.NewClient(remoting.ClientConfig{
		OnRequest: remoting.HandlerFunc(func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
			if req.Code != remoting.GetConsumerRunningInfo && req.Code != remoting.ConsumeMessageDirectly {
				return nil // NOTIFY_CONSUMER_IDS_CHANGED and the like
			}
			got <- seen{req.Code, req.ExtFields, req.Body}
			if req.ExtFields["clientId"] == "silent@1" {
				return nil
			}
			resp := remoting.NewResponse(req, remoting.Success, "")
			resp.Body = []byte(`{"properties":{"consumeType":"CONSUME_PASSIVELY"}}`)
			return resp
		}),
	})
	t.Cleanup(func() { _ = consumer.Close() })
	for _, id := range []string{"10.0.0.9@1", "silent@1"} {
		resp, err := consumer.Invoke(testCtx(t), addr, remoting.NewRequest(remoting.HeartBeat, nil, heartbeatBody(id, "cg_relay", map[string]string{"RT": "*"})))
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("heartbeat %s: %v %v", id, resp, err)
		}
	}
	admin := newTestClient(t)
	r := admin.call(t, addr, remoting.GetConsumerRunningInfo, map[string]string{"consumerGroup": "cg_relay", "clientId": "10.0.0.9@1", "jstackEnable": "false"}, nil)
	if r.Code != remoting.Success || !strings.Contains(string(r.Body), "CONSUME_PASSIVELY") {
		t.Fatalf("running info: %d %q %q", r.Code, r.Remark, r.Body)
	}
	if s := <-got; s.code != remoting.GetConsumerRunningInfo || s.ext["jstackEnable"] != "false" {
		t.Fatalf("the consumer was asked %+v", s)
	}

	// 309 with the stored message's offset id.
	qr := admin.call(t, addr, remoting.PullMessage, pullExt("cg_relay", "RT", 0, 0, broker.PullFlagSubscription, 0, "*"), nil)
	msgs, _ := decodePull(t, qr)
	if len(msgs) != 1 {
		t.Fatalf("pulled %d messages", len(msgs))
	}
	id := msgs[0].OffsetMsgID()
	r = admin.call(t, addr, remoting.ConsumeMessageDirectly, map[string]string{"consumerGroup": "cg_relay", "clientId": "10.0.0.9@1", "msgId": id}, nil)
	if r.Code != remoting.Success {
		t.Fatalf("consume directly: %d %q", r.Code, r.Remark)
	}
	s := <-got
	m, _, err := message.DecodeRecord(s.body)
	if s.code != remoting.ConsumeMessageDirectly || err != nil || string(m.Body) != string(msgs[0].Body) || s.ext["brokerName"] == "" {
		t.Fatalf("the consumer was sent code %d ext %v, record %v %v", s.code, s.ext, m, err)
	}

	// Not held here; held but silent.
	r = admin.call(t, addr, remoting.GetConsumerRunningInfo, map[string]string{"consumerGroup": "cg_relay", "clientId": "nobody@1"}, nil)
	if r.Code != remoting.SystemError || !strings.Contains(r.Remark, "not online") {
		t.Fatalf("unknown consumer: %d %q", r.Code, r.Remark)
	}
	r = admin.call(t, addr, remoting.GetConsumerRunningInfo, map[string]string{"consumerGroup": "cg_relay", "clientId": "silent@1"}, nil)
	if r.Code != remoting.SystemError || !strings.Contains(r.Remark, "silent@1") {
		t.Fatalf("silent consumer: %d %q", r.Code, r.Remark)
	}
}
