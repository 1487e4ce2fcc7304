package compat

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/internal/testwait"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

func startProducer(t *testing.T, ns []string, name string) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(producer.WithNameServer(ns), producer.WithGroupName(name), producer.WithRetry(3),
		producer.WithInstanceName(name))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// collector counts consumed bodies per consumer.
type collector struct {
	mu   sync.Mutex
	seen map[string]map[string]int // consumer -> body -> count
}

func newCollector() *collector { return &collector{seen: map[string]map[string]int{}} }

func (c *collector) handler(name string) func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.seen[name] == nil {
			c.seen[name] = map[string]int{}
		}
		for _, m := range msgs {
			c.seen[name][string(m.Body)]++
		}
		return consumer.ConsumeSuccess, nil
	}
}

// union returns every body consumed by anyone, with total counts.
func (c *collector) union() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for _, m := range c.seen {
		for b, n := range m {
			out[b] += n
		}
	}
	return out
}

// consumedAll reports whether every body in want was consumed by anyone.
func (c *collector) consumedAll(want map[string]bool) bool {
	u := c.union()
	for b := range want {
		if u[b] == 0 {
			return false
		}
	}
	return true
}

func (c *collector) per(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen[name])
}

// describe, if set by a test, adds state to a timeout message.
var describe = func() string { return "" }

func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	testwait.Ctx(t, ctx, what, cond, func() string { return describe() })
}

func startPush(t *testing.T, ns []string, group, instance, topic string, model consumer.MessageModel, h func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error)) rocketmq.PushConsumer {
	t.Helper()
	if model == consumer.Clustering {
		ensureRetryTopic(t, ns, group)
	}
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer(ns), consumer.WithGroupName(group),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithInstance(instance),
		consumer.WithConsumerModel(model))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{}, h); err != nil {
		t.Fatal(err)
	}
	first := members.join(group)
	if model != consumer.Clustering {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// The first member of a group gets every queue, the retry queue too;
	// a later one at least some of the topic's.
	topics := []string{topic}
	if first {
		topics = append(topics, "%RETRY%"+group)
	}
	startBalanced(t, c, group, instance, topics...)
	return c
}

func TestRealClientSendKinds(t *testing.T) {
	_, ns, ctx := startGroup(t, 90*time.Second)
	p := startProducer(t, ns, "kinds-pg")
	const topic = "KindsTopic"
	want := map[string]bool{}

	// sync, including a body large enough to be compressed (>= 4 KiB)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1024)
	for _, body := range [][]byte{[]byte("sync-1"), big} {
		if _, err := p.SendSync(ctx, primitive.NewMessage(topic, body)); err != nil {
			t.Fatalf("sync: %v", err)
		}
		want[string(body)] = true
	}
	// async
	var asyncErr atomic.Value
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		body := fmt.Sprintf("async-%d", i)
		want[body] = true
		err := p.SendAsync(ctx, func(_ context.Context, r *primitive.SendResult, err error) {
			defer wg.Done()
			if err != nil {
				asyncErr.Store(err)
			}
		}, primitive.NewMessage(topic, []byte(body)))
		if err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if e := asyncErr.Load(); e != nil {
		t.Fatalf("async: %v", e)
	}
	// one-way
	for i := 0; i < 5; i++ {
		body := fmt.Sprintf("oneway-%d", i)
		want[body] = true
		if err := p.SendOneWay(ctx, primitive.NewMessage(topic, []byte(body))); err != nil {
			t.Fatal(err)
		}
	}
	// batch
	var batch []*primitive.Message
	for i := 0; i < 5; i++ {
		body := fmt.Sprintf("batch-%d", i)
		want[body] = true
		batch = append(batch, primitive.NewMessage(topic, []byte(body)))
	}
	if _, err := p.SendSync(ctx, batch...); err != nil {
		t.Fatalf("batch: %v", err)
	}

	col := newCollector()
	c := startPush(t, ns, "kinds-cg", "kinds-c1", topic, consumer.Clustering, col.handler("c1"))
	defer c.Shutdown()
	waitFor(t, ctx, "every kind of send consumed", func() bool { return col.consumedAll(want) })
}

func TestRealClientConsumerGroupSharesAndResumes(t *testing.T) {
	tc, ns, ctx := startGroup(t, 120*time.Second)
	p := startProducer(t, ns, "share-pg")
	const topic = "ShareTopic"
	send := func(prefix string, n int) {
		for i := 0; i < n; i++ {
			if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(fmt.Sprintf("%s-%d", prefix, i)))); err != nil {
				t.Fatal(err)
			}
		}
	}
	send("first", 40)
	col := newCollector()
	c1 := startPush(t, ns, "share-cg", "share-c1", topic, consumer.Clustering, col.handler("c1"))
	c2 := startPush(t, ns, "share-cg", "share-c2", topic, consumer.Clustering, col.handler("c2"))
	waitFor(t, ctx, "the first 40 consumed", func() bool { return len(col.union()) >= 40 })
	send("second", 40)
	waitFor(t, ctx, "all 80 consumed and both consumers busy", func() bool {
		return len(col.union()) >= 80 && col.per("c1") > 0 && col.per("c2") > 0
	})
	// Offsets are committed (every 5 s by the client) and survive a restart
	// of the group: once the leader holds the committed offsets of every
	// queue, both stop and a new member gets only new messages.
	waitFor(t, ctx, "offsets committed through raft", func() bool {
		leader, err := tc.Raft.Leader(ctx)
		if err != nil {
			return false
		}
		g := leader.Group()
		for q := int32(0); q < 16; q++ {
			max, err := messagestore.Of(g).MaxOffset(topic, q)
			if err != nil || max == 0 {
				continue
			}
			if off, ok := g.Metadata().Offset("share-cg", topic, q); !ok || off < max {
				return false
			}
		}
		return true
	})
	shutdownMembers(t, tc, ns, "share-cg", c1, c2)
	send("third", 10)
	col2 := newCollector()
	c3 := startPush(t, ns, "share-cg", "share-c3", topic, consumer.Clustering, col2.handler("c3"))
	defer c3.Shutdown()
	waitFor(t, ctx, "the third batch consumed after restart", func() bool {
		u := col2.union()
		for i := 0; i < 10; i++ {
			if u[fmt.Sprintf("third-%d", i)] == 0 {
				return false
			}
		}
		return true
	})
	redelivered := 0
	for b := range col2.union() {
		if !strings.HasPrefix(b, "third-") {
			redelivered++
		}
	}
	if redelivered > 0 {
		t.Logf("%d earlier messages were delivered again after the restart (commit race at shutdown)", redelivered)
	}
	if redelivered > 20 {
		t.Fatalf("%d earlier messages delivered again: offsets were not resumed", redelivered)
	}
}

func TestRealClientBroadcasting(t *testing.T) {
	_, ns, ctx := startGroup(t, 90*time.Second)
	p := startProducer(t, ns, "bc-pg")
	for i := 0; i < 20; i++ {
		if _, err := p.SendSync(ctx, primitive.NewMessage("BcTopic", []byte(fmt.Sprintf("bc-%d", i)))); err != nil {
			t.Fatal(err)
		}
	}
	col := newCollector()
	describe = func() string { return fmt.Sprintf("c1 has %d, c2 has %d", col.per("c1"), col.per("c2")) }
	defer func() { describe = func() string { return "" } }()
	// Broadcasting offsets live in files under the client's home directory
	// (~/.rocketmq_offsets, keyed by client and group): a group name of its
	// own keeps an earlier run's offsets out of this one.
	group := fmt.Sprintf("bc-cg-%d", time.Now().UnixNano())
	c1 := startPush(t, ns, group, "bc-c1", "BcTopic", consumer.BroadCasting, col.handler("c1"))
	defer c1.Shutdown()
	c2 := startPush(t, ns, group, "bc-c2", "BcTopic", consumer.BroadCasting, col.handler("c2"))
	defer c2.Shutdown()
	waitFor(t, ctx, "both broadcasting consumers get all 20", func() bool { return col.per("c1") >= 20 && col.per("c2") >= 20 })
	t.Logf("c1 %d c2 %d", col.per("c1"), col.per("c2"))
}

func TestRealClientSurvivesLeaderKill(t *testing.T) {
	tc, ns, ctx := startGroup(t, 120*time.Second)
	p := startProducer(t, ns, "kill-pg")
	col := newCollector()
	acked := map[string]bool{}
	send := func(i int) error {
		body := fmt.Sprintf("m-%d", i)
		sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
		defer scancel()
		_, err := p.SendSync(sctx, primitive.NewMessage("KillTopic", []byte(body)))
		if err == nil {
			acked[body] = true
		}
		return err
	}
	for i := 0; i < 50; i++ {
		if err := send(i); err != nil {
			t.Fatal(err)
		}
	}
	c := startPush(t, ns, "kill-cg", "kill-c1", "KillTopic", consumer.Clustering, col.handler("c1"))
	defer c.Shutdown()
	leader, err := tc.Raft.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tc.Kill(leader.ID)
	killed := time.Now()
	// The real client learns the new leader from its 30 s route refresh
	// (followers answer 14 meanwhile, or the dead address refuses): sends
	// fail until then and must resume after it.
	var firstAfter time.Duration
	failures := 0
	for i := 50; firstAfter == 0; i++ {
		if time.Since(killed) > 75*time.Second {
			t.Fatalf("no send acknowledged %v after the leader was killed (%d failed)", time.Since(killed), failures)
		}
		if err := send(i); err != nil {
			failures++
			time.Sleep(100 * time.Millisecond) // pace the retries of a client that has not refreshed its route
			continue
		}
		firstAfter = time.Since(killed)
	}
	for i := 1000; i < 1050; i++ {
		if err := send(i); err != nil {
			t.Fatalf("send after failover: %v", err)
		}
	}
	waitFor(t, ctx, "every acknowledged message consumed", func() bool { return col.consumedAll(acked) })
	dups := 0
	for _, n := range col.union() {
		if n > 1 {
			dups++
		}
	}
	t.Logf("leader kill: first acked send %v after the kill, %d sends failed, %d acknowledged, %d delivered more than once",
		firstAfter, failures, len(acked), dups)
}

// ensureRetryTopic creates the group's %RETRY% topic and waits for its
// route before a real push consumer starts. Otherwise the consumer picks
// the retry queue up in a later rebalance, which may still run when the
// test shuts the consumer down, and rocketmq-client-go's Shutdown races
// with it (an unsynchronised flag the race detector reports inside the
// client).
func ensureRetryTopic(t *testing.T, ns []string, group string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := client.NewAdmin(client.WithAdminNameServers(ns...))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	retry := "%RETRY%" + group
	if _, err := a.CreateTopic(ctx, client.TopicConfig{Topic: retry, ReadQueues: 1, WriteQueues: 1, Perm: 6}, client.Target{}); err != nil {
		t.Fatalf("creating %s: %v", retry, err)
	}
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	waitFor(t, ctx, "the route of "+retry, func() bool {
		h := protocol.GetRouteInfoRequestHeader{Topic: retry}
		resp, err := rc.Invoke(ctx, ns[0], h.Request())
		return err == nil && resp.Code == remoting.Success
	})
}

// shutdownMembers stops the members of a clustering group. Each member's
// unregister makes the broker send NOTIFY_CONSUMER_IDS_CHANGED to the
// others, and a member whose Shutdown runs while that notice's rebalance
// is still in flight trips the same unsynchronised flag inside
// rocketmq-client-go as ensureRetryTopic avoids. So the group's notices
// are turned off first (the group's notifyConsumerIdsChangedEnable, as an
// operator would) and the change reaches every node (each one notifies
// the clients connected to it), then the members stop one by one.
func shutdownMembers(t *testing.T, tc *brokertest.Cluster, ns []string, group string, cs ...rocketmq.PushConsumer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := client.NewAdmin(client.WithAdminNameServers(ns...))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	cfg := client.DefaultGroupConfig(group)
	cfg.NotifyConsumerIdsChangedEnable = false
	if _, err := a.CreateGroup(ctx, cfg, client.Target{}); err != nil {
		t.Fatalf("turning off %s's change notices: %v", group, err)
	}
	waitFor(t, ctx, "every node with "+group+"'s notices off", func() bool {
		for _, n := range tc.Raft.Up() {
			if g, ok := n.Group().Metadata().Group(group); !ok || g.NotifyConsumerIdsChangedEnable {
				return false
			}
		}
		return true
	})
	for _, c := range cs {
		_ = c.Shutdown()
	}
	members.leave(group, len(cs))
}
