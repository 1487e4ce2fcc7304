package compat

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/remoting"
)

// TestRealClientDelayAndRetry sends a message with WithDelayTimeLevel and
// consumes it only after its delay, then has the consumer ask for a retry
// (ConsumeRetryLater): the message comes back through the group's retry
// topic after the retry's delay level, with its id, and is not seen again
// once consumed.
func TestRealClientDelayAndRetry(t *testing.T) {
	levels := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}
	tc := brokertest.StartCluster(t, 3, func(_ int, c *broker.Config) { c.DelayLevels = levels })
	ns := []string{tc.NamesrvAddr()}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitRoute(t, ctx, tc, "TBW102")
	const topic = "DelayCompatTopic"
	p := startProducer(t, ns, "delay-pg")
	if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("create"))); err != nil {
		t.Fatal(err)
	}

	type seen struct {
		at               time.Time
		bornAt, storedAt int64
		reconsumeTimes   int32
		msgID            string
	}
	var mu sync.Mutex
	deliveries := map[string][]seen{}
	// The group's retry topic exists before the consumer starts: a consumer
	// that finds no route for it at start waits for its next rebalance and
	// route refresh (up to 50 s) before it pulls retries.
	group := freshGroup("delay-cg")
	addr, err := tc.LeaderAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": "%RETRY%" + group, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("creating the retry topic: %v %+v", err, resp)
	}
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer(ns), consumer.WithGroupName(group),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithInstance("delay-c1"))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		result := consumer.ConsumeSuccess
		for _, m := range msgs {
			b := string(m.Body)
			deliveries[b] = append(deliveries[b], seen{time.Now(), m.BornTimestamp, m.StoreTimestamp, m.ReconsumeTimes, m.MsgId})
			if b == "retry-me" && len(deliveries[b]) == 1 {
				result = consumer.ConsumeRetryLater
			}
		}
		return result, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	startBalanced(t, c, group, "delay-c1", topic, "%RETRY%"+group)
	defer c.Shutdown()
	count := func(b string) int {
		mu.Lock()
		defer mu.Unlock()
		return len(deliveries[b])
	}
	waitFor(t, ctx, "the consumer running", func() bool { return count("create") > 0 })

	msg := primitive.NewMessage(topic, []byte("delayed"))
	msg.WithDelayTimeLevel(2)
	sent := time.Now()
	if _, err := p.SendSync(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("retry-me"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the delayed message", func() bool { return count("delayed") > 0 })
	waitFor(t, ctx, "the retried message back", func() bool { return count("retry-me") >= 2 })

	mu.Lock()
	defer mu.Unlock()
	// The delivered copy is stored once the delay has passed since the
	// parked one was (born <= parked), as the broker's clock saw it.
	d := deliveries["delayed"][0]
	if stored := time.Duration(d.storedAt-d.bornAt) * time.Millisecond; stored < levels[1] {
		t.Errorf("the delayed message was delivered %v after it was born, before its %v delay", stored, levels[1])
	}
	r := deliveries["retry-me"]
	if r[1].reconsumeTimes != 1 || r[1].msgID != r[0].msgID {
		t.Errorf("retry: first %+v, second %+v", r[0], r[1])
	}
	t.Logf("delayed message consumed %v after its send (level 2 = %v); retry came back %v after the first attempt",
		d.at.Sub(sent).Round(time.Millisecond), levels[1], r[1].at.Sub(r[0].at).Round(time.Millisecond))
}
