package client

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// txBroker is a one-node name server and broker in one remoting server
// that speaks the transaction protocol's wire side: it stores half
// messages at commitlog offset 1000+n, records heartbeats and
// END_TRANSACTIONs, and can send a check to the producer.
type txBroker struct {
	t   testing.TB
	srv *remoting.Server

	mu       sync.Mutex
	halves   []protocol.SendMessageRequestHeader
	ends     []protocol.EndTransactionRequestHeader
	groups   map[string]*remoting.Conn // producer group → heartbeat connection
	endCodes []int32                   // answers to the next END_TRANSACTIONs (then SUCCESS)
}

func startTxBroker(t testing.TB) *txBroker {
	b := &txBroker{t: t, groups: map[string]*remoting.Conn{}}
	b.srv = startServer(t, func(s *remoting.Server) {
		s.Handle(remoting.GetRouteInfoByTopic, "", remoting.HandlerFunc(b.route))
		s.Handle(remoting.SendMessage, "", remoting.HandlerFunc(b.send))
		s.Handle(remoting.HeartBeat, "", remoting.HandlerFunc(b.heartbeat))
		s.Handle(remoting.EndTransaction, "", remoting.HandlerFunc(b.end))
	})
	return b
}

func (b *txBroker) addr() string { return b.srv.Addr().String() }

func (b *txBroker) route(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	rd := protocol.TopicRouteData{
		QueueDatas:  []protocol.QueueData{{BrokerName: "broker-a", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		BrokerDatas: []protocol.BrokerData{{Cluster: "c", BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: b.addr()}}},
	}
	body, _ := rd.Encode()
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = body
	return resp
}

func (b *txBroker) send(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := protocol.DecodeSendRequestHeader(req.Code, req.ExtFields)
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	b.mu.Lock()
	n := len(b.halves)
	b.halves = append(b.halves, h)
	b.mu.Unlock()
	props, _ := message.DecodeProperties([]byte(h.Properties))
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	rh := protocol.SendMessageResponseHeader{MsgID: message.OffsetMsgID(host, int64(1000+n)), QueueID: h.QueueID,
		QueueOffset: int64(n), TransactionID: props[message.PropertyUniqKey]}
	return rh.Response(req, remoting.Success)
}

func (b *txBroker) heartbeat(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	hb, err := protocol.DecodeHeartbeat(req.Body)
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	b.mu.Lock()
	for _, p := range hb.ProducerDataSet {
		b.groups[p.GroupName] = conn
	}
	b.mu.Unlock()
	return remoting.NewResponse(req, remoting.Success, "")
}

func (b *txBroker) end(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.EndTransactionRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ends = append(b.ends, h)
	code := remoting.Success
	if len(b.endCodes) > 0 {
		code, b.endCodes = b.endCodes[0], b.endCodes[1:]
	}
	return remoting.NewResponse(req, code, "")
}

func (b *txBroker) endsSeen() []protocol.EndTransactionRequestHeader {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]protocol.EndTransactionRequestHeader(nil), b.ends...)
}

// check sends CHECK_TRANSACTION_STATE for the n-th half message (as stored
// under pgroup) on group's heartbeat connection.
func (b *txBroker) check(group, pgroup string, n int) {
	b.t.Helper()
	b.mu.Lock()
	conn := b.groups[group]
	h := b.halves[n]
	b.mu.Unlock()
	if conn == nil {
		b.t.Fatalf("no heartbeat from %s", group)
	}
	props, _ := message.DecodeProperties([]byte(h.Properties))
	props[message.PropertyProducerGroup] = pgroup
	e := &message.Ext{Message: message.Message{Topic: h.Topic, Body: []byte("half"), Properties: props},
		QueueID: h.QueueID, PhysicalOffset: int64(1000 + n), SysFlag: h.SysFlag,
		StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"), BornHost: netip.MustParseAddrPort("127.0.0.1:1")}
	rec, err := message.AppendRecord(nil, e)
	if err != nil {
		b.t.Fatal(err)
	}
	ch := protocol.CheckTransactionStateRequestHeader{TranStateTableOffset: int64(n), CommitLogOffset: int64(1000 + n),
		MsgID: props[message.PropertyUniqKey], TransactionID: props[message.PropertyUniqKey], Topic: h.Topic, BrokerName: "broker-a"}
	if err := conn.Oneway(ch.Request(rec)); err != nil {
		b.t.Fatal(err)
	}
}

// txListener answers with fixed states and records the checks.
type txListener struct {
	exec, check LocalTransactionState
	executed    atomic.Int32
	mu          sync.Mutex
	checked     []string // MsgIDs
}

func (l *txListener) ExecuteLocalTransaction(context.Context, *Message) LocalTransactionState {
	l.executed.Add(1)
	return l.exec
}

func (l *txListener) CheckLocalTransaction(_ context.Context, m *MessageExt) LocalTransactionState {
	l.mu.Lock()
	l.checked = append(l.checked, m.MsgID)
	l.mu.Unlock()
	return l.check
}

func newTxProducer(t testing.TB, b *txBroker, l TransactionListener) *TransactionProducer {
	t.Helper()
	p, err := NewTransactionProducer(l, WithNameServers(b.addr()), WithGroup("tx-pg"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// The half message carries the transaction flag and properties; after the
// local transaction commits, END_TRANSACTION names the half message by its
// offsets and ids; the leader heard the producer's heartbeat first.
func TestTransactionCommitWire(t *testing.T) {
	b := startTxBroker(t)
	l := &txListener{exec: TransactionCommit}
	p := newTxProducer(t, b, l)
	res, err := p.SendInTransaction(ctxGuard(t), &Message{Topic: "TxT", Body: []byte("x")})
	if err != nil || res.EndErr != nil || res.State != TransactionCommit {
		t.Fatalf("result %+v, %v", res, err)
	}
	b.mu.Lock()
	half := b.halves[0]
	_, heard := b.groups["tx-pg"]
	b.mu.Unlock()
	props, _ := message.DecodeProperties([]byte(half.Properties))
	if half.SysFlag&protocol.TransactionTypeMask != protocol.TransactionPrepared || props[message.PropertyTransactionPrepared] != "true" ||
		props[message.PropertyProducerGroup] != "tx-pg" || half.ProducerGroup != "tx-pg" {
		t.Fatalf("half message header %+v", half)
	}
	if !heard {
		t.Fatal("no producer heartbeat before END_TRANSACTION")
	}
	ends := b.endsSeen()
	want := protocol.EndTransactionRequestHeader{ProducerGroup: "tx-pg", TranStateTableOffset: 0, CommitLogOffset: 1000,
		CommitOrRollback: protocol.TransactionCommit, MsgID: res.MsgID, TransactionID: res.MsgID, BrokerName: "broker-a"}
	if len(ends) != 1 || ends[0] != want {
		t.Fatalf("END_TRANSACTION %+v, want %+v", ends, want)
	}
}

// A broker that is not ready (SERVICE_NOT_AVAILABLE) is asked again; one
// that refuses outright is not, and the result says so.
func TestTransactionEndRetriedOnlyWhenUnavailable(t *testing.T) {
	b := startTxBroker(t)
	p := newTxProducer(t, b, &txListener{exec: TransactionRollback})
	b.mu.Lock()
	b.endCodes = []int32{remoting.ServiceNotAvailable, remoting.Success}
	b.mu.Unlock()
	res, err := p.SendInTransaction(ctxGuard(t), &Message{Topic: "TxT", Body: []byte("x")})
	if err != nil || res.EndErr != nil {
		t.Fatalf("result %+v, %v", res, err)
	}
	if ends := b.endsSeen(); len(ends) != 2 || ends[1].CommitOrRollback != protocol.TransactionRollback {
		t.Fatalf("END_TRANSACTIONs %+v", ends)
	}
	b.mu.Lock()
	b.endCodes = []int32{remoting.SystemError}
	b.mu.Unlock()
	res, err = p.SendInTransaction(ctxGuard(t), &Message{Topic: "TxT", Body: []byte("y")})
	if err != nil || res.EndErr == nil {
		t.Fatalf("refused END_TRANSACTION not reported: %+v, %v", res, err)
	}
	if ends := b.endsSeen(); len(ends) != 3 {
		t.Fatalf("a refused END_TRANSACTION was sent again: %d", len(ends))
	}
}

// Unknown sends END_TRANSACTION 0 without waiting; a check-back then asks
// the listener, and its answer goes to the broker as a new
// END_TRANSACTION with fromTransactionCheck and the offsets echoed. A
// check for another group is ignored.
func TestTransactionCheckBack(t *testing.T) {
	b := startTxBroker(t)
	l := &txListener{exec: TransactionUnknown, check: TransactionCommit}
	p := newTxProducer(t, b, l)
	res, err := p.SendInTransaction(ctxGuard(t), &Message{Topic: "TxT", Body: []byte("x")})
	if err != nil || res.EndErr != nil || res.State != TransactionUnknown {
		t.Fatalf("result %+v, %v", res, err)
	}
	waitFor(t, "the unknown outcome written", func() bool { return len(b.endsSeen()) == 1 })
	if e := b.endsSeen()[0]; e.CommitOrRollback != protocol.TransactionNotType || e.FromTransactionCheck {
		t.Fatalf("END_TRANSACTION %+v", e)
	}
	b.check("tx-pg", "another-group", 0)
	b.check("tx-pg", "tx-pg", 0)
	waitFor(t, "the check answered", func() bool { return len(b.endsSeen()) == 2 })
	e := b.endsSeen()[1]
	want := protocol.EndTransactionRequestHeader{ProducerGroup: "tx-pg", TranStateTableOffset: 0, CommitLogOffset: 1000,
		CommitOrRollback: protocol.TransactionCommit, FromTransactionCheck: true, MsgID: res.MsgID, TransactionID: res.MsgID}
	if e != want {
		t.Fatalf("check answer %+v, want %+v", e, want)
	}
	l.mu.Lock()
	checked := l.checked
	l.mu.Unlock()
	if len(checked) != 1 || checked[0] != res.MsgID {
		t.Fatalf("checked %v (the other group's check must not reach the listener)", checked)
	}
}

// A half message that is not stored runs no local transaction.
func TestTransactionSendFailureRunsNothing(t *testing.T) {
	b := startTxBroker(t)
	l := &txListener{exec: TransactionCommit}
	p := newTxProducer(t, b, l)
	if _, err := p.SendInTransaction(ctxGuard(t), &Message{Topic: "TxT", Body: []byte("x"), DelayLevel: 2}); err == nil {
		t.Fatal("a delayed transactional message was accepted")
	}
	_ = p.Producer.Close() // every later send fails with ErrClosed
	if _, err := p.SendInTransaction(ctxGuard(t), &Message{Topic: "TxT", Body: []byte("x")}); err == nil {
		t.Fatal("send after Close succeeded")
	}
	if n := l.executed.Load(); n != 0 {
		t.Fatalf("local transaction ran %d times", n)
	}
}

// Close stops the heartbeats and leaves no goroutine, after a check-back
// was served.
func TestTransactionProducerCloseLeavesNothing(t *testing.T) {
	b := startTxBroker(t)
	ignore := goleak.IgnoreCurrent()
	l := &txListener{exec: TransactionUnknown, check: TransactionRollback}
	p, err := NewTransactionProducer(l, WithNameServers(b.addr()), WithGroup("tx-pg"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.SendInTransaction(ctxGuard(t), &Message{Topic: "TxT", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the unknown outcome written", func() bool { return len(b.endsSeen()) == 1 })
	b.check("tx-pg", "tx-pg", 0)
	waitFor(t, "the check answered", func() bool {
		ends := b.endsSeen()
		return len(ends) == 2 && ends[1].CommitOrRollback == protocol.TransactionRollback && ends[1].FromTransactionCheck
	})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, ignore)
}

// TestHalfRetriedOnItsQueueAfterUnknown: a half message whose attempt's
// outcome is unknown (the connection died after the request went out)
// may be stored in that group, so the retry goes to the same queue of the
// same group, never to another group (which would hold a copy of its own,
// checked back and committed apart).
func TestHalfRetriedOnItsQueueAfterUnknown(t *testing.T) {
	f := startFake(t, "a", "b")
	a, b := f.broker("a"), f.broker("b")
	d := newFaultDialer()
	d.nextConn(a.addr, cutAfterWrite)
	d.nextConn(b.addr, cutAfterWrite)
	l := &txListener{exec: TransactionCommit}
	tp, err := NewTransactionProducer(l, WithNameServers(f.nsAddr()), WithGroup("tx-pg"), WithDial(d.dial))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Close() })
	res, err := tp.SendInTransaction(ctxGuard(t), &Message{Topic: "T", Body: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || !res.MaybeDuplicated() || res.Earlier[0].Queue != res.Queue {
		t.Fatalf("half stored at %v after %d attempts (earlier %+v)", res.Queue, res.Attempts, res.Earlier)
	}
	if got := a.sends.Load() + b.sends.Load(); got != 2 || a.sends.Load() != 0 && b.sends.Load() != 0 {
		t.Fatalf("sends: a %d, b %d; want both attempts in one group", a.sends.Load(), b.sends.Load())
	}
	if l.executed.Load() != 1 {
		t.Fatalf("local transaction ran %d times", l.executed.Load())
	}
}
