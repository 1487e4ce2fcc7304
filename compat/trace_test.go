package compat

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/client"
)

// TestRealClientTrace: rocketmq-client-go with tracing on, against a group
// that creates the trace topic (traceTopicEnable). The producer's and the
// consumer's trace records are stored, and the admin API (mqadmin
// queryMsgTraceById) reads every message's path back: sent (Pub, with the
// storing broker), delivered (SubBefore) and consumed (SubAfter, success).
func TestRealClientTrace(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, func(_ int, c *broker.Config) { c.TraceTopic = client.DefaultTraceTopic })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	waitRoute(t, ctx, tc, "TBW102")
	waitRoute(t, ctx, tc, client.DefaultTraceTopic)
	ns := []string{tc.NamesrvAddr()}
	const topic = "CompatTraceTopic"
	createTopic(t, ctx, ns, topic)
	trace := func(group string) *primitive.TraceConfig {
		return &primitive.TraceConfig{GroupName: group, Access: primitive.Local, NamesrvAddrs: ns}
	}

	p, err := rocketmq.NewProducer(producer.WithNameServer(ns), producer.WithGroupName("compat-trace-pg"),
		producer.WithInstanceName("compat-trace-p"), producer.WithRetry(2), producer.WithTrace(trace("compat-trace-pg")))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Shutdown() }()
	const n = 5
	ids := make([]string, 0, n)
	for i := 0; i < n; i++ {
		msg := primitive.NewMessage(topic, []byte(fmt.Sprintf("traced %d", i)))
		msg.WithTag("TagT")
		msg.WithKeys([]string{fmt.Sprintf("trace-key-%d", i)})
		r, err := p.SendSync(ctx, msg)
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		ids = append(ids, r.MsgID)
	}

	ensureRetryTopic(t, ns, "compat-trace-cg")
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer(ns), consumer.WithGroupName("compat-trace-cg"),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithInstance("compat-trace-c"),
		consumer.WithTrace(trace("compat-trace-cg")))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{}, func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	startBalanced(t, c, "compat-trace-cg", "compat-trace-c", topic, "%RETRY%compat-trace-cg")
	defer func() { _ = c.Shutdown() }()

	a, err := client.NewAdmin(client.WithAdminNameServers(ns...))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, id := range ids {
		var last []client.TraceEvent
		var lastErr error
		waitFor(t, ctx, "the trace of "+id, func() bool {
			last, lastErr = a.MessageTrace(ctx, "", id)
			if lastErr != nil {
				if !errors.Is(lastErr, client.ErrNoSuchMessage) && !errors.Is(lastErr, client.ErrNoSuchTopic) {
					t.Fatalf("trace of %s: %v", id, lastErr)
				}
				return false
			}
			seen := map[string]bool{}
			for _, e := range last {
				switch {
				case e.Type == "Pub" && e.Group == "compat-trace-pg" && e.Topic == topic && e.Status == "success" && e.StoreHost != "":
					seen["Pub"] = true
				case e.Type == "SubBefore" && e.Group == "compat-trace-cg":
					seen["SubBefore"] = true
				case e.Type == "SubAfter" && e.Status == "success":
					seen["SubAfter"] = true
				}
			}
			return seen["Pub"] && seen["SubBefore"] && seen["SubAfter"]
		})
		t.Logf("trace of %s: %+v", id, last)
	}
}
