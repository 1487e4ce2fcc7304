package compat

// The real client's pull consumer (rocketmq.NewPullConsumer) against a
// 3-node group.
//
// What this client version's pull consumer can do, read from its source
// (consumer/pull_consumer.go). The limits below are the client's, whatever
// the broker:
//
//   - Subscribe + Start + Poll/ACK is the complete path: the client pulls
//     every queue it holds in the background (long polling, the selector
//     in each request), Poll hands out one queue's batch, ACK advances the
//     in-memory offset, UpdateOffset sets it by hand, and PersistOffset (or
//     the client's 5 s timer, or Shutdown) commits it with
//     UPDATE_CONSUMER_OFFSET. TestRealClientPullConsumerPoll and
//     TestRealClientPullConsumerResumes use it.
//   - PullFrom and Pull assign the consumer's group-name field (and the
//     Topic of the queue passed in) on every call, without a lock, while
//     the background pulls and the rebalance of any held queue read it:
//     after Subscribe, or Assign of some queues, that is a data race the
//     race detector reports. They are race-free only on a consumer that
//     holds no queue, Assign(topic, nil), and one call at a time. Such a
//     consumer has no selector: its pulls ask for "*".
//     TestRealClientPullFromOffsets uses them that way.
//   - PullFrom and Pull ignore their context for the network call and
//     always ask for a 20 s long poll, so one at the max offset returns
//     when the broker's hold ends (or a message arrives), whatever the
//     caller's deadline.
//   - PersistOffset ignores its topic and commits only the queues the
//     consumer holds, forgetting the offsets of others; a consumer that
//     holds none commits nothing. So the progress of PullFrom cannot be
//     committed, and Pull, which reads the group's committed offset from
//     the broker before every call and never advances it, returns the same
//     messages again.

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/ledgermq/ledgermq/broker/brokertest"
)

// sentMsg is one acknowledged send: what was sent and where it landed.
type sentMsg struct {
	body, tag, keys string
	msgID, offsetID string
	queue           int
	offset          int64
}

var pullTags = []string{"TagA", "TagB", "TagC"}

// sendTagged sends n messages to topic with tags cycling TagA, TagB, TagC
// and one key each, through p's own queue choice or, when queues is not
// empty, round-robin over those queues with a manual selector producer.
func sendTagged(t *testing.T, ctx context.Context, p rocketmq.Producer, topic, prefix string, n int, queues []int) []sentMsg {
	t.Helper()
	out := make([]sentMsg, 0, n)
	for i := 0; i < n; i++ {
		s := sentMsg{body: fmt.Sprintf("%s-%d", prefix, i), tag: pullTags[i%len(pullTags)], keys: fmt.Sprintf("%s-key-%d", prefix, i)}
		msg := primitive.NewMessage(topic, []byte(s.body))
		msg.WithTag(s.tag)
		msg.WithKeys([]string{s.keys})
		if len(queues) > 0 {
			msg.Queue = &primitive.MessageQueue{Topic: topic, BrokerName: "broker-a", QueueId: queues[i%len(queues)]}
		}
		res, err := p.SendSync(ctx, msg)
		if err != nil {
			t.Fatalf("send %s: %v", s.body, err)
		}
		if res.Status != primitive.SendOK || res.MessageQueue == nil {
			t.Fatalf("send %s: %+v", s.body, res)
		}
		s.msgID, s.offsetID = res.MsgID, res.OffsetMsgID
		s.queue, s.offset = res.MessageQueue.QueueId, res.QueueOffset
		out = append(out, s)
	}
	return out
}

// startQueueProducer starts a producer that sends each message to the
// queue set in msg.Queue.
func startQueueProducer(t *testing.T, ns []string, name string) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(producer.WithNameServer(ns), producer.WithGroupName(name), producer.WithRetry(3),
		producer.WithInstanceName(name), producer.WithQueueSelector(producer.NewManualQueueSelector()))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// byQueue groups sends by queue, ordered by queue offset, and checks that
// each queue's offsets are dense from its first one.
func byQueue(t *testing.T, sent []sentMsg) map[int][]sentMsg {
	t.Helper()
	out := map[int][]sentMsg{}
	for _, s := range sent {
		out[s.queue] = append(out[s.queue], s)
	}
	for q, ms := range out {
		sort.Slice(ms, func(i, j int) bool { return ms[i].offset < ms[j].offset })
		for i := range ms {
			if ms[i].offset != ms[0].offset+int64(i) {
				t.Fatalf("queue %d: send offsets not dense: %d at position %d (first %d)", q, ms[i].offset, i, ms[0].offset)
			}
		}
	}
	return out
}

// checkSame fails unless m is exactly the message s was.
func checkSame(t *testing.T, topic string, m *primitive.MessageExt, s sentMsg) {
	t.Helper()
	switch {
	case m.Topic != topic, string(m.Body) != s.body, m.GetTags() != s.tag, m.GetKeys() != s.keys,
		m.Queue == nil, m.Queue.QueueId != s.queue, m.QueueOffset != s.offset,
		m.MsgId != s.msgID, m.OffsetMsgId != s.offsetID:
		q := -1
		if m.Queue != nil {
			q = m.Queue.QueueId
		}
		t.Fatalf("pulled %s body=%q tag=%q keys=%q queue=%d offset=%d msgId=%s offsetMsgId=%s; sent %+v",
			m.Topic, m.Body, m.GetTags(), m.GetKeys(), q, m.QueueOffset, m.MsgId, m.OffsetMsgId, s)
	}
}

// startPull creates a pull consumer, lets setup subscribe or assign, starts
// it and shuts it down at the end of the test.
func startPull(t *testing.T, ns []string, group, instance string, setup func(rocketmq.PullConsumer) error) rocketmq.PullConsumer {
	t.Helper()
	c, err := rocketmq.NewPullConsumer(consumer.WithNameServer(ns), consumer.WithGroupName(group),
		consumer.WithInstance(instance), consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	if err := setup(c); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Shutdown() })
	return c
}

// pollUntil polls c and passes each batch to handle, acknowledging it
// (ConsumeSuccess) when handle says so, until done reports true.
func pollUntil(t *testing.T, ctx context.Context, c rocketmq.PullConsumer, what string,
	handle func(*consumer.ConsumeRequest) (ack bool), done func() bool) {
	t.Helper()
	for !done() {
		cr, err := c.Poll(ctx, 500*time.Millisecond)
		if consumer.IsNoNewMsgError(err) {
			if ctx.Err() != nil {
				t.Fatalf("timed out polling for %s (%s)", what, describe())
			}
			continue
		}
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		if handle(cr) {
			c.ACK(ctx, cr, consumer.ConsumeSuccess)
		}
	}
}

// ackEach is a pollUntil handler that passes every message to take and
// acknowledges every batch.
func ackEach(take func(*primitive.MessageExt)) func(*consumer.ConsumeRequest) bool {
	return func(cr *consumer.ConsumeRequest) bool {
		for _, m := range cr.GetMsgList() {
			take(m)
		}
		return true
	}
}

// sentAt returns the send that m should be, by queue and queue offset.
func sentAt(t *testing.T, queues map[int][]sentMsg, m *primitive.MessageExt) sentMsg {
	t.Helper()
	if m.Queue == nil {
		t.Fatalf("pulled %q without a queue", m.Body)
	}
	ms := queues[m.Queue.QueueId]
	if len(ms) == 0 || m.QueueOffset < ms[0].offset || m.QueueOffset >= ms[0].offset+int64(len(ms)) {
		t.Fatalf("pulled %q at queue %d offset %d: nothing was sent there", m.Body, m.Queue.QueueId, m.QueueOffset)
	}
	return ms[m.QueueOffset-ms[0].offset]
}

// freshGroup names a consumer group no earlier run has used (the client
// keeps some offsets under the home directory, keyed by group).
func freshGroup(prefix string) string { return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()) }

// TestRealClientPullConsumerPoll: messages of several queues and tags, sent
// by the real producer, come out of Poll exactly as sent, each queue in
// offset order, with "TagA || TagB" leaving TagC out.
func TestRealClientPullConsumerPoll(t *testing.T) {
	_, ns, ctx := startGroup(t, 45*time.Second)
	p := startProducer(t, ns, "pull-poll-pg")
	const topic = "PullPollTopic"
	sent := sendTagged(t, ctx, p, topic, "poll", 48, nil)
	queues := byQueue(t, sent)
	if len(queues) < 2 {
		t.Fatalf("the producer used %d queue(s); want several", len(queues))
	}
	want := map[string]sentMsg{} // body -> send, TagA and TagB only
	wantPerQueue := map[int][]int64{}
	for q, ms := range queues {
		for _, s := range ms {
			if s.tag != "TagC" {
				want[s.body] = s
				wantPerQueue[q] = append(wantPerQueue[q], s.offset)
			}
		}
	}

	c := startPull(t, ns, freshGroup("pull-poll-cg"), "pull-poll-c1", func(c rocketmq.PullConsumer) error {
		return c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "TagA || TagB"})
	})
	got := map[string]bool{}
	gotPerQueue := map[int][]int64{}
	describe = func() string { return fmt.Sprintf("%d of %d pulled", len(got), len(want)) }
	defer func() { describe = func() string { return "" } }()
	pollUntil(t, ctx, c, "every TagA and TagB message", ackEach(func(m *primitive.MessageExt) {
		s, ok := want[string(m.Body)]
		if !ok {
			t.Fatalf("pulled a message that the selector excludes or that was not sent: %q tag %q", m.Body, m.GetTags())
		}
		if got[s.body] {
			t.Fatalf("%s pulled twice", s.body)
		}
		checkSame(t, topic, m, s)
		got[s.body] = true
		gotPerQueue[s.queue] = append(gotPerQueue[s.queue], m.QueueOffset)
	}), func() bool { return len(got) == len(want) })
	for q, offs := range wantPerQueue {
		if fmt.Sprint(gotPerQueue[q]) != fmt.Sprint(offs) {
			t.Fatalf("queue %d: pulled offsets %v, want %v in this order", q, gotPerQueue[q], offs)
		}
	}
	t.Logf("%d of %d messages pulled from %d queues (TagC filtered)", len(got), len(sent), len(queues))
}

// assignNone is the setup of a consumer that holds no queue: the only kind
// on which PullFrom and Pull are free of data races (see the file comment).
func assignNone(topic string) func(rocketmq.PullConsumer) error {
	return func(c rocketmq.PullConsumer) error { return c.Assign(topic, nil) }
}

// pullResult is one PullFrom answer and how long it took.
type pullResult struct {
	res  *primitive.PullResult
	err  error
	took time.Duration
}

// pullFromAsync runs one PullFrom on c (which must not be used elsewhere
// meanwhile) and delivers its outcome on the returned channel.
func pullFromAsync(c rocketmq.PullConsumer, mq primitive.MessageQueue, offset int64) <-chan pullResult {
	out := make(chan pullResult, 1)
	go func() {
		start := time.Now()
		res, err := c.PullFrom(context.Background(), &mq, offset, 32)
		out <- pullResult{res, err, time.Since(start)}
	}()
	return out
}

// awaitPull waits for a pullFromAsync outcome and fails on an error.
func awaitPull(t *testing.T, ctx context.Context, ch <-chan pullResult, what string) pullResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r
	case <-ctx.Done():
		t.Fatalf("%s: no answer", what)
	}
	return pullResult{}
}

// TestRealClientPullFromOffsets: PullFrom on an explicit queue and offset
// returns the messages from that offset on (at most the number asked for);
// at the max offset it is held by the broker and answered "no new
// message" when the hold ends, or with the message stored there meanwhile; past the max it is answered at once with OFFSET_MOVED pointing
// at the max, as a Java broker does. Pull reads from the group's committed
// offset of the next queue.
func TestRealClientPullFromOffsets(t *testing.T) {
	_, ns, ctx := startGroup(t, 50*time.Second)
	p := startQueueProducer(t, ns, "pull-from-pg")
	const topic = "PullFromTopic"
	// Create the topic (4 queues) and spread 5 messages over each.
	sent := sendTagged(t, ctx, p, topic, "from", 20, []int{0, 1, 2, 3})
	queues := byQueue(t, sent)

	c := startPull(t, ns, freshGroup("pull-from-cg"), "pull-from-c1", assignNone(topic))
	mqs, err := c.GetTopicRouteInfo(topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(mqs) != 4 {
		t.Fatalf("route has %d queues, want 4", len(mqs))
	}
	mq := func(q int) primitive.MessageQueue {
		return primitive.MessageQueue{Topic: topic, BrokerName: mqs[0].BrokerName, QueueId: q}
	}

	// A pull at the max offset of queue 2 waits out the broker's hold (the
	// client asks for 20 s and gives the call no deadline of its own); one
	// at the max of queue 3 ends when a message arrives there. Separate
	// consumers: one consumer's pulls must not overlap.
	held := pullFromAsync(startPull(t, ns, freshGroup("pull-held-cg"), "pull-held-c1", assignNone(topic)), mq(2), 5)
	woken := pullFromAsync(startPull(t, ns, freshGroup("pull-wake-cg"), "pull-wake-c1", assignNone(topic)), mq(3), 5)

	// Explicit offsets on queue 1 (offsets 0..4, every tag: no selector).
	q1 := queues[1]
	for _, tt := range []struct {
		from      int64
		nums      int
		wantFirst int64
		wantN     int
	}{
		{0, 32, 0, 5},
		{2, 32, 2, 3},
		{1, 2, 1, 2},
		{4, 32, 4, 1},
	} {
		m := mq(1)
		res, err := c.PullFrom(ctx, &m, tt.from, tt.nums)
		if err != nil {
			t.Fatalf("PullFrom(q1, %d, %d): %v", tt.from, tt.nums, err)
		}
		msgs := res.GetMessageExts()
		if res.Status != primitive.PullFound || len(msgs) != tt.wantN || res.MinOffset != 0 || res.MaxOffset != 5 ||
			res.NextBeginOffset != tt.wantFirst+int64(tt.wantN) {
			t.Fatalf("PullFrom(q1, %d, %d): status %v, %d messages, next %d, min %d, max %d; want found, %d, next %d, 0, 5",
				tt.from, tt.nums, res.Status, len(msgs), res.NextBeginOffset, res.MinOffset, res.MaxOffset, tt.wantN, tt.wantFirst+int64(tt.wantN))
		}
		for i, m := range msgs {
			checkSame(t, topic, m, q1[tt.wantFirst+int64(i)])
		}
	}

	// Past the max: OFFSET_MOVED (PullOffsetIllegal) to the max, at once
	// (not held), and the same answer each time.
	for _, off := range []int64{6, 100, 1 << 40} {
		m := mq(1)
		start := time.Now()
		res, err := c.PullFrom(ctx, &m, off, 32)
		if err != nil {
			t.Fatalf("PullFrom(q1, %d): %v", off, err)
		}
		if res.Status != primitive.PullOffsetIllegal || res.NextBeginOffset != 5 || res.MaxOffset != 5 || len(res.GetMessageExts()) != 0 {
			t.Fatalf("PullFrom(q1, %d): status %v next %d max %d, %d messages; want offset illegal, next 5, max 5, none",
				off, res.Status, res.NextBeginOffset, res.MaxOffset, len(res.GetMessageExts()))
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("PullFrom(q1, %d) was held %v: an offset past the end must be answered at once", off, took)
		}
	}

	// Pull takes the queues in turn and reads each from the group's
	// committed offset: 0 for a new group on a queue that starts at 0.
	for i := range mqs {
		res, err := c.Pull(ctx, 32)
		if err != nil {
			t.Fatalf("Pull %d: %v", i, err)
		}
		msgs := res.GetMessageExts()
		if res.Status != primitive.PullFound || len(msgs) != 5 || msgs[0].Queue.QueueId != i {
			t.Fatalf("Pull %d: status %v, %d messages; want found, 5 of queue %d", i, res.Status, len(msgs), i)
		}
		for j, m := range msgs {
			checkSame(t, topic, m, queues[i][j])
		}
	}

	// Wake the pull parked at the max of queue 3.
	extra := sendTagged(t, ctx, p, topic, "wake", 1, []int{3})[0]
	if extra.offset != 5 {
		t.Fatalf("wake message stored at offset %d of queue 3, want 5", extra.offset)
	}
	w := awaitPull(t, ctx, woken, "pull at the max of queue 3")
	if w.res.Status != primitive.PullFound || len(w.res.GetMessageExts()) != 1 || w.res.NextBeginOffset != 6 {
		t.Fatalf("pull at the max of queue 3: status %v, %d messages, next %d; want the one new message, next 6",
			w.res.Status, len(w.res.GetMessageExts()), w.res.NextBeginOffset)
	}
	checkSame(t, topic, w.res.GetMessageExts()[0], extra)

	h := awaitPull(t, ctx, held, "pull at the max of queue 2")
	if h.res.Status != primitive.PullNoNewMsg || len(h.res.GetMessageExts()) != 0 || h.res.NextBeginOffset != 5 || h.res.MaxOffset != 5 {
		t.Fatalf("pull at the max of queue 2: status %v, %d messages, next %d, max %d; want no new message, next 5, max 5",
			h.res.Status, len(h.res.GetMessageExts()), h.res.NextBeginOffset, h.res.MaxOffset)
	}
	t.Logf("pull at the max: answered no-new-message after %v; woken by a new message after %v", h.took.Round(time.Millisecond), w.took.Round(time.Millisecond))
}

// waitCommitted waits until the group's offsets on the leader are want
// (queue -> next offset to consume), i.e. the commits went through raft.
func waitCommitted(t *testing.T, ctx context.Context, tc *brokertest.Cluster, group, topic string, want map[int]int64) {
	t.Helper()
	last := map[int]int64{}
	describe = func() string { return fmt.Sprintf("committed %v, want %v", last, want) }
	defer func() { describe = func() string { return "" } }()
	waitFor(t, ctx, "offsets committed on the leader", func() bool {
		leader, err := tc.Raft.Leader(ctx)
		if err != nil {
			return false
		}
		ok := true
		for q, off := range want {
			got, found := leader.Group().Metadata().Offset(group, topic, int32(q))
			if !found {
				got = -1
			}
			last[q] = got
			ok = ok && got == off
		}
		return ok
	})
}

// TestRealClientPullConsumerResumes: a pull consumer commits what it has
// consumed, through ACK for some queues and through UpdateOffset for
// another, and persists; a new consumer of the same group resumes at
// exactly the committed offsets: nothing consumed comes again, nothing
// uncommitted is skipped.
func TestRealClientPullConsumerResumes(t *testing.T) {
	tc, ns, ctx := startGroup(t, 50*time.Second)
	p := startQueueProducer(t, ns, "pull-resume-pg")
	const topic = "PullResumeTopic"
	first := byQueue(t, sendTagged(t, ctx, p, topic, "first", 24, []int{0, 1, 2, 3})) // offsets 0..5 of each queue
	group := freshGroup("pull-resume-cg")
	sub := func(c rocketmq.PullConsumer) error { return c.Subscribe(topic, consumer.MessageSelector{}) }

	// c1 consumes everything. Queues 1-3 are acknowledged batch by batch;
	// queue 0 is never acknowledged: the application records by hand that
	// it has processed offsets 0..3 of it.
	const q0Next = 4
	c1 := startPull(t, ns, group, "pull-resume-c1", sub)
	var q0 primitive.MessageQueue
	seen := 0
	pollUntil(t, ctx, c1, "the first 24 messages", func(cr *consumer.ConsumeRequest) bool {
		for _, m := range cr.GetMsgList() {
			checkSame(t, topic, m, sentAt(t, first, m))
			seen++
		}
		if cr.GetMQ().QueueId == 0 {
			q0 = *cr.GetMQ()
			return false
		}
		return true
	}, func() bool { return seen == 24 })
	for q := 1; q < 4; q++ {
		m := primitive.MessageQueue{Topic: topic, BrokerName: q0.BrokerName, QueueId: q}
		if off, err := c1.CurrentOffset(&m); err != nil || off != 6 {
			t.Fatalf("CurrentOffset(queue %d) after acknowledging all = %d, %v; want 6", q, off, err)
		}
	}
	if off, err := c1.CurrentOffset(&q0); err != nil || off != 0 {
		t.Fatalf("CurrentOffset(queue 0) with nothing acknowledged = %d, %v; want 0", off, err)
	}
	if err := c1.UpdateOffset(&q0, q0Next); err != nil {
		t.Fatal(err)
	}
	if err := c1.PersistOffset(ctx, topic); err != nil {
		t.Fatal(err)
	}
	waitCommitted(t, ctx, tc, group, topic, map[int]int64{0: q0Next, 1: 6, 2: 6, 3: 6})
	if err := c1.Shutdown(); err != nil {
		t.Fatal(err)
	}

	// New messages, then a new member of the group: it gets offsets 4 and
	// 5 of queue 0 again (never committed) and the new messages, nothing
	// else, each queue in order.
	second := byQueue(t, sendTagged(t, ctx, p, topic, "second", 8, []int{0, 1, 2, 3})) // offsets 6..7
	want := map[int][]int64{0: {4, 5, 6, 7}, 1: {6, 7}, 2: {6, 7}, 3: {6, 7}}
	got := map[int][]int64{}
	n := 0
	describe = func() string { return fmt.Sprintf("got %v, want %v", got, want) }
	defer func() { describe = func() string { return "" } }()
	c2 := startPull(t, ns, group, "pull-resume-c2", sub)
	pollUntil(t, ctx, c2, "the uncommitted and the new messages", ackEach(func(m *primitive.MessageExt) {
		q := m.Queue.QueueId
		if m.QueueOffset < want[q][0] {
			t.Fatalf("queue %d offset %d (%q) delivered again after it was committed", q, m.QueueOffset, m.Body)
		}
		s := second[q]
		if m.QueueOffset < 6 {
			s = first[q]
		}
		checkSame(t, topic, m, sentAt(t, map[int][]sentMsg{q: s}, m))
		got[q] = append(got[q], m.QueueOffset)
		n++
	}), func() bool { return n == 10 })
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("resumed consumer got offsets %v, want %v", got, want)
	}
	if err := c2.PersistOffset(ctx, topic); err != nil {
		t.Fatal(err)
	}
	waitCommitted(t, ctx, tc, group, topic, map[int]int64{0: 8, 1: 8, 2: 8, 3: 8})
}
