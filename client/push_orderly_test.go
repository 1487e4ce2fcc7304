package client

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

	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// orderLog records what orderly consumers handled: every key's steps in
// handling order, and any overlap of two handlers on one queue.
type orderLog struct {
	mu       sync.Mutex
	steps    map[string][]int    // key → steps, in handling order
	by       map[string][]string // key → consumer of each step
	inflight map[Queue]string    // queue → consumer handling one of its messages
	overlaps []string
}

func newOrderLog() *orderLog {
	return &orderLog{steps: map[string][]int{}, by: map[string][]string{}, inflight: map[Queue]string{}}
}

// parseStep splits a body "key/step".
func parseStep(t testing.TB, body []byte) (string, int) {
	key, step, ok := strings.Cut(string(body), "/")
	n, err := strconv.Atoi(step)
	if !ok || err != nil {
		t.Errorf("body %q", body)
	}
	return key, n
}

// handler records m, checks no other handler of its queue runs, and
// returns result's answer (success without one).
func (l *orderLog) handler(t testing.TB, name string, result func(key string, step int, m *MessageExt) ConsumeResult) MessageHandler {
	return func(_ context.Context, m *MessageExt) ConsumeResult {
		key, step := parseStep(t, m.Body)
		l.mu.Lock()
		if other, busy := l.inflight[m.Queue]; busy {
			l.overlaps = append(l.overlaps, fmt.Sprintf("%v: %s while %s", m.Queue, name, other))
		}
		l.inflight[m.Queue] = name
		l.steps[key] = append(l.steps[key], step)
		l.by[key] = append(l.by[key], name)
		l.mu.Unlock()
		// Leave room for an overlapping handler to show itself.
		time.Sleep(time.Millisecond)
		res := ConsumeSuccess
		if result != nil {
			res = result(key, step, m)
		}
		l.mu.Lock()
		delete(l.inflight, m.Queue)
		l.mu.Unlock()
		return res
	}
}

// count is how many steps of key were handled.
func (l *orderLog) count(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.steps[key])
}

func (l *orderLog) stepsOf(key string) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.steps[key])
}

func (l *orderLog) check(t testing.TB) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.overlaps) > 0 {
		t.Fatalf("one queue handled twice at once: %v", l.overlaps)
	}
}

// sendKeys sends steps [from, to) of every key, step after step, with
// the hash selector, and returns each key's queue.
func sendKeys(t testing.TB, p *Producer, topic string, keys, from, to int) map[string]Queue {
	t.Helper()
	queues := map[string]Queue{}
	for step := from; step < to; step++ {
		for k := range keys {
			key := fmt.Sprintf("key%d", k)
			res, err := p.Send(ctxGuard(t), &Message{Topic: topic, ShardingKey: key, Body: []byte(fmt.Sprintf("%s/%d", key, step))})
			if err != nil {
				t.Fatalf("send %s/%d: %v", key, step, err)
			}
			if q, ok := queues[key]; ok && q != res.Queue {
				t.Fatalf("%s went to %v and %v", key, q, res.Queue)
			}
			queues[key] = res.Queue
		}
	}
	return queues
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// lockAs asks the leader to lock qs for clientID and returns the granted.
func lockAs(t testing.TB, tc *brokertest.Cluster, rc *remoting.Client, group, clientID string, qs []Queue) []Queue {
	t.Helper()
	ctx := ctxGuard(t)
	addr, err := tc.LeaderAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body := protocol.LockBatchBody{ConsumerGroup: group, ClientID: clientID}
	for _, q := range qs {
		body.MQSet = append(body.MQSet, protocol.MessageQueue(q))
	}
	b, _ := json.Marshal(body)
	resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(remoting.LockBatchMQ, nil, b))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("lock: %v %v", err, resp)
	}
	var res struct {
		LockOKMQSet []protocol.MessageQueue `json:"lockOKMQSet"`
	}
	if err := json.Unmarshal(resp.Body, &res); err != nil {
		t.Fatal(err)
	}
	var out []Queue
	for _, mq := range res.LockOKMQSet {
		out = append(out, Queue(mq))
	}
	return out
}

func orderly(ns, group string, extra ...Option) []Option {
	return fastPush(ns, group, append([]Option{WithConsumeOrderly(true), WithConsumeGoroutines(8)}, extra...)...)
}

// Several keys on several queues: every key's steps are handled in order,
// once each, one message of a queue at a time.
func TestPushConsumerOrderly(t *testing.T) {
	tc := startCluster(t, nil)
	rc := testClient(t)
	const topic, keys, steps = "PushOrderly", 6, 20
	createTopic(t, tc, rc, topic, 4)
	ns := tc.NamesrvAddr()
	p := newProducer(t, WithNameServers(ns), WithQueueSelector(HashSelector()))
	l := newOrderLog()
	c := startPush(t, topic, Selector{}, l.handler(t, "c", nil), orderly(ns, "orderly-g")...)
	waitFor(t, "queues held", func() bool { return len(heldOf(c.Assignment(), topic)) == 4 })
	queues := sendKeys(t, p, topic, keys, 0, steps)
	distinct := map[Queue]bool{}
	for _, q := range queues {
		distinct[q] = true
	}
	if len(distinct) < 2 {
		t.Fatalf("the keys share one queue: %v", queues)
	}
	for k := range keys {
		key := fmt.Sprintf("key%d", k)
		waitFor(t, key+" consumed", func() bool { return l.count(key) >= steps })
		if got := l.stepsOf(key); !slices.Equal(got, seq(0, steps)) {
			t.Fatalf("%s handled as %v", key, got)
		}
	}
	l.check(t)
	// The member holds the locks: another client of the group gets none.
	if got := lockAs(t, tc, rc, "orderly-g", "intruder@1", c.Assignment()); len(got) != 0 {
		t.Fatalf("intruder locked %v", got)
	}
}

// Two members: each queue is consumed by one at a time (the broker lock
// says so too); when one closes, the other takes its queues and goes on
// in order from where it stopped.
func TestPushConsumerOrderlyGroup(t *testing.T) {
	tc := startCluster(t, nil)
	rc := testClient(t)
	const topic, group, keys = "PushOrderlyGroup", "orderly-group-g", 6
	createTopic(t, tc, rc, topic, 4)
	ns := tc.NamesrvAddr()
	p := newProducer(t, WithNameServers(ns), WithQueueSelector(HashSelector()))
	l := newOrderLog()
	c1 := startPush(t, topic, Selector{}, l.handler(t, "c1", nil), orderly(ns, group, WithInstanceName("o1"))...)
	c2 := startPush(t, topic, Selector{}, l.handler(t, "c2", nil), orderly(ns, group, WithInstanceName("o2"))...)
	waitShared(t, topic, 4, c1, c2)
	for _, c := range []*PushConsumer{c1, c2} {
		if got := lockAs(t, tc, rc, group, "intruder@1", queueKeys(heldOf(c.Assignment(), topic))); len(got) != 0 {
			t.Fatalf("intruder locked %v held by %s", got, c.ClientID())
		}
	}

	sendKeys(t, p, topic, keys, 0, 10)
	for k := range keys {
		key := fmt.Sprintf("key%d", k)
		waitFor(t, key+" first half consumed", func() bool { return l.count(key) >= 10 })
	}
	l.mu.Lock()
	c1n, c2n := 0, 0
	for _, names := range l.by {
		for _, n := range names {
			if n == "c1" {
				c1n++
			} else {
				c2n++
			}
		}
	}
	l.mu.Unlock()
	if c1n == 0 || c2n == 0 {
		t.Fatalf("one member consumed nothing: c1 %d, c2 %d", c1n, c2n)
	}

	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "c1 holding all queues", func() bool { return len(heldOf(c1.Assignment(), topic)) == 4 })
	sendKeys(t, p, topic, keys, 10, 20)
	for k := range keys {
		key := fmt.Sprintf("key%d", k)
		waitFor(t, key+" consumed", func() bool { return l.count(key) >= 20 })
		if got := l.stepsOf(key); !slices.Equal(got, seq(0, 20)) {
			t.Fatalf("%s handled as %v", key, got)
		}
	}
	l.check(t)
}

func queueKeys(m map[Queue]bool) []Queue {
	out := make([]Queue, 0, len(m))
	for q := range m {
		out = append(out, q)
	}
	sortQueues(out)
	return out
}

// A ConsumeRetryLater suspends the queue and handles the same message
// again before the next of its queue; after WithMaxReconsumeTimes the
// message goes to the dead-letter topic and the queue goes on.
func TestPushConsumerOrderlyRetryLater(t *testing.T) {
	tc := startCluster(t, nil)
	rc := testClient(t)
	const topic, group = "PushOrderlyRetry", "orderly-retry-g"
	createTopic(t, tc, rc, topic, 1)
	ns := tc.NamesrvAddr()
	p := newProducer(t, WithNameServers(ns), WithQueueSelector(HashSelector()))
	l := newOrderLog()
	var mu sync.Mutex
	var times []string // step:reconsumeTimes, in handling order
	result := func(_ string, step int, m *MessageExt) ConsumeResult {
		mu.Lock()
		times = append(times, fmt.Sprintf("%d:%d", step, m.ReconsumeTimes))
		mu.Unlock()
		if (step == 3 && m.ReconsumeTimes == 0) || step == 6 {
			return ConsumeRetryLater
		}
		return ConsumeSuccess
	}
	c := startPush(t, topic, Selector{}, l.handler(t, "c", result),
		orderly(ns, group, WithSuspendCurrentQueueTime(20*time.Millisecond), WithMaxReconsumeTimes(2))...)
	waitFor(t, "queue held", func() bool { return len(heldOf(c.Assignment(), topic)) == 1 })
	sendKeys(t, p, topic, 1, 0, 10)
	waitFor(t, "all steps consumed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(times, "9:0")
	})
	mu.Lock()
	got := strings.Join(times, " ")
	mu.Unlock()
	const want = "0:0 1:0 2:0 3:0 3:1 4:0 5:0 6:0 6:1 6:2 7:0 8:0 9:0"
	if got != want {
		t.Fatalf("handled %s, want %s", got, want)
	}
	l.check(t)
	addr, err := tc.LeaderAddr(ctxGuard(t))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "step 6 in the dead-letter topic", func() bool {
		dlq := readQueue(t, rc, addr, "%DLQ%"+group, 0)
		return len(dlq) == 1 && string(dlq[0].Body) == "key0/6"
	})
}

// keysOnQueues sends step 0..steps-1 of key0..key11 and returns, for each
// queue that got one, the first key sent to it.
func keysOnQueues(t testing.TB, p *Producer, topic string, steps int) map[Queue]string {
	t.Helper()
	byQueue := map[Queue]string{}
	queues := sendKeys(t, p, topic, 12, 0, steps)
	for k := range 12 {
		key := fmt.Sprintf("key%d", k)
		if _, ok := byQueue[queues[key]]; !ok {
			byQueue[queues[key]] = key
		}
	}
	return byQueue
}

// One worker, two orderly queues with a backlog each: once the worker's
// time slice is up it lets the waiting queue go first, so neither queue
// starves while the other has messages; each queue's order holds.
func TestPushConsumerOrderlyTimeSlice(t *testing.T) {
	tc := startCluster(t, nil)
	rc := testClient(t)
	const topic, steps = "PushOrderlySlice", 6
	createTopic(t, tc, rc, topic, 2)
	ns := tc.NamesrvAddr()
	p := newProducer(t, WithNameServers(ns), WithQueueSelector(HashSelector()))
	byQueue := keysOnQueues(t, p, topic, steps)
	if len(byQueue) != 2 {
		t.Fatalf("keys on %d queues, want 2", len(byQueue))
	}
	gate := make(chan struct{})
	var mu sync.Mutex
	var order []string // queue id of each handled message
	var once sync.Once
	h := func(_ context.Context, m *MessageExt) ConsumeResult {
		once.Do(func() { <-gate })
		mu.Lock()
		order = append(order, strconv.Itoa(int(m.Queue.QueueID)))
		mu.Unlock()
		return ConsumeSuccess
	}
	c := startPush(t, topic, Selector{}, h, orderly(ns, "orderly-slice-g",
		WithConsumeGoroutines(1), WithMaxTimeConsumeContinuously(time.Nanosecond))...)
	// Should the test fail while the worker is held, the consumer's Close
	// (a cleanup registered before this one, so run after it) must not
	// wait for the held handler for ever.
	var opened sync.Once
	openGate := func() { opened.Do(func() { close(gate) }) }
	t.Cleanup(openGate)
	// The one worker is held in its first handler while both queues pull
	// their backlog and the other queue waits for a worker.
	var state string // the last state seen, for a failure's log
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last state: %s", state)
		}
	})
	waitFor(t, "both backlogs pulled and a queue waiting", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		state = fmt.Sprintf("%d queues, %d tasks waiting", len(c.pqs), len(c.work))
		ok, queues := len(c.work) == 1, 0
		for q, pq := range c.pqs {
			if q.Topic != topic {
				continue // the group's retry topic, once its route is read
			}
			queues++
			pq.mu.Lock()
			n := len(pq.msgs)
			pq.mu.Unlock()
			state += fmt.Sprintf(", %v: %d messages", q, n)
			ok = ok && n >= 12/2*steps/2
		}
		return ok && queues == 2
	})
	openGate()
	total := 12 * steps
	waitFor(t, "everything consumed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) >= total
	})
	mu.Lock()
	got := slices.Clone(order)
	mu.Unlock()
	// Without time slices the first queue's whole backlog would come first.
	if got[0] == got[1] {
		t.Fatalf("the worker kept queue %s while the other waited: %v", got[0], got)
	}
}

// A member gives away two queues while the handler of one of them is
// stuck: the other is released at once (the new member takes it and
// consumes it), the stuck one only after its handler returns, and the
// new member goes on with it in order.
func TestPushConsumerOrderlyGiveAwaySlowHandler(t *testing.T) {
	tc := startCluster(t, nil)
	rc := testClient(t)
	const topic, group, steps = "PushOrderlyGiveAway", "orderly-giveaway-g", 4
	createTopic(t, tc, rc, topic, 4)
	ns := tc.NamesrvAddr()
	p := newProducer(t, WithNameServers(ns), WithQueueSelector(HashSelector()))
	// o1 alone holds every queue; with o2, o1 keeps queues 0 and 1.
	split := func(clientID string, queues []Queue, ids []string) []Queue {
		if len(ids) == 1 {
			return queues
		}
		var out []Queue
		for _, q := range queues {
			if (q.QueueID < 2) == strings.HasSuffix(clientID, "@o1") {
				out = append(out, q)
			}
		}
		return out
	}
	gate := make(chan struct{})
	var gateOnce sync.Once
	openGate := func() { gateOnce.Do(func() { close(gate) }) }
	l := newOrderLog()
	stuckQueue := int32(2)
	h1 := l.handler(t, "c1", func(_ string, step int, m *MessageExt) ConsumeResult {
		if m.Queue.QueueID == stuckQueue && step == 1 {
			<-gate
		}
		return ConsumeSuccess
	})
	c1 := startPush(t, topic, Selector{}, h1, orderly(ns, group, WithInstanceName("o1"), WithAllocateStrategy(split))...)
	t.Cleanup(openGate) // before c1's Close, which waits for its handlers
	waitFor(t, "c1 holding all queues", func() bool { return len(heldOf(c1.Assignment(), topic)) == 4 })
	byQueue := keysOnQueues(t, p, topic, steps)
	stuckKey, otherKey := byQueue[Queue{Topic: topic, BrokerName: c1.Assignment()[0].BrokerName, QueueID: stuckQueue}], ""
	for q, k := range byQueue {
		if q.QueueID == 3 {
			otherKey = k
		}
	}
	if stuckKey == "" || otherKey == "" {
		t.Fatalf("no keys on queues 2 and 3: %v", byQueue)
	}
	waitFor(t, "c1 stuck in step 1 of "+stuckKey, func() bool { return l.count(stuckKey) == 2 })
	waitFor(t, otherKey+" consumed by c1", func() bool { return l.count(otherKey) >= steps })

	l2 := l.handler(t, "c2", nil)
	c2 := startPush(t, topic, Selector{}, l2, orderly(ns, group, WithInstanceName("o2"), WithAllocateStrategy(split))...)
	// Queue 3 moves while queue 2's handler is still stuck.
	waitFor(t, "c2 holding queue 3", func() bool {
		for _, q := range c2.Assignment() {
			if q.Topic == topic && q.QueueID == 3 {
				return true
			}
		}
		return false
	})
	if held := heldOf(c2.Assignment(), topic); len(held) != 1 {
		t.Fatalf("c2 holds %v while c1's handler of queue 2 runs", held)
	}
	sendKeys(t, p, topic, 12, steps, steps+2)
	waitFor(t, otherKey+" continued by c2", func() bool { return l.count(otherKey) >= steps+2 })

	openGate()
	waitFor(t, "c2 holding queues 2 and 3", func() bool { return len(heldOf(c2.Assignment(), topic)) == 2 })
	waitFor(t, stuckKey+" consumed", func() bool { return l.count(stuckKey) >= steps+2 })
	for _, key := range []string{stuckKey, otherKey} {
		if got := l.stepsOf(key); !slices.Equal(got, seq(0, steps+2)) {
			t.Fatalf("%s handled as %v", key, got)
		}
	}
	l.check(t)
}
