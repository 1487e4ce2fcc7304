package compat

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// Interop of our client (package client) with rocketmq-client-go, on one
// topic of one group: each side produces for the other's consumer, and a
// consumer group with one member of each kind shares the queues.

// createQueues creates topic with n queues on the leader and waits for
// its route.
func createQueues(t *testing.T, ctx context.Context, tc *brokertest.Cluster, topic string, n int) {
	t.Helper()
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	addr, err := tc.LeaderAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": strconv.Itoa(n), "writeQueueNums": strconv.Itoa(n), "perm": "6"}, nil))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("create %s: %v %v", topic, err, resp)
	}
	waitRoute(t, ctx, tc, topic)
}

func ourProducer(t *testing.T, ns []string) *client.Producer {
	t.Helper()
	p, err := client.NewProducer(client.WithNameServers(ns...), client.WithGroup("ours-pg"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// ourPush starts one of our push consumers, closed by the cleanup.
func ourPush(t *testing.T, ns []string, group, instance, topic string, h client.MessageHandler) *client.PushConsumer {
	t.Helper()
	members.join(group)
	c, err := client.NewPushConsumer(client.WithNameServers(ns...), client.WithGroup(group), client.WithInstanceName(instance),
		client.WithConsumeFromWhere(client.ConsumeFromFirstOffset), client.WithRebalanceInterval(time.Second),
		client.WithCommitInterval(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Subscribe(topic, client.Selector{}, h); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

// ourHandler counts bodies into col under name, as collector.handler.
func ourHandler(col *collector, name string) client.MessageHandler {
	return func(_ context.Context, m *client.MessageExt) client.ConsumeResult {
		col.mu.Lock()
		defer col.mu.Unlock()
		if col.seen[name] == nil {
			col.seen[name] = map[string]int{}
		}
		col.seen[name][string(m.Body)]++
		return client.ConsumeSuccess
	}
}

func held(c *client.PushConsumer, topic string) int {
	n := 0
	for _, q := range c.Assignment() {
		if q.Topic == topic {
			n++
		}
	}
	return n
}

func TestOurProducerTheirPushConsumer(t *testing.T) {
	tc, ns, ctx := startGroup(t, 60*time.Second)
	const topic = "OursToTheirs"
	createQueues(t, ctx, tc, topic, 4)
	p := ourProducer(t, ns)
	want := map[string]bool{}
	for i := range 30 {
		body := fmt.Sprintf("ours-%d", i)
		m := &client.Message{Topic: topic, Body: []byte(body), Tag: "T", Keys: []string{body}}
		if i == 0 {
			m.Body = make([]byte, 8<<10) // compressed on the wire
			for j := range m.Body {
				m.Body[j] = 'a' + byte(j%26)
			}
			body = string(m.Body)
		}
		if _, err := p.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
		want[body] = true
	}
	col := newCollector()
	c := startPush(t, ns, "theirs-cg", "theirs-c", topic, consumer.Clustering, col.handler("theirs"))
	defer c.Shutdown()
	waitFor(t, ctx, "their consumer consuming ours", func() bool { return col.consumedAll(want) })
	// Shut down only once the consumer has committed what it consumed (it
	// persists offsets every 5 s): a Shutdown while its start-up rebalance
	// still runs races inside rocketmq-client-go (an unsynchronised flag the
	// race detector reports).
	waitFor(t, ctx, "their consumer's offsets committed", func() bool { return committed(ctx, tc, "theirs-cg", topic, 4) == 30 })
}

// committed sums group's committed offsets on topic's first n queues at
// the leader (0 for a queue without one).
func committed(ctx context.Context, tc *brokertest.Cluster, group, topic string, n int) int64 {
	addr, err := tc.LeaderAddr(ctx)
	if err != nil {
		return -1
	}
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	var sum int64
	for q := 0; q < n; q++ {
		h := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: int32(q)}
		resp, err := rc.Invoke(ctx, addr, h.Request())
		if err != nil {
			return -1
		}
		if resp.Code == remoting.Success {
			off, _ := remoting.ExtInt(resp.ExtFields, "offset")
			sum += off
		}
	}
	return sum
}

func TestTheirProducerOurPushConsumer(t *testing.T) {
	tc, ns, ctx := startGroup(t, 60*time.Second)
	const topic = "TheirsToOurs"
	createQueues(t, ctx, tc, topic, 4)
	p := startProducer(t, ns, "theirs-pg")
	var mu sync.Mutex
	got := map[string]*client.MessageExt{}
	c := ourPush(t, ns, "ours-cg", "ours-c", topic, func(_ context.Context, m *client.MessageExt) client.ConsumeResult {
		mu.Lock()
		defer mu.Unlock()
		got[string(m.Body)] = m
		return client.ConsumeSuccess
	})
	waitFor(t, ctx, "our consumer holding the queues", func() bool { return held(c, topic) == 4 })
	want := map[string]string{}
	for i := range 30 {
		body := fmt.Sprintf("theirs-%d", i)
		msg := primitive.NewMessage(topic, []byte(body))
		msg.WithTag("TagX")
		res, err := p.SendSync(ctx, msg)
		if err != nil {
			t.Fatal(err)
		}
		want[body] = res.MsgID
	}
	waitFor(t, ctx, "our consumer consuming theirs", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == len(want)
	})
	mu.Lock()
	defer mu.Unlock()
	for b, id := range want {
		if m := got[b]; m == nil || m.MsgID != id || m.Tag() != "TagX" || m.Topic != topic {
			t.Fatalf("%s: got %+v, sent id %s", b, m, id)
		}
	}
}

// A group with one of our consumers and one of theirs shares the queues:
// every message is consumed, each by exactly one member.
func TestMixedConsumerGroup(t *testing.T) {
	tc, ns, ctx := startGroup(t, 90*time.Second)
	const topic, group = "MixedGroup", "mixed-cg"
	createQueues(t, ctx, tc, topic, 4)
	col := newCollector()
	ours := ourPush(t, ns, group, "mixed-ours", topic, ourHandler(col, "ours"))
	waitFor(t, ctx, "ours holding every queue", func() bool { return held(ours, topic) == 4 })
	// Theirs joins: the broker tells ours, which gives half away at once;
	// theirs takes its half on its first rebalance, so the two never hold
	// a queue together.
	theirs := startPush(t, ns, group, "mixed-theirs", topic, consumer.Clustering, col.handler("theirs"))
	defer theirs.Shutdown()
	waitFor(t, ctx, "ours holding half the queues", func() bool { return held(ours, topic) == 2 })

	p := ourProducer(t, ns)
	want := map[string]bool{}
	for i := range 40 {
		body := fmt.Sprintf("mixed-%d", i)
		if _, err := p.Send(ctx, &client.Message{Topic: topic, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
		want[body] = true
	}
	waitFor(t, ctx, "every message consumed", func() bool { return col.consumedAll(want) })
	for b, n := range col.union() {
		if n != 1 {
			t.Fatalf("%s consumed %d times", b, n)
		}
	}
	if col.per("ours") == 0 || col.per("theirs") == 0 {
		t.Fatalf("ours consumed %d, theirs %d", col.per("ours"), col.per("theirs"))
	}
}
