package compat

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/remoting"
)

// txListener decides by the body's first word: "commit", "rollback",
// "check-commit" (unknown, then commit when checked) or anything else
// (unknown, also when checked). It counts checks per body.
type txListener struct {
	name   string
	onExec func(body string)
	mu     sync.Mutex
	checks map[string]int
}

func (l *txListener) decide(body string, checking bool) primitive.LocalTransactionState {
	word, _, _ := strings.Cut(body, " ")
	switch {
	case word == "commit", word == "check-commit" && checking:
		return primitive.CommitMessageState
	case word == "rollback":
		return primitive.RollbackMessageState
	}
	return primitive.UnkonwnState
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	if l.onExec != nil {
		l.onExec(string(m.Body))
	}
	return l.decide(string(m.Body), false)
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	if l.checks == nil {
		l.checks = map[string]int{}
	}
	l.checks[string(m.Body)]++
	l.mu.Unlock()
	return l.decide(string(m.Body), true)
}

func (l *txListener) checksOf(body string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checks[body]
}

func startTxProducer(t *testing.T, ns []string, instance string, l *txListener) rocketmq.TransactionProducer {
	t.Helper()
	p, err := rocketmq.NewTransactionProducer(l, producer.WithNameServer(ns), producer.WithGroupName("compat-tx-pg"),
		producer.WithInstanceName(instance), producer.WithRetry(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// waitProducerKnown waits until the leader lists instance among the
// producers of compat-tx-pg (GET_PRODUCER_CONNECTION_LIST): the real client
// heartbeats first 1 s after Start, and a check-back needs a producer.
func waitProducerKnown(t *testing.T, ctx context.Context, tc *brokertest.Cluster, instance string) {
	t.Helper()
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	waitFor(t, ctx, "the leader knowing producer "+instance, func() bool {
		addr, err := tc.LeaderAddr(ctx)
		if err != nil {
			return false
		}
		resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(remoting.GetProducerConnectionList,
			map[string]string{"producerGroup": "compat-tx-pg"}, nil))
		return err == nil && resp.Code == remoting.Success && strings.Contains(string(resp.Body), "@"+instance)
	})
}

// storedBodies reads topic's queue 0 on the leader: body → copies.
func storedBodies(t *testing.T, ctx context.Context, tc *brokertest.Cluster, topic string) map[string]int {
	t.Helper()
	addr, err := tc.LeaderAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	out := map[string]int{}
	for off := int64(0); ; {
		resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(remoting.PullMessage, map[string]string{
			"consumerGroup": "compat-tx-reader", "topic": topic, "queueId": "0", "queueOffset": strconv.FormatInt(off, 10),
			"maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*",
			"subVersion": "0", "expressionType": "TAG"}, nil))
		if err != nil {
			// A leader just killed: read again later.
			return nil
		}
		if resp.Code != remoting.Success {
			return out
		}
		msgs, err := message.DecodeRecords(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			out[string(m.Body)]++
		}
		next, err := remoting.ExtInt(resp.ExtFields, "nextBeginOffset")
		if err != nil || next <= off {
			t.Fatalf("nextBeginOffset %d after %d: %v", next, off, err)
		}
		off = next
	}
}

// createOneQueueTopic creates topic with one queue on the leader.
func createOneQueueTopic(t *testing.T, ctx context.Context, tc *brokertest.Cluster, topic string) {
	t.Helper()
	addr, err := tc.LeaderAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("create %s: %v %+v", topic, err, resp)
	}
	waitRoute(t, ctx, tc, topic)
}

func fastTxChecks(_ int, c *broker.Config) {
	c.TransactionTimeout = 300 * time.Millisecond
	c.TransactionCheckInterval = 100 * time.Millisecond
}

// TestRealClientTransactions: with rocketmq-client-go's TransactionProducer,
// commit is delivered once; rollback never; unknown is checked back and
// its commit delivered once; unknown forever is checked 15 times and then
// discarded; when the sender is gone another producer of its group
// answers the check. A push consumer of the real client receives exactly
// the committed messages.
func TestRealClientTransactions(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, fastTxChecks)
	ns := []string{tc.NamesrvAddr()}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	waitRoute(t, ctx, tc, "TBW102")
	const topic = "CompatTx"
	createOneQueueTopic(t, ctx, tc, topic)

	col := newCollector()
	c := startPush(t, ns, freshGroup("compat-tx-cg"), "tx-c1", topic, consumer.Clustering, col.handler("c1"))
	defer c.Shutdown()

	l1 := &txListener{name: "p1"}
	p1 := startTxProducer(t, ns, "tx-p1", l1)
	// The real client heartbeats 1 s after Start and then every 30 s, to
	// the brokers of the routes it knows: the first transaction, at once,
	// makes the leader known to it in time for that first heartbeat.
	sendTx(t, ctx, p1, topic, "commit 1")
	waitProducerKnown(t, ctx, tc, "tx-p1")
	for _, body := range []string{"rollback 1", "check-commit 1", "unknown forever"} {
		res, err := p1.SendMessageInTransaction(ctx, primitive.NewMessage(topic, []byte(body)))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("%s: %+v %v", body, res, err)
		}
	}
	waitFor(t, ctx, "commit 1 and check-commit 1 consumed", func() bool {
		u := col.union()
		return u["commit 1"] >= 1 && u["check-commit 1"] >= 1
	})
	waitFor(t, ctx, "unknown forever checked 15 times and discarded", func() bool {
		return storedBodies(t, ctx, tc, "TRANS_CHECK_MAX_TIME_TOPIC")["unknown forever"] == 1
	})
	if n := l1.checksOf("unknown forever"); n != 15 {
		t.Fatalf("unknown forever checked %d times, want 15", n)
	}
	if n := l1.checksOf("check-commit 1"); n < 1 {
		t.Fatalf("check-commit 1 checked %d times", n)
	}

	// The sender goes away; another member of its group answers.
	if _, err := p1.SendMessageInTransaction(ctx, primitive.NewMessage(topic, []byte("check-commit 2"))); err != nil {
		t.Fatal(err)
	}
	_ = p1.Shutdown()
	l2 := &txListener{name: "p2"}
	p2 := startTxProducer(t, ns, "tx-p2", l2)
	sendTx(t, ctx, p2, topic, "commit 2")
	waitProducerKnown(t, ctx, tc, "tx-p2")
	waitFor(t, ctx, "check-commit 2 answered by p2 and consumed", func() bool { return col.union()["check-commit 2"] >= 1 })
	if l2.checksOf("check-commit 2") < 1 {
		t.Fatal("p2 was not asked")
	}

	stored := storedBodies(t, ctx, tc, topic)
	want := map[string]int{"commit 1": 1, "check-commit 1": 1, "check-commit 2": 1, "commit 2": 1}
	for body, n := range want {
		if stored[body] != n {
			t.Fatalf("stored %v, want %v", stored, want)
		}
	}
	if len(stored) != len(want) {
		t.Fatalf("stored %v, want %v", stored, want)
	}
	waitFor(t, ctx, "commit 2 consumed", func() bool { return col.union()["commit 2"] >= 1 })
	for body, n := range col.union() {
		if n != 1 || want[body] == 0 {
			t.Fatalf("consumed %v", col.union())
		}
	}
}

// TestRealClientTransactionLeaderKill: the leader is killed between a
// half message and its END_TRANSACTION, and (after that node is back)
// right after an END_TRANSACTION was written: each committed message is
// stored exactly once (the END reached the leader, or the next leader's
// check-back did, once the producer's periodic heartbeat made it known:
// up to 30 s with the real client).
func TestRealClientTransactionLeaderKill(t *testing.T) {
	// A check counts even when the leader knows no producer to ask (as
	// Java's), and a new leader hears from the real client's producer only
	// at its next 30 s heartbeat: the checks must outlast that.
	tc := brokertest.StartCluster(t, 3, func(_ int, c *broker.Config) {
		c.TransactionTimeout = 300 * time.Millisecond
		c.TransactionCheckInterval = time.Second
		c.TransactionCheckMax = 150
	})
	ns := []string{tc.NamesrvAddr()}
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	waitRoute(t, ctx, tc, "TBW102")
	const topic = "CompatTxKill"
	createOneQueueTopic(t, ctx, tc, topic)
	killLeader := func() string {
		n, err := tc.Raft.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tc.Kill(n.ID)
		return n.ID
	}
	var killed atomic.Value
	l := &txListener{onExec: func(body string) {
		if body == "commit before-end" && killed.CompareAndSwap(nil, "") {
			killed.Store(killLeader())
		}
	}}
	p := startTxProducer(t, ns, "tx-kill", l)
	sendTx(t, ctx, p, topic, "commit warm-up")
	waitProducerKnown(t, ctx, tc, "tx-kill")
	sendTx(t, ctx, p, topic, "commit before-end")
	waitFor(t, ctx, "commit before-end stored on the new leader", func() bool {
		return storedBodies(t, ctx, tc, topic)["commit before-end"] >= 1
	})
	tc.Restart(killed.Load().(string))
	waitRoute(t, ctx, tc, topic)
	waitFor(t, ctx, "a half message accepted by the new leader", func() bool {
		res, err := p.SendMessageInTransaction(ctx, primitive.NewMessage(topic, []byte("commit after-end")))
		return err == nil && res.Status == primitive.SendOK
	})
	killLeader() // its END was written one-way just before
	waitFor(t, ctx, "commit after-end stored on the next leader", func() bool {
		return storedBodies(t, ctx, tc, topic)["commit after-end"] >= 1
	})
	// Once the leader's check-back has passed every half message, no
	// transaction is undecided: nothing can be committed again.
	waitFor(t, ctx, "no transaction undecided", func() bool { return noPendingTransactions(ctx, tc) })
	stored := storedBodies(t, ctx, tc, topic)
	if stored["commit warm-up"] != 1 || stored["commit before-end"] != 1 || stored["commit after-end"] != 1 {
		t.Fatalf("stored %v", stored)
	}
}

// sendTx sends body in a transaction, which must be stored.
func sendTx(t *testing.T, ctx context.Context, p rocketmq.TransactionProducer, topic, body string) {
	t.Helper()
	res, err := p.SendMessageInTransaction(ctx, primitive.NewMessage(topic, []byte(body)))
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("%s: %+v %v", body, res, err)
	}
}

// noPendingTransactions reports whether the leader's check progress (the
// offset of CID_SYS_RMQ_TRANS on the half topic) has reached the end of
// the half queue: every half message is then decided or discarded.
func noPendingTransactions(ctx context.Context, tc *brokertest.Cluster) bool {
	addr, err := tc.LeaderAddr(ctx)
	if err != nil {
		return false
	}
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	q := map[string]string{"topic": "RMQ_SYS_TRANS_HALF_TOPIC", "queueId": "0"}
	resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(remoting.GetMaxOffset, q, nil))
	if err != nil || resp.Code != remoting.Success {
		return false
	}
	end, err := remoting.ExtInt(resp.ExtFields, "offset")
	if err != nil {
		return false
	}
	resp, err = rc.Invoke(ctx, addr, remoting.NewRequest(remoting.QueryConsumerOffset,
		map[string]string{"consumerGroup": "CID_SYS_RMQ_TRANS", "topic": "RMQ_SYS_TRANS_HALF_TOPIC", "queueId": "0"}, nil))
	if err != nil || resp.Code != remoting.Success {
		return false
	}
	progress, err := remoting.ExtInt(resp.ExtFields, "offset")
	return err == nil && progress >= end
}
