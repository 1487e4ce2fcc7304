package compat

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/ledgermq/ledgermq/broker/brokertest"
)

func TestMain(m *testing.M) {
	installBalanceLog()
	os.Exit(m.Run())
}

func TestRealClientSendAndPushConsume(t *testing.T) {
	_, ns, ctx := startGroup(t, 60*time.Second)

	p, err := rocketmq.NewProducer(producer.WithNameServer(ns), producer.WithGroupName("compat-pg"), producer.WithRetry(3),
		producer.WithInstanceName("compat-send"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()

	const n = 30
	sent := map[string]bool{}
	for i := 0; i < n; i++ {
		tag := []string{"TagA", "TagB", "TagC"}[i%3]
		body := fmt.Sprintf("hello-%d", i)
		msg := primitive.NewMessage("CompatTopic", []byte(body))
		msg.WithTag(tag)
		msg.WithKeys([]string{fmt.Sprintf("key-%d", i)})
		res, err := p.SendSync(ctx, msg)
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if res.Status != primitive.SendOK || res.OffsetMsgID == "" {
			t.Fatalf("send %d: %+v", i, res)
		}
		if tag != "TagC" {
			sent[body] = true
		}
	}

	var mu sync.Mutex
	got := map[string]int{}
	done := make(chan struct{})
	ensureRetryTopic(t, ns, "compat-cg")
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer(ns), consumer.WithGroupName("compat-cg"),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithInstance("compat-recv"))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe("CompatTopic", consumer.MessageSelector{Type: consumer.TAG, Expression: "TagA || TagB"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if m.GetTags() == "TagC" {
					t.Errorf("filtered tag delivered: %s", m.Body)
				}
				got[string(m.Body)]++
			}
			if len(got) == len(sent) {
				select {
				case <-done:
				default:
					close(done)
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	startBalanced(t, c, "compat-cg", "compat-recv", "CompatTopic", "%RETRY%compat-cg")
	defer c.Shutdown()
	select {
	case <-done:
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("consumed %d of %d messages", len(got), len(sent))
	}
	mu.Lock()
	defer mu.Unlock()
	for b := range sent {
		if got[b] == 0 {
			t.Fatalf("message %s not consumed", b)
		}
	}
}

// waitRoute waits until the name server has a route for topic with a
// leader (brokerId 0), as a client needs before it can send.
// startGroup starts a name server and a 3-node group, waits until the
// leader's TBW102 route is listed, and returns a context that ends after
// timeout or with the test.
func startGroup(t *testing.T, timeout time.Duration) (*brokertest.Cluster, []string, context.Context) {
	t.Helper()
	tc := brokertest.StartCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	waitRoute(t, ctx, tc, "TBW102")
	return tc, []string{tc.NamesrvAddr()}, ctx
}

func waitRoute(t *testing.T, ctx context.Context, tc *brokertest.Cluster, topic string) {
	t.Helper()
	for {
		if r, ok := tc.Namesrv.Table().Route(topic); ok {
			for _, bd := range r.BrokerDatas {
				if _, ok := bd.BrokerAddrs[0]; ok {
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no route with a leader for %s", topic)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
