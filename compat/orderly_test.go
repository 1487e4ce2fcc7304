//go:build !race

// The client's orderly push consumer reads a queue's message tree without
// its lock (consumer/process_queue.go takeMessages) while the pull
// goroutine writes it, which the race detector reports in the client
// itself; `make test` runs this file in its pass without -race.

package compat

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/ledgermq/ledgermq/remoting"
)

// lockBatch sends LOCK_BATCH_MQ for queues 0..n-1 of topic as clientID and
// returns the queue ids granted.
func lockBatch(t *testing.T, ctx context.Context, c *remoting.Client, addr, brokerName, group, clientID, topic string, n int) []int {
	t.Helper()
	resp := queueLockRequest(t, ctx, c, remoting.LockBatchMQ, addr, mqSetBody(t, brokerName, group, clientID, topic, n))
	var res struct {
		LockOKMQSet []lockMQ `json:"lockOKMQSet"`
	}
	if err := json.Unmarshal(resp.Body, &res); err != nil {
		t.Fatalf("LOCK_BATCH_MQ answer %q: %v", resp.Body, err)
	}
	var ids []int
	for _, q := range res.LockOKMQSet {
		ids = append(ids, q.QueueID)
	}
	return ids
}

// unlockBatch sends UNLOCK_BATCH_MQ for queues 0..n-1 of topic as
// clientID.
func unlockBatch(t *testing.T, ctx context.Context, c *remoting.Client, addr, brokerName, group, clientID, topic string, n int) {
	t.Helper()
	queueLockRequest(t, ctx, c, remoting.UnlockBatchMQ, addr, mqSetBody(t, brokerName, group, clientID, topic, n))
}

// lockMQ is a MessageQueue as the clients write it.
type lockMQ struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
}

// mqSetBody is the body of LOCK_BATCH_MQ and UNLOCK_BATCH_MQ for queues
// 0..n-1 of topic.
func mqSetBody(t *testing.T, brokerName, group, clientID, topic string, n int) []byte {
	t.Helper()
	req := struct {
		ConsumerGroup string   `json:"consumerGroup"`
		ClientID      string   `json:"clientId"`
		MQSet         []lockMQ `json:"mqSet"`
	}{ConsumerGroup: group, ClientID: clientID}
	for i := 0; i < n; i++ {
		req.MQSet = append(req.MQSet, lockMQ{topic, brokerName, i})
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// queueLockRequest sends a lock or unlock request and checks its answer
// succeeded.
func queueLockRequest(t *testing.T, ctx context.Context, c *remoting.Client, code int32, addr string, body []byte) *remoting.Command {
	t.Helper()
	resp, err := c.Invoke(ctx, addr, &remoting.Command{Code: code, Body: body})
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("request %d: %v %+v", code, err, resp)
	}
	return resp
}

// TestRealClientOrderlyConsumer sends ordered messages (one sharding key
// per order, hashed to a queue) and consumes them with an orderly push
// consumer, which locks its queues on the leader (41) before it consumes:
// every order's steps arrive once each and in order, and another client
// cannot take the locked queues.
func TestRealClientOrderlyConsumer(t *testing.T) {
	tc, ns, ctx := startGroup(t, 90*time.Second)
	const topic, orders, steps = "OrderTopic", 8, 15

	p, err := rocketmq.NewProducer(producer.WithNameServer(ns), producer.WithGroupName("order-pg"),
		producer.WithInstanceName("order-pg"), producer.WithQueueSelector(producer.NewHashQueueSelector()))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	queueOf := map[int]int{}
	for s := 0; s < steps; s++ {
		for o := 0; o < orders; o++ {
			msg := primitive.NewMessage(topic, []byte(fmt.Sprintf("order-%d/step-%d", o, s)))
			msg.WithShardingKey(fmt.Sprintf("order-%d", o))
			res, err := p.SendSync(ctx, msg)
			if err != nil {
				t.Fatalf("send order %d step %d: %v", o, s, err)
			}
			if q, ok := queueOf[o]; ok && q != res.MessageQueue.QueueId {
				t.Fatalf("order %d moved from queue %d to %d", o, q, res.MessageQueue.QueueId)
			}
			queueOf[o] = res.MessageQueue.QueueId
		}
	}

	var mu sync.Mutex
	next := map[int]int{} // order -> next expected step
	var disorder []string
	group := fmt.Sprintf("order-cg-%d", time.Now().UnixNano())
	ensureRetryTopic(t, ns, group)
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer(ns), consumer.WithGroupName(group),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithInstance("order-c1"),
		consumer.WithConsumerOrder(true))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			var o, s int
			if _, err := fmt.Sscanf(string(m.Body), "order-%d/step-%d", &o, &s); err != nil {
				disorder = append(disorder, "unparsable "+string(m.Body))
				continue
			}
			if s != next[o] {
				disorder = append(disorder, fmt.Sprintf("order %d: step %d after %d", o, s, next[o]-1))
			}
			next[o] = s + 1
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The leases live in the leader's memory for its term (broker/locks.go):
	// the leader and term they are taken in, to tell a lost lease from a
	// leader change under a loaded machine.
	reign := func() string {
		l, err := tc.Raft.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s in term %d", l.ID, l.Group().Role().Term)
	}
	locked := reign()
	startBalanced(t, c, group, "order-c1", topic, "%RETRY%"+group)
	defer c.Shutdown()
	waitFor(t, ctx, "every order's steps consumed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for o := 0; o < orders; o++ {
			if next[o] < steps {
				return false
			}
		}
		return true
	})
	mu.Lock()
	if len(disorder) > 0 {
		t.Fatalf("out of order or repeated: %s", strings.Join(disorder, "; "))
	}
	mu.Unlock()

	// The consumer holds its queues on the leader: another client gets none
	// of them, and the broker's answer is the shape the client reads. A
	// new leader, or a new term, starts with no leases (as RocketMQ's);
	// the consumer locks again on its next renewal (every 20 s), which
	// the intruder then waits for, giving back what it took meanwhile.
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	var addr string
	var tried time.Time
	moved := false
	waitFor(t, ctx, "the orderly consumer's queues refused to another client", func() bool {
		if time.Since(tried) < 500*time.Millisecond {
			return false // the consumer's renewal must find its queues free
		}
		tried = time.Now()
		leader, err := tc.Raft.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		addr = tc.Peers[leader.ID]
		got := lockBatch(t, ctx, rc, addr, "broker-a", group, "intruder@1", topic, 4)
		if len(got) == 0 {
			return true
		}
		unlockBatch(t, ctx, rc, addr, "broker-a", group, "intruder@1", topic, 4)
		if now := reign(); now != locked {
			t.Logf("leader %s, then %s: the leases went with the term; waiting for the consumer to lock again", locked, now)
			locked, moved = now, true
		} else if !moved {
			t.Fatalf("another client locked queues %v the orderly consumer holds (leader %s throughout)", got, now)
		}
		return false
	})
	if got := lockBatch(t, ctx, rc, addr, "broker-a", group+"-other", "intruder@1", topic, 4); len(got) != 4 {
		t.Fatalf("a different group got queues %v, want all 4", got)
	}
	t.Logf("%d orders × %d steps consumed in order over queues %s", orders, steps, strconv.Quote(fmt.Sprint(queueOf)))
}
