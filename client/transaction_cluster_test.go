package client

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/message"
)

// bodyListener decides each local transaction and check by the body's
// first word: "commit", "rollback", "unknown", or "check-commit" (unknown
// until checked, then commit). It counts the checks by body.
type bodyListener struct {
	mu      sync.Mutex
	checks  map[string]int
	onExec  func(m *Message)
	checked atomic.Int32
}

func (l *bodyListener) state(body string, checking bool) LocalTransactionState {
	word, _, _ := strings.Cut(body, " ")
	switch word {
	case "commit":
		return TransactionCommit
	case "rollback":
		return TransactionRollback
	case "check-commit":
		if checking {
			return TransactionCommit
		}
	}
	return TransactionUnknown
}

func (l *bodyListener) ExecuteLocalTransaction(_ context.Context, m *Message) LocalTransactionState {
	if l.onExec != nil {
		l.onExec(m)
	}
	return l.state(string(m.Body), false)
}

func (l *bodyListener) CheckLocalTransaction(_ context.Context, m *MessageExt) LocalTransactionState {
	l.mu.Lock()
	if l.checks == nil {
		l.checks = map[string]int{}
	}
	l.checks[string(m.Body)]++
	l.mu.Unlock()
	l.checked.Add(1)
	return l.state(string(m.Body), true)
}

func (l *bodyListener) checksOf(body string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checks[body]
}

// fastChecks makes the leaders check back quickly.
func fastChecks(checkMax int) func(int, *broker.Config) {
	return func(_ int, c *broker.Config) {
		c.TransactionTimeout = 200 * time.Millisecond
		c.TransactionCheckInterval = 100 * time.Millisecond
		c.TransactionCheckMax = checkMax
	}
}

func newTxn(t testing.TB, ns string, l TransactionListener, extra ...Option) *TransactionProducer {
	t.Helper()
	p, err := NewTransactionProducer(l, append([]Option{WithNameServers(ns), WithGroup("txn-pg")}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// bodiesOn reads topic (one queue) on the leader: body → copies.
func bodiesOn(t testing.TB, tc *brokertest.Cluster, topic string) map[string]int {
	t.Helper()
	addr, err := tc.LeaderAddr(ctxGuard(t))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, m := range readQueue(t, testClient(t), addr, topic, 0) {
		out[string(m.Body)]++
	}
	return out
}

// sendMarker sends a plain message to topic and waits until the leader
// serves it: every decision taken before it is then visible.
func sendMarker(t testing.TB, tc *brokertest.Cluster, p *Producer, topic, body string) {
	t.Helper()
	if _, err := p.Send(ctxGuard(t), &Message{Topic: topic, Body: []byte(body)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the marker "+body, func() bool { return bodiesOn(t, tc, topic)[body] == 1 })
}

// Commit delivers the message once, on its topic, as a committed
// transaction message; rollback never delivers; consumers never see the
// half messages; a second END_TRANSACTION for a decided transaction
// changes nothing.
func TestTransactionCommitAndRollbackOnCluster(t *testing.T) {
	tc := startCluster(t, nil)
	rc := testClient(t)
	const topic = "TxnCommit"
	createTopic(t, tc, rc, topic, 1)
	ns := tc.NamesrvAddr()
	p := newTxn(t, ns, &bodyListener{})
	var committed TransactionResult
	for _, body := range []string{"rollback 1", "commit 1"} {
		res, err := p.SendInTransaction(ctxGuard(t), &Message{Topic: topic, Body: []byte(body), Keys: []string{"k-" + body[:1]}})
		if err != nil || res.EndErr != nil {
			t.Fatalf("%s: %+v %v", body, res, err)
		}
		if res.Queue.Topic != topic || res.Queue.QueueID != 0 {
			t.Fatalf("%s: result names queue %v", body, res.Queue)
		}
		if body == "commit 1" {
			committed = res
		}
	}
	sendMarker(t, tc, p.Producer, topic, "marker")
	got := bodiesOn(t, tc, topic)
	if len(got) != 2 || got["commit 1"] != 1 {
		t.Fatalf("delivered %v, want commit 1 and the marker once each", got)
	}
	addr, _ := tc.LeaderAddr(ctxGuard(t))
	for _, m := range readQueue(t, rc, addr, topic, 0) {
		if string(m.Body) != "commit 1" {
			continue
		}
		_, halfOff, _ := message.ParseOffsetMsgID(committed.OffsetMsgID)
		if message.TransactionType(m.SysFlag) != message.SysFlagTransactionCommit || m.Properties[message.PropertyTransactionPrepared] != "" ||
			m.Properties[message.PropertyRealTopic] != "" || m.UniqKey() != committed.MsgID || m.PreparedTransactionOffset != halfOff ||
			m.Properties[message.PropertyKeys] != "k-c" || m.Properties[message.PropertyProducerGroup] != "txn-pg" {
			t.Fatalf("committed message %+v (half at %d)", m, halfOff)
		}
	}
	// The same outcome again, and the opposite one: nothing changes.
	for _, s := range []LocalTransactionState{TransactionCommit, TransactionRollback} {
		if err := p.endTransaction(ctxGuard(t), committed.SendResult, s); err != nil {
			t.Fatalf("repeated END_TRANSACTION (%v): %v", s, err)
		}
	}
	sendMarker(t, tc, p.Producer, topic, "marker 2")
	if got := bodiesOn(t, tc, topic); got["commit 1"] != 1 || len(got) != 3 {
		t.Fatalf("after repeats: %v", got)
	}
	for _, sys := range []string{"RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC"} {
		if _, err := p.Send(ctxGuard(t), &Message{Topic: sys, Body: []byte("x")}); err == nil {
			t.Fatalf("a send to %s was accepted", sys)
		}
	}
}

// An unknown outcome is checked back: the check's commit delivers the
// message once. A producer that is gone is replaced by another of its
// group, which answers.
func TestTransactionCheckBackOnCluster(t *testing.T) {
	tc := startCluster(t, fastChecks(15))
	rc := testClient(t)
	const topic = "TxnCheck"
	createTopic(t, tc, rc, topic, 1)
	ns := tc.NamesrvAddr()
	l1 := &bodyListener{}
	p1 := newTxn(t, ns, l1, WithInstanceName("txn-1"))
	if res, err := p1.SendInTransaction(ctxGuard(t), &Message{Topic: topic, Body: []byte("check-commit 1")}); err != nil || res.State != TransactionUnknown {
		t.Fatalf("%+v %v", res, err)
	}
	waitFor(t, "checked and delivered", func() bool { return bodiesOn(t, tc, topic)["check-commit 1"] == 1 })
	if n := l1.checksOf("check-commit 1"); n < 1 {
		t.Fatalf("checked %d times", n)
	}

	// The sender goes; another member of the group answers.
	res, err := p1.SendInTransaction(ctxGuard(t), &Message{Topic: topic, Body: []byte("check-commit 2")})
	if err != nil {
		t.Fatal(err)
	}
	_ = p1.Close()
	l2 := &bodyListener{}
	p2 := newTxn(t, ns, l2, WithInstanceName("txn-2"))
	// Its first transaction makes it known to the leader (a heartbeat).
	if _, err := p2.SendInTransaction(ctxGuard(t), &Message{Topic: topic, Body: []byte("commit 3")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the other producer's answer delivered", func() bool { return bodiesOn(t, tc, topic)["check-commit 2"] == 1 })
	if l2.checksOf("check-commit 2") < 1 {
		t.Fatalf("p2 was not asked about %s", res.MsgID)
	}
	sendMarker(t, tc, p2.Producer, topic, "marker 2")
	if got := bodiesOn(t, tc, topic); got["check-commit 1"] != 1 || got["check-commit 2"] != 1 || got["commit 3"] != 1 {
		t.Fatalf("delivered %v", got)
	}
}

// A transaction never decided is checked TransactionCheckMax times, then
// discarded: kept in TRANS_CHECK_MAX_TIME_TOPIC, never delivered.
func TestTransactionDiscardedAfterMaxChecks(t *testing.T) {
	tc := startCluster(t, fastChecks(3))
	rc := testClient(t)
	const topic = "TxnDiscard"
	createTopic(t, tc, rc, topic, 1)
	l := &bodyListener{}
	p := newTxn(t, tc.NamesrvAddr(), l)
	if _, err := p.SendInTransaction(ctxGuard(t), &Message{Topic: topic, Body: []byte("unknown forever")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "discarded", func() bool { return bodiesOn(t, tc, "TRANS_CHECK_MAX_TIME_TOPIC")["unknown forever"] == 1 })
	if n := l.checksOf("unknown forever"); n != 3 {
		t.Fatalf("checked %d times, want 3", n)
	}
	sendMarker(t, tc, p.Producer, topic, "marker")
	if got := bodiesOn(t, tc, topic); len(got) != 1 {
		t.Fatalf("delivered %v", got)
	}
}

// The leader dies between the half message and its END_TRANSACTION: the
// END goes to the new leader (the offsets are the same on every replica)
// and the message is delivered once; checks that follow change nothing.
func TestTransactionAcrossLeaderKill(t *testing.T) {
	tc := startCluster(t, fastChecks(15))
	rc := testClient(t)
	const topic = "TxnKill"
	createTopic(t, tc, rc, topic, 1)
	var killed atomic.Bool
	l := &bodyListener{onExec: func(m *Message) {
		if string(m.Body) != "commit across" || !killed.CompareAndSwap(false, true) {
			return
		}
		n, err := tc.Raft.Leader(ctxGuard(t))
		if err != nil {
			t.Error(err)
			return
		}
		tc.Kill(n.ID)
	}}
	p := newTxn(t, tc.NamesrvAddr(), l)
	res, err := p.SendInTransaction(ctxGuard(t), &Message{Topic: topic, Body: []byte("commit across")})
	if err != nil || res.EndErr != nil {
		t.Fatalf("%+v %v", res, err)
	}
	waitLeaderRoute(t, tc, topic)
	sendMarker(t, tc, p.Producer, topic, "marker")
	if got := bodiesOn(t, tc, topic); got["commit across"] != 1 {
		t.Fatalf("delivered %v", got)
	}
}

// An undecided transaction whose half message was born longer ago than
// the retention time (the store's FileReservedTime) expires, as Java's
// check-back skips it: it is no longer listed as pending, and nothing is
// delivered, not even for a commit that comes after.
func TestTransactionExpiresAfterRetention(t *testing.T) {
	var ahead atomic.Int64 // how far the brokers' clocks run ahead, in ns
	tc := startCluster(t, func(i int, c *broker.Config) {
		fastChecks(1000)(i, c)
		c.Clock = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	})
	rc := testClient(t)
	const topic = "TxnExpire"
	createTopic(t, tc, rc, topic, 1)
	ns := tc.NamesrvAddr()
	l := &bodyListener{}
	p := newTxn(t, ns, l)
	res, err := p.SendInTransaction(ctxGuard(t), &Message{Topic: topic, Body: []byte("unknown 1")})
	if err != nil || res.State != TransactionUnknown {
		t.Fatalf("%+v %v", res, err)
	}
	waitFor(t, "a first check", func() bool { return l.checksOf("unknown 1") >= 1 })
	a := newAdmin(t, ns)
	pending := func() int64 {
		pt, err := a.PendingTransactions(ctxGuard(t), "", 10)
		if err != nil {
			t.Logf("pending transactions: %v", err)
			return -1
		}
		return pt.Count
	}
	if n := pending(); n != 1 {
		t.Fatalf("%d transactions pending before the retention time, want 1", n)
	}

	// The retention time (72 h) passes.
	ahead.Store(int64(73 * time.Hour))
	waitFor(t, "the transaction expired", func() bool { return pending() == 0 })
	if err := p.endTransaction(ctxGuard(t), res.SendResult, TransactionCommit); err != nil {
		t.Fatalf("a late commit: %v", err)
	}
	sendMarker(t, tc, p.Producer, topic, "marker")
	if got := bodiesOn(t, tc, topic); len(got) != 1 {
		t.Fatalf("delivered %v, want only the marker", got)
	}
}
