package client

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
)

// fastPush are the options of the push consumers of the tests: quick
// rebalances and commits, so the tests wait for conditions, not periods.
func fastPush(ns string, group string, extra ...Option) []Option {
	return append([]Option{WithNameServers(ns), WithGroup(group), WithRebalanceInterval(time.Second),
		WithCommitInterval(200 * time.Millisecond), WithConsumeFromWhere(ConsumeFromFirstOffset)}, extra...)
}

// tally records what each consumer handled.
type tally struct {
	mu   sync.Mutex
	seen map[string]map[string][]*MessageExt // consumer → body → copies
}

func newTally() *tally { return &tally{seen: map[string]map[string][]*MessageExt{}} }

func (t *tally) handler(name string, result func(*MessageExt) ConsumeResult) MessageHandler {
	return func(_ context.Context, m *MessageExt) ConsumeResult {
		t.mu.Lock()
		if t.seen[name] == nil {
			t.seen[name] = map[string][]*MessageExt{}
		}
		t.seen[name][string(m.Body)] = append(t.seen[name][string(m.Body)], m)
		t.mu.Unlock()
		if result != nil {
			return result(m)
		}
		return ConsumeSuccess
	}
}

// union counts every body handled, by anyone.
func (t *tally) union() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]int{}
	for _, bodies := range t.seen {
		for b, ms := range bodies {
			out[b] += len(ms)
		}
	}
	return out
}

func (t *tally) of(name string) map[string][]*MessageExt {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string][]*MessageExt{}
	for b, ms := range t.seen[name] {
		out[b] = append([]*MessageExt(nil), ms...)
	}
	return out
}

func hasAll[V any](got map[string]V, want map[string]SendResult) bool {
	for b := range want {
		if _, ok := got[b]; !ok {
			return false
		}
	}
	return true
}

// startPush starts a push consumer subscribed to topic, closed by the
// test's cleanup.
func startPush(t testing.TB, topic string, sel Selector, h MessageHandler, opts ...Option) *PushConsumer {
	t.Helper()
	c, err := NewPushConsumer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Subscribe(topic, sel, h); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

// heldOf returns the queues of topic among qs.
func heldOf(qs []Queue, topic string) map[Queue]bool {
	out := map[Queue]bool{}
	for _, q := range qs {
		if q.Topic == topic {
			out[q] = true
		}
	}
	return out
}

// waitShared waits until the consumers hold disjoint sets of topic's n
// queues that cover them all.
func waitShared(t testing.TB, topic string, n int, cs ...*PushConsumer) {
	t.Helper()
	waitFor(t, "the queues shared out", func() bool {
		all := map[Queue]int{}
		for _, c := range cs {
			held := heldOf(c.Assignment(), topic)
			if len(held) == 0 {
				return false
			}
			for q := range held {
				all[q]++
			}
		}
		if len(all) != n {
			return false
		}
		for _, k := range all {
			if k != 1 {
				return false
			}
		}
		return true
	})
}

func TestPushConsumerGroupSharesAndRebalances(t *testing.T) {
	tc := startCluster(t, nil)
	rc := testClient(t)
	const topic = "PushShare"
	createTopic(t, tc, rc, topic, 4)
	ns := tc.NamesrvAddr()
	p := newProducer(t, WithNameServers(ns))
	tl := newTally()
	c1 := startPush(t, topic, Selector{}, tl.handler("c1", nil), fastPush(ns, "share-g", WithInstanceName("c1"))...)
	c2 := startPush(t, topic, Selector{}, tl.handler("c2", nil), fastPush(ns, "share-g", WithInstanceName("c2"))...)
	waitShared(t, topic, 4, c1, c2)

	sent := sendN(t, p, topic, "m", 40, nil)
	waitFor(t, "every message consumed", func() bool { return hasAll(tl.union(), sent) })
	for b, n := range tl.union() {
		if n != 1 {
			t.Fatalf("%s consumed %d times", b, n)
		}
	}
	if len(tl.of("c1")) == 0 || len(tl.of("c2")) == 0 {
		t.Fatalf("one member consumed nothing: c1 %d, c2 %d", len(tl.of("c1")), len(tl.of("c2")))
	}

	// c2 leaves: c1 takes every queue, from where c2 stopped.
	waitFor(t, "c2's offsets committed", func() bool {
		for q := range heldOf(c2.Assignment(), topic) {
			off, err := c1.queryOffset(ctxGuard(t), q)
			if err != nil || off == 0 {
				return false
			}
		}
		return true
	})
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "c1 holding all queues", func() bool { return len(heldOf(c1.Assignment(), topic)) == 4 })
	more := sendN(t, p, topic, "n", 20, nil)
	waitFor(t, "the second batch consumed by c1", func() bool { return hasAll(tl.of("c1"), more) })
	for b, n := range tl.union() {
		if n != 1 {
			t.Fatalf("%s consumed %d times", b, n)
		}
	}
}

func TestPushConsumerBroadcasting(t *testing.T) {
	tc := startCluster(t, nil)
	rc := testClient(t)
	const topic = "PushBroadcast"
	createTopic(t, tc, rc, topic, 2)
	ns := tc.NamesrvAddr()
	p := newProducer(t, WithNameServers(ns))
	tl := newTally()
	var cs []*PushConsumer
	for _, name := range []string{"b1", "b2"} {
		cs = append(cs, startPush(t, topic, Selector{}, tl.handler(name, nil),
			fastPush(ns, "bcast-g", WithInstanceName(name), WithMessageModel(Broadcasting))...))
	}
	for _, c := range cs {
		waitFor(t, "all queues held", func() bool { return len(heldOf(c.Assignment(), topic)) == 2 })
	}
	sent := sendN(t, p, topic, "b", 20, nil)
	for _, name := range []string{"b1", "b2"} {
		waitFor(t, name+" consuming everything", func() bool { return hasAll(tl.of(name), sent) })
	}
}

func TestPushConsumerRetryLater(t *testing.T) {
	tc := startCluster(t, nil)
	rc := testClient(t)
	const topic = "PushRetry"
	createTopic(t, tc, rc, topic, 2)
	ns := tc.NamesrvAddr()
	p := newProducer(t, WithNameServers(ns))
	tl := newTally()
	failFirst := func(m *MessageExt) ConsumeResult {
		if strings.HasPrefix(string(m.Body), "fail") && m.ReconsumeTimes == 0 {
			return ConsumeRetryLater
		}
		return ConsumeSuccess
	}
	c := startPush(t, topic, Selector{}, tl.handler("c", failFirst), fastPush(ns, "retry-g", WithRetryDelayLevel(1))...)
	waitFor(t, "queues held", func() bool { return len(heldOf(c.Assignment(), topic)) == 2 })
	sent := sendN(t, p, topic, "fail", 3, nil)
	for b, r := range sendN(t, p, topic, "ok", 3, nil) {
		sent[b] = r
	}
	waitFor(t, "failed messages consumed again", func() bool {
		got := tl.of("c")
		for b := range sent {
			want := 1
			if strings.HasPrefix(b, "fail") {
				want = 2
			}
			if len(got[b]) < want {
				return false
			}
		}
		return true
	})
	for b, ms := range tl.of("c") {
		if !strings.HasPrefix(b, "fail") {
			if len(ms) != 1 {
				t.Fatalf("%s consumed %d times", b, len(ms))
			}
			continue
		}
		first, again := ms[0], ms[1]
		if first.ReconsumeTimes != 0 || again.ReconsumeTimes != 1 {
			t.Fatalf("%s: reconsume times %d then %d", b, first.ReconsumeTimes, again.ReconsumeTimes)
		}
		if again.Topic != topic || again.MsgID != sent[b].MsgID || again.Queue.Topic != "%RETRY%retry-g" {
			t.Fatalf("%s came back as topic %s id %s from %v; sent id %s", b, again.Topic, again.MsgID, again.Queue, sent[b].MsgID)
		}
	}
}

func TestPushConsumerFilters(t *testing.T) {
	tc := startCluster(t, nil)
	rc := testClient(t)
	const topic = "PushFilter"
	createTopic(t, tc, rc, topic, 2)
	ns := tc.NamesrvAddr()
	p := newProducer(t, WithNameServers(ns))
	tags, sql := newTally(), newTally()
	ct := startPush(t, topic, Selector{Expression: "TagA || TagB"}, tags.handler("t", nil), fastPush(ns, "tag-g")...)
	cs := startPush(t, topic, Selector{Type: SQL92, Expression: "n >= 5 AND color = 'red'"}, sql.handler("s", nil),
		fastPush(ns, "sql-g")...)
	for _, c := range []*PushConsumer{ct, cs} {
		waitFor(t, "queues held", func() bool { return len(heldOf(c.Assignment(), topic)) == 2 })
	}
	wantTags, wantSQL := map[string]SendResult{}, map[string]SendResult{}
	for i := range 12 {
		tag := []string{"TagA", "TagB", "TagC"}[i%3]
		color := []string{"red", "blue"}[i%2]
		m := &Message{Topic: topic, Tag: tag, Body: []byte(fmt.Sprintf("f-%d", i)),
			Properties: map[string]string{"n": fmt.Sprint(i), "color": color}}
		res, err := p.Send(ctxGuard(t), m)
		if err != nil {
			t.Fatal(err)
		}
		if tag != "TagC" {
			wantTags[string(m.Body)] = res
		}
		if i >= 5 && color == "red" {
			wantSQL[string(m.Body)] = res
		}
	}
	waitFor(t, "the tag filter's messages", func() bool { return hasAll(tags.union(), wantTags) })
	waitFor(t, "the SQL92 filter's messages", func() bool { return hasAll(sql.union(), wantSQL) })
	for b := range tags.union() {
		if _, ok := wantTags[b]; !ok {
			t.Fatalf("tag filter delivered %s", b)
		}
	}
	for b := range sql.union() {
		if _, ok := wantSQL[b]; !ok {
			t.Fatalf("SQL92 filter delivered %s", b)
		}
	}
}

// A consumer keeps consuming through a leader kill; nothing sent before
// or after is skipped.
func TestPushConsumerLeaderKill(t *testing.T) {
	tc := startCluster(t, func(_ int, c *broker.Config) { c.RegisterInterval = 200 * time.Millisecond })
	rc := testClient(t)
	const topic = "PushKill"
	createTopic(t, tc, rc, topic, 2)
	ns := tc.NamesrvAddr()
	p := newProducer(t, WithNameServers(ns))
	tl := newTally()
	c := startPush(t, topic, Selector{}, tl.handler("c", nil), fastPush(ns, "kill-g")...)
	waitFor(t, "queues held", func() bool { return len(heldOf(c.Assignment(), topic)) == 2 })
	before := sendN(t, p, topic, "before", 20, nil)
	waitFor(t, "the first batch consumed", func() bool { return hasAll(tl.union(), before) })

	leader, err := tc.Raft.Leader(ctxGuard(t))
	if err != nil {
		t.Fatal(err)
	}
	tc.Kill(leader.ID)
	waitFor(t, "a new leader in the route", func() bool {
		r, ok := tc.Namesrv.Table().Route(topic)
		if !ok {
			return false
		}
		for _, bd := range r.BrokerDatas {
			if a, ok := bd.BrokerAddrs[0]; ok && a != tc.Peers[leader.ID] {
				return true
			}
		}
		return false
	})
	after := sendN(t, p, topic, "after", 20, nil)
	start := time.Now()
	waitFor(t, "the second batch consumed after the kill", func() bool { return hasAll(tl.union(), after) })
	t.Logf("second batch consumed %v after it was sent", time.Since(start))
}
