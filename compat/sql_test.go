package compat

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestRealClientSQL92 subscribes a push consumer with an SQL92 selector
// over user properties and the tag: exactly the matching messages arrive.
func TestRealClientSQL92(t *testing.T) {
	_, ns, ctx := startGroup(t, 60*time.Second)
	const topic = "SQLCompatTopic"
	p := startProducer(t, ns, "sql-pg")
	want := map[string]bool{}
	send := func(i int) {
		body := fmt.Sprintf("sql-%d", i)
		msg := primitive.NewMessage(topic, []byte(body))
		msg.WithTag([]string{"TagA", "TagB"}[i%2])
		msg.WithProperty("a", strconv.Itoa(i%10))
		if _, err := p.SendSync(ctx, msg); err != nil {
			t.Fatal(err)
		}
		if i%10 >= 2 && i%10 <= 5 && i%2 == 0 {
			want[body] = true
		}
	}
	send(0) // creates the topic, which the consumer needs to subscribe
	col := newCollector()
	group := freshGroup("sql-cg")
	ensureRetryTopic(t, ns, group)
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer(ns), consumer.WithGroupName(group),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithInstance("sql-c1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: "a BETWEEN 2 AND 5 AND TAGS = 'TagA'"},
		col.handler("c1")); err != nil {
		t.Fatal(err)
	}
	startBalanced(t, c, group, "sql-c1", topic, "%RETRY%"+group)
	defer c.Shutdown()
	for i := 1; i < 60; i++ {
		send(i)
	}
	waitFor(t, ctx, "every matching message consumed", func() bool { return col.consumedAll(want) })
	for body := range col.union() {
		if !want[body] {
			t.Errorf("%s delivered but does not match the selector", body)
		}
	}
	t.Logf("%d of 60 messages matched and were consumed", len(want))
}
