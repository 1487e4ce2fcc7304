package compat

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/protocol"
)

// TestRealClientTimerMessages sends messages with WithDelayTimestamp (the
// Go client's TIMER_DELIVER_MS) from the real producer, out of due order,
// and has a real push consumer receive each once, not before its time and
// in due order; the admin listing sees them while they wait.
func TestRealClientTimerMessages(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	ns := []string{tc.NamesrvAddr()}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitRoute(t, ctx, tc, "TBW102")
	const topic = "TimerCompatTopic"
	admin, err := client.NewAdmin(client.WithAdminNameServers(ns...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	// One queue, so that the consumer's order is the delivery order.
	if _, err := admin.CreateTopic(ctx, client.TopicConfig{Topic: topic, ReadQueues: 1, WriteQueues: 1}, client.Target{}); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, ctx, tc, topic)
	p := startProducer(t, ns, "timer-pg")
	if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("create"))); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	got := map[string][]time.Time{}
	var order []string
	group := freshGroup("timer-cg")
	ensureRetryTopic(t, ns, group)
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer(ns), consumer.WithGroupName(group),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithInstance("timer-c1"))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			b := string(m.Body)
			got[b] = append(got[b], time.Now())
			order = append(order, b)
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	startBalanced(t, c, group, "timer-c1", topic, "%RETRY%"+group)
	defer c.Shutdown()
	count := func(b string) int {
		mu.Lock()
		defer mu.Unlock()
		return len(got[b])
	}
	waitFor(t, ctx, "the consumer running", func() bool { return count("create") > 0 })

	base := time.Now()
	due := map[string]time.Time{"t3": base.Add(3 * time.Second), "t1": base.Add(1500 * time.Millisecond), "t2": base.Add(2200 * time.Millisecond)}
	for _, b := range []string{"t3", "t1", "t2"} {
		m := primitive.NewMessage(topic, []byte(b))
		m.WithDelayTimestamp(due[b])
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	// An election on a loaded machine may leave the group without a
	// leader for a moment: the admin call is asked again until one leads.
	var pending protocol.PendingTimers
	waitFor(t, ctx, "the leader's pending timers", func() bool {
		pending, err = admin.PendingTimers(ctx, "", 10)
		if err != nil && !errors.Is(err, client.ErrLeaderNotFound) {
			t.Fatal(err)
		}
		return err == nil
	})
	if pending.Count == 0 || pending.Count > 3 || len(pending.Timers) == 0 || pending.Timers[0].Topic != topic {
		t.Fatalf("pending timers %+v", pending)
	}
	waitFor(t, ctx, "every timer message consumed", func() bool { return count("t1") > 0 && count("t2") > 0 && count("t3") > 0 })

	mu.Lock()
	defer mu.Unlock()
	var timed []string
	for _, b := range order {
		if b != "create" {
			timed = append(timed, b)
		}
	}
	if len(timed) != 3 || timed[0] != "t1" || timed[1] != "t2" || timed[2] != "t3" {
		t.Fatalf("consumed %v, want t1 t2 t3 once each", timed)
	}
	for b, at := range got {
		if d, ok := due[b]; ok && at[0].Before(d) {
			t.Errorf("%s consumed %v before its time", b, d.Sub(at[0]))
		} else if ok {
			t.Logf("%s consumed %v after its time", b, at[0].Sub(d).Round(time.Millisecond))
		}
	}
}
