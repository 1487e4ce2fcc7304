package broker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/remoting"
)

func pullExt(group, topic string, qid int32, offset int64, sysFlag int32, suspendMillis int64, sub string) map[string]string {
	h := broker.PullHeader{
		ConsumerGroup: group, Topic: topic, QueueID: qid, QueueOffset: offset, MaxMsgNums: 32,
		SysFlag: sysFlag, SuspendTimeoutMillis: suspendMillis, Subscription: sub, ExpressionType: "TAG",
	}
	return h.Encode()
}

// decodePull checks a pull answer's ext and decodes its body.
func decodePull(t testing.TB, resp *remoting.Command) ([]*message.Ext, int64) {
	t.Helper()
	for _, k := range []string{"nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId"} {
		if _, ok := resp.ExtFields[k]; !ok {
			t.Fatalf("pull answer %d lacks ext %s: %v", resp.Code, k, resp.ExtFields)
		}
	}
	next, err := remoting.ExtInt(resp.ExtFields, "nextBeginOffset")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := message.DecodeRecords(resp.Body)
	if err != nil {
		t.Fatalf("pull body: %v", err)
	}
	return msgs, next
}

func tagsOf(msgs []*message.Ext) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Tags()
	}
	return out
}

func TestPullStatuses(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	createTestTopic(t, tc, "PT", 2)
	putTestMessages(t, tc, "PT", 0, "a", "b", "c")
	c := newTestClient(t)
	for _, tt := range []struct {
		name     string
		ext      map[string]string
		code     int32
		next     int64
		messages int
	}{
		{"found", pullExt("g", "PT", 0, 0, 0, 0, ""), remoting.Success, 3, 3},
		{"found from the middle", pullExt("g", "PT", 0, 2, 0, 0, ""), remoting.Success, 3, 1},
		{"caught up", pullExt("g", "PT", 0, 3, 0, 0, ""), remoting.PullNotFound, 3, 0},
		{"empty queue at 0", pullExt("g", "PT", 1, 0, 0, 0, ""), remoting.PullNotFound, 0, 0},
		{"empty queue past 0", pullExt("g", "PT", 1, 5, 0, 0, ""), remoting.PullOffsetMoved, 0, 0},
		{"overflow badly", pullExt("g", "PT", 0, 10, 0, 0, ""), remoting.PullOffsetMoved, 3, 0},
		{"unknown topic", pullExt("g", "NoSuchTopic", 0, 0, 0, 0, ""), remoting.TopicNotExist, -1, 0},
		{"queue out of range", pullExt("g", "PT", 7, 0, 0, 0, ""), remoting.InvalidParameter, -1, 0},
		{"unknown expression type", func() map[string]string {
			e := pullExt("g", "PT", 0, 0, broker.PullFlagSubscription, 0, "a > 1")
			e["expressionType"] = "XPATH"
			return e
		}(), remoting.SystemError, -1, 0},
		{"missing field", map[string]string{"topic": "PT"}, remoting.SystemError, -1, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := c.call(t, addr, remoting.PullMessage, tt.ext, nil)
			if resp.Code != tt.code {
				t.Fatalf("code %d (%s), want %d", resp.Code, resp.Remark, tt.code)
			}
			if tt.next < 0 {
				return
			}
			msgs, next := decodePull(t, resp)
			if next != tt.next || len(msgs) != tt.messages {
				t.Fatalf("next %d, %d messages; want %d, %d", next, len(msgs), tt.next, tt.messages)
			}
			if resp.ExtFields["maxOffset"] != "3" && tt.ext["queueId"] == "0" {
				t.Fatalf("maxOffset %s", resp.ExtFields["maxOffset"])
			}
		})
	}
}

// pullAsync sends a pull and delivers its answer (nil on a transport
// error) on the returned channel.
func pullAsync(t testing.TB, c *testClient, addr string, ext map[string]string) <-chan *remoting.Command {
	t.Helper()
	ch := make(chan *remoting.Command, 1)
	ctx, cancel := context.WithTimeout(context.Background(), broker.TestWait)
	err := c.InvokeAsync(ctx, addr, remoting.NewRequest(remoting.PullMessage, ext, nil), func(r *remoting.Command, err error) {
		cancel()
		if err != nil {
			r = nil // the tests that expect an answer fail on nil
		}
		ch <- r
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return ch
}

// TestLitePull: LITE_PULL_MESSAGE (361), the Java lite pull consumer's
// pull with its own subscription, is served as a pull.
func TestLitePull(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	createTestTopic(t, tc, "LT", 1)
	putTestMessages(t, tc, "LT", 0, "a", "b")
	resp := newTestClient(t).call(t, addr, remoting.LitePullMessage, pullExt("lite", "LT", 0, 0, broker.PullFlagSubscription, 0, "*"), nil)
	if resp.Code != remoting.Success {
		t.Fatalf("lite pull: %d %s", resp.Code, resp.Remark)
	}
	if msgs, next := decodePull(t, resp); len(msgs) != 2 || next != 2 {
		t.Fatalf("lite pull: %d messages, next %d", len(msgs), next)
	}
}

func TestPullLongPollWokenByMessage(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	b := tc.Broker(tc.Raft.Nodes[0].ID)
	createTestTopic(t, tc, "LP", 1)
	putTestMessages(t, tc, "LP", 0, "old")
	c := newTestClient(t)

	ch := pullAsync(t, c, addr, pullExt("g", "LP", 0, 1, broker.PullFlagSuspend, 15000, ""))
	broker.WaitFor(t, "pull held", func() bool { return b.HeldPullsForTest() == 1 })
	select {
	case r := <-ch:
		t.Fatalf("answered before any new message: %d", r.Code)
	default:
	}
	putTestMessages(t, tc, "LP", 0, "new")
	resp := <-ch
	if resp == nil || resp.Code != remoting.Success {
		t.Fatalf("woken pull: %+v", resp)
	}
	msgs, next := decodePull(t, resp)
	if !slices.Equal(tagsOf(msgs), []string{"new"}) || next != 2 {
		t.Fatalf("got %v next %d", tagsOf(msgs), next)
	}
	if b.HeldPullsForTest() != 0 {
		t.Fatal("pull still held")
	}
}

func TestPullLongPollTimeout(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	createTestTopic(t, tc, "LT", 1)
	c := newTestClient(t)
	const hold = 300 * time.Millisecond
	for _, offset := range []int64{0, 0} { // empty queue at 0, twice: holds are reusable
		start := time.Now()
		resp := <-pullAsync(t, c, addr, pullExt("g", "LT", 0, offset, broker.PullFlagSuspend, hold.Milliseconds(), ""))
		if el := time.Since(start); el < hold {
			t.Fatalf("answered after %v, before the suspend time %v", el, hold)
		}
		if resp == nil || resp.Code != remoting.PullNotFound {
			t.Fatalf("timeout answer %+v", resp)
		}
		if _, next := decodePull(t, resp); next != offset {
			t.Fatalf("next %d", next)
		}
	}
}

func TestPullHeldReleasedOnClose(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	b := tc.Broker(tc.Raft.Nodes[0].ID)
	createTestTopic(t, tc, "LC", 1)
	c := newTestClient(t)
	ch := pullAsync(t, c, addr, pullExt("g", "LC", 0, 0, broker.PullFlagSuspend, 15000, ""))
	broker.WaitFor(t, "pull held", func() bool { return b.HeldPullsForTest() == 1 })
	if err := b.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if resp := <-ch; resp == nil || resp.Code != remoting.PullNotFound {
		t.Fatalf("answer on close: %+v", resp)
	}
}

func TestPullDroppedWithConnection(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	b := tc.Broker(tc.Raft.Nodes[0].ID)
	createTestTopic(t, tc, "LD", 1)
	c := newTestClient(t)
	_ = pullAsync(t, c, addr, pullExt("g", "LD", 0, 0, broker.PullFlagSuspend, 15000, ""))
	broker.WaitFor(t, "pull held", func() bool { return b.HeldPullsForTest() == 1 })
	_ = c.Close()
	broker.WaitFor(t, "held pull dropped", func() bool { return b.HeldPullsForTest() == 0 })
}

func TestPullTagFilter(t *testing.T) {
	// "Aa" and "BB" share Java's hash code: the store's hash filter lets BB
	// through for a subscription to Aa, and the exact check must drop it.
	if message.TagsHashCode("Aa") != message.TagsHashCode("BB") {
		t.Fatal("test tags do not collide")
	}
	tc := brokertest.StartNode(t, nil)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	b := tc.Broker(tc.Raft.Nodes[0].ID)
	createTestTopic(t, tc, "TF", 1)
	putTestMessages(t, tc, "TF", 0, "TagA", "BB", "TagB", "", "TagC", "Aa", "TagA")
	c := newTestClient(t)

	t.Run("header subscription", func(t *testing.T) {
		resp := c.call(t, addr, remoting.PullMessage, pullExt("g", "TF", 0, 0, broker.PullFlagSubscription, 0, "TagA || TagB || Aa"), nil)
		msgs, next := decodePull(t, resp)
		if resp.Code != remoting.Success || !slices.Equal(tagsOf(msgs), []string{"TagA", "TagB", "Aa", "TagA"}) || next != 7 {
			t.Fatalf("code %d tags %v next %d", resp.Code, tagsOf(msgs), next)
		}
	})
	t.Run("heartbeat subscription", func(t *testing.T) {
		c.call(t, addr, remoting.HeartBeat, nil, heartbeatBody("c@1", "g_tf", map[string]string{"TF": "Aa"}))
		resp := c.call(t, addr, remoting.PullMessage, pullExt("g_tf", "TF", 0, 0, 0, 0, ""), nil)
		msgs, next := decodePull(t, resp)
		if resp.Code != remoting.Success || !slices.Equal(tagsOf(msgs), []string{"Aa"}) || next != 7 {
			t.Fatalf("code %d tags %v next %d", resp.Code, tagsOf(msgs), next)
		}
	})
	t.Run("no heartbeat means all", func(t *testing.T) {
		resp := c.call(t, addr, remoting.PullMessage, pullExt("g_none", "TF", 0, 0, 0, 0, ""), nil)
		if msgs, _ := decodePull(t, resp); len(msgs) != 7 {
			t.Fatalf("%d messages", len(msgs))
		}
	})
	t.Run("only collisions left", func(t *testing.T) {
		// From offset 1 with "Aa": BB (collides) at 1 is dropped, Aa at 5 found.
		resp := c.call(t, addr, remoting.PullMessage, pullExt("g", "TF", 0, 1, broker.PullFlagSubscription, 0, "Aa"), nil)
		msgs, next := decodePull(t, resp)
		if !slices.Equal(tagsOf(msgs), []string{"Aa"}) || next != 7 {
			t.Fatalf("tags %v next %d", tagsOf(msgs), next)
		}
	})
	t.Run("nothing matches, no suspend", func(t *testing.T) {
		resp := c.call(t, addr, remoting.PullMessage, pullExt("g", "TF", 0, 0, broker.PullFlagSubscription, 0, "TagZ"), nil)
		if msgs, next := decodePull(t, resp); resp.Code != remoting.PullRetryImmediately || len(msgs) != 0 || next != 7 {
			t.Fatalf("code %d next %d", resp.Code, next)
		}
	})
	t.Run("nothing matches, held, woken by a match", func(t *testing.T) {
		ch := pullAsync(t, c, addr, pullExt("g", "TF", 0, 0, broker.PullFlagSubscription|broker.PullFlagSuspend, 15000, "TagZ"))
		broker.WaitFor(t, "pull held", func() bool { return b.HeldPullsForTest() == 1 })
		putTestMessages(t, tc, "TF", 0, "TagY") // no match: held again, past it
		broker.WaitFor(t, "pull re-held past TagY", func() bool {
			for _, off := range b.HeldPullOffsetsForTest("TF", 0) {
				return off == 8
			}
			return false
		})
		putTestMessages(t, tc, "TF", 0, "TagZ")
		resp := <-ch
		msgs, next := decodePull(t, resp)
		if resp.Code != remoting.Success || !slices.Equal(tagsOf(msgs), []string{"TagZ"}) || next != 9 {
			t.Fatalf("code %d tags %v next %d", resp.Code, tagsOf(msgs), next)
		}
	})
}

func TestPullFromFollower(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	createTestTopic(t, tc, "PF", 1)
	putTestMessages(t, tc, "PF", 0, "x", "y")
	_, leaderID := leaderGroup(t, tc)
	var follower string
	for id, a := range tc.Peers {
		if id != leaderID {
			follower = a
			broker.WaitFor(t, "follower applied", func() bool {
				m, _ := messagestore.Of(tc.Raft.Node(id).Group()).MaxOffset("PF", 0)
				return m == 2
			})
			break
		}
	}
	c := newTestClient(t)
	resp := c.call(t, follower, remoting.PullMessage, pullExt("g", "PF", 0, 0, 0, 0, ""), nil)
	if msgs, next := decodePull(t, resp); resp.Code != remoting.Success || len(msgs) != 2 || next != 2 {
		t.Fatalf("code %d, %d messages, next %d", resp.Code, len(msgs), next)
	}
	// Past the follower's end: it keeps the offset and sends the client to
	// the leader instead of moving it.
	resp = c.call(t, follower, remoting.PullMessage, pullExt("g", "PF", 0, 9, 0, 0, ""), nil)
	if _, next := decodePull(t, resp); resp.Code != remoting.PullRetryImmediately || next != 9 || resp.ExtFields["suggestWhichBrokerId"] != "0" {
		t.Fatalf("code %d next %d", resp.Code, next)
	}
}

func BenchmarkPullFound(b *testing.B) {
	tc := brokertest.StartNode(b, nil)
	addr, err := tc.LeaderAddr(testCtx(b))
	if err != nil {
		b.Fatal(err)
	}
	createTestTopic(b, tc, "BP", 1)
	tags := make([]string, 32)
	for i := range tags {
		tags[i] = "TagA"
	}
	putTestMessages(b, tc, "BP", 0, tags...)
	c := newTestClient(b)
	ext := pullExt("g", "BP", 0, 0, broker.PullFlagSubscription, 0, "TagA || TagB")
	req := remoting.NewRequest(remoting.PullMessage, ext, nil)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		resp, err := c.Invoke(ctx, addr, req)
		if err != nil || resp.Code != remoting.Success {
			b.Fatal(err, resp)
		}
	}
}

// TestServeLocalPullIsNotHeld: an in-process caller's pull (ServeLocal,
// no connection) that asks to be held at the end of its queue is
// answered at once, PULL_NOT_FOUND: nothing could answer it later. Only
// a caller that waits for the answer (ServeLocalWait) has its pulls held;
// ServeLocal's contract, answer before returning, is unchanged.
func TestServeLocalPullIsNotHeld(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	createTestTopic(t, tc, "LocalPullT", 1)
	putTestMessages(t, tc, "LocalPullT", 0, "a")
	id, _, _ := leaderOf(t, tc)
	req := remoting.NewRequest(remoting.PullMessage,
		pullExt("cg_local", "LocalPullT", 0, 1, broker.PullFlagSuspend|broker.PullFlagSubscription, 20_000, "*"), nil)
	resp := tc.Broker(id).ServeLocal(testCtx(t), netipLoopback, req)
	if resp == nil || resp.Code != remoting.PullNotFound {
		t.Fatalf("a held local pull answered %+v", resp)
	}
	if n := tc.Broker(id).HeldPulls(); n != 0 {
		t.Fatalf("%d pulls held after ServeLocal", n)
	}
}

// TestServeLocalWaitHoldsPull: an in-process caller that waits for the
// answer (ServeLocalWait) has its pull at the end of the queue held, as a
// remoting pull is: a message sent to the queue answers it with that
// message; its suspend timeout answers it PULL_NOT_FOUND; the end of the
// caller's context drops the hold (none left held) and answers
// PULL_NOT_FOUND at the offset it was held at; and a pull that finds
// messages is answered at once.
func TestServeLocalWaitHoldsPull(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	createTestTopic(t, tc, "LocalWaitT", 1)
	putTestMessages(t, tc, "LocalWaitT", 0, "a")
	id, _, _ := leaderOf(t, tc)
	b := tc.Broker(id)
	pull := func(ctx context.Context, offset, suspendMillis int64) *remoting.Command {
		req := remoting.NewRequest(remoting.PullMessage,
			pullExt("cg_local_wait", "LocalWaitT", 0, offset, broker.PullFlagSuspend|broker.PullFlagSubscription, suspendMillis, "*"), nil)
		return b.ServeLocalWait(ctx, netipLoopback, req)
	}

	// Found at once.
	if resp := pull(testCtx(t), 0, 20_000); resp == nil || resp.Code != remoting.Success {
		t.Fatalf("a pull of a stored message: %+v", resp)
	}

	// Held, then answered by a message.
	done := make(chan *remoting.Command, 1)
	go func() { done <- pull(testCtx(t), 1, 20_000) }()
	broker.WaitFor(t, "the pull held", func() bool { return b.HeldPulls() == 1 })
	putTestMessages(t, tc, "LocalWaitT", 0, "b")
	resp := <-done
	if resp == nil || resp.Code != remoting.Success {
		t.Fatalf("a held pull answered %+v", resp)
	}
	msgs, next := decodePull(t, resp)
	if len(msgs) != 1 || msgs[0].Tags() != "b" || next != 2 {
		t.Fatalf("a held pull answered %v, next %d", tagsOf(msgs), next)
	}
	if n := b.HeldPulls(); n != 0 {
		t.Fatalf("%d pulls held after the answer", n)
	}

	// Held until its suspend timeout.
	start := time.Now()
	if resp := pull(testCtx(t), 2, 200); resp == nil || resp.Code != remoting.PullNotFound {
		t.Fatalf("a held pull at its timeout: %+v", resp)
	} else if _, next := decodePull(t, resp); next != 2 {
		t.Fatalf("a held pull at its timeout: next %d", next)
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Fatalf("a hold of 200ms answered after %v", took)
	}

	// The caller goes: the hold is dropped.
	ctx, cancel := context.WithCancel(testCtx(t))
	go func() { done <- pull(ctx, 2, 20_000) }()
	broker.WaitFor(t, "the pull held", func() bool { return b.HeldPulls() == 1 })
	cancel()
	resp = <-done
	if resp == nil || resp.Code != remoting.PullNotFound {
		t.Fatalf("a cancelled pull answered %+v", resp)
	}
	if _, next := decodePull(t, resp); next != 2 {
		t.Fatalf("a cancelled pull: next %d", next)
	}
	if n := b.HeldPulls(); n != 0 {
		t.Fatalf("%d pulls held after the caller went", n)
	}
	// A message that comes later finds nobody to answer.
	putTestMessages(t, tc, "LocalWaitT", 0, "c")
	if resp := pull(testCtx(t), 2, 20_000); resp == nil || resp.Code != remoting.Success {
		t.Fatalf("the message after a cancelled hold: %+v", resp)
	}
}
