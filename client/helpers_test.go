package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"

	"github.com/ledgermq/ledgermq/internal/testwait"
)

// guard bounds every wait of the tests; it is a failure deadline, never a
// way to let something happen.
const guard = 30 * time.Second

// TestMain fails the package if any goroutine outlives the tests (the
// producer's, the test clusters', the fakes').
// TestMain checks that no test leaves a goroutine behind. The one allowed
// is dledger's waiter on a raft future that raft never answers after a
// shutdown (hashicorp/raft#498, see dledger.Group.awaitRaft): the test
// clusters' leader kills can leave one.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/hashicorp/raft.(*deferError).Error"))
}

// waitFor polls cond until it holds, failing after guard.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, guard, what, cond)
}

// ctxGuard is a context that ends after guard or with the test.
func ctxGuard(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	t.Cleanup(cancel)
	return ctx
}

// newProducer returns a producer closed by the test's cleanup.
func newProducer(t testing.TB, opts ...Option) *Producer {
	t.Helper()
	p, err := NewProducer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// --- a real cluster ------------------------------------------------------------

// startCluster starts a name server and a 3-node group and waits until the
// name server lists the leader's TBW102 route.
func startCluster(t testing.TB, opt func(int, *broker.Config)) *brokertest.Cluster {
	t.Helper()
	tc := brokertest.StartCluster(t, 3, opt)
	waitLeaderRoute(t, tc, protocol.DefaultTopic)
	return tc
}

// waitLeaderRoute waits until the name server has a route for topic with a
// leader in every group.
func waitLeaderRoute(t testing.TB, tc *brokertest.Cluster, topic string) {
	t.Helper()
	waitFor(t, "a route with a leader for "+topic, func() bool {
		r, ok := tc.Namesrv.Table().Route(topic)
		if !ok || len(r.BrokerDatas) == 0 {
			return false
		}
		for _, bd := range r.BrokerDatas {
			if _, ok := bd.BrokerAddrs[0]; !ok {
				return false
			}
		}
		return true
	})
}

// testClient is a plain remoting client for reading back what was sent.
func testClient(t testing.TB) *remoting.Client {
	t.Helper()
	c := remoting.NewClient(remoting.ClientConfig{})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// readQueue pulls every message of one queue from addr, from offset 0.
func readQueue(t testing.TB, rc *remoting.Client, addr, topic string, qid int32) []*message.Ext {
	t.Helper()
	ctx := ctxGuard(t)
	var out []*message.Ext
	for off := int64(0); ; {
		resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(remoting.PullMessage, map[string]string{
			"consumerGroup": "client-test-reader", "topic": topic, "queueId": strconv.Itoa(int(qid)),
			"queueOffset": strconv.FormatInt(off, 10), "maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0",
			"suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "expressionType": "TAG",
		}, nil))
		if err != nil {
			t.Fatalf("pull %s#%d@%d from %s: %v", topic, qid, off, addr, err)
		}
		if resp.Code != remoting.Success {
			return out
		}
		msgs, err := message.DecodeRecords(resp.Body)
		if err != nil {
			t.Fatalf("pull body: %v", err)
		}
		out = append(out, msgs...)
		next, err := remoting.ExtInt(resp.ExtFields, "nextBeginOffset")
		if err != nil || next <= off {
			t.Fatalf("pull nextBeginOffset %d after %d: %v", next, off, err)
		}
		off = next
	}
}

// readTopic pulls every message of every queue of topic from addr, by
// queue id.
func readTopic(t testing.TB, tc *brokertest.Cluster, rc *remoting.Client, addr, topic string) map[int32][]*message.Ext {
	t.Helper()
	r, ok := tc.Namesrv.Table().Route(topic)
	if !ok || len(r.QueueDatas) == 0 {
		t.Fatalf("no route for %s", topic)
	}
	out := map[int32][]*message.Ext{}
	for qid := int32(0); qid < r.QueueDatas[0].ReadQueueNums; qid++ {
		out[qid] = readQueue(t, rc, addr, topic, qid)
	}
	return out
}

// byUniqKey indexes messages by UNIQ_KEY, counting copies.
func byUniqKey(queues map[int32][]*message.Ext) map[string][]*message.Ext {
	out := map[string][]*message.Ext{}
	for _, msgs := range queues {
		for _, m := range msgs {
			out[m.UniqKey()] = append(out[m.UniqKey()], m)
		}
	}
	return out
}

// createTopic creates topic with n queues on the leader of tc.
func createTopic(t testing.TB, tc *brokertest.Cluster, rc *remoting.Client, topic string, n int) {
	t.Helper()
	ctx := ctxGuard(t)
	// The group may be between leaders (an election on a loaded machine):
	// as an admin would, ask the leader again while none serves the
	// request (SERVICE_NOT_AVAILABLE) or its connection drops. Creating a
	// topic twice is harmless (it is an update).
	waitFor(t, "create "+topic, func() bool {
		addr, err := tc.LeaderAddr(ctx)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
			"topic": topic, "readQueueNums": strconv.Itoa(n), "writeQueueNums": strconv.Itoa(n), "perm": "6"}, nil))
		switch {
		case err == nil && resp.Code == remoting.Success:
			return true
		case ctx.Err() == nil && (err != nil || resp.Code == remoting.ServiceNotAvailable):
			return false
		}
		t.Fatalf("create %s: %v %v", topic, err, resp)
		return false
	})
	waitLeaderRoute(t, tc, topic)
}

// --- faults on the client's links ----------------------------------------------

var errInjected = errors.New("injected: link down")

// faultDialer is a WithDial hook: it dials TCP, but may refuse an address
// or wrap its next connections to cut or mute them.
type faultDialer struct {
	dials atomic.Int32

	mu     sync.Mutex
	refuse map[string]bool
	wraps  map[string][]func(net.Conn) net.Conn // applied to the next connections, in turn
}

func newFaultDialer() *faultDialer {
	return &faultDialer{refuse: map[string]bool{}, wraps: map[string][]func(net.Conn) net.Conn{}}
}

func (d *faultDialer) dial(ctx context.Context, addr string) (net.Conn, error) {
	d.dials.Add(1)
	d.mu.Lock()
	refused := d.refuse[addr]
	var wrap func(net.Conn) net.Conn
	if ws := d.wraps[addr]; len(ws) > 0 {
		wrap, d.wraps[addr] = ws[0], ws[1:]
	}
	d.mu.Unlock()
	if refused {
		return nil, errInjected
	}
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil || wrap == nil {
		return nc, err
	}
	return wrap(nc), nil
}

func (d *faultDialer) setRefuse(addr string, on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refuse[addr] = on
}

// nextConn wraps the next connection to addr with wrap.
func (d *faultDialer) nextConn(addr string, wrap func(net.Conn) net.Conn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.wraps[addr] = append(d.wraps[addr], wrap)
}

// cutAfterWrite closes the connection right after its first write has
// gone out: the request reaches the broker, its answer never comes back
// (bytes that arrive after the write began are dropped, however fast the
// broker answers).
func cutAfterWrite(nc net.Conn) net.Conn { return &cutConn{Conn: nc} }

type cutConn struct {
	net.Conn
	wrote atomic.Bool
	once  sync.Once
}

func (c *cutConn) cut() { c.once.Do(func() { _ = c.Conn.Close() }) }

func (c *cutConn) Write(p []byte) (int, error) {
	c.wrote.Store(true)
	n, err := c.Conn.Write(p)
	c.cut()
	return n, err
}

func (c *cutConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.wrote.Load() {
		c.cut()
		return 0, fmt.Errorf("%w: cut after the request", net.ErrClosed)
	}
	return n, err
}

// muteReads swallows everything the broker sends, so requests are
// delivered and processed but never answered.
func muteReads(nc net.Conn) net.Conn { return &muteConn{Conn: nc} }

type muteConn struct{ net.Conn }

func (c *muteConn) Read(p []byte) (int, error) {
	buf := make([]byte, 4096)
	for {
		if _, err := c.Conn.Read(buf); err != nil {
			return 0, err
		}
	}
}

// --- a fake name server and fake broker groups -----------------------------------

// fakeCluster is a name server serving one route for every topic, and
// one single-node "broker group" per name whose send handler a test
// programs. It lets a test answer any code, hold answers and count
// requests.
type fakeCluster struct {
	t         testing.TB
	ns        *remoting.Server
	routeReqs atomic.Int32

	mu      sync.Mutex
	brokers map[string]*fakeBroker
	names   []string
	gate    chan struct{} // when set, route requests wait until it closes
}

type fakeBroker struct {
	name  string
	addr  string
	srv   *remoting.Server
	sends atomic.Int32 // send requests received

	mu     sync.Mutex
	leader bool // listed as brokerId 0 in the route
	handle func(n int32, req *remoting.Command) *remoting.Command
	offset int64
}

// startFake starts the fake name server and one broker per name, all
// leaders that store every send.
func startFake(t testing.TB, names ...string) *fakeCluster {
	t.Helper()
	f := &fakeCluster{t: t, brokers: map[string]*fakeBroker{}, names: names}
	f.ns = startServer(t, func(s *remoting.Server) {
		s.Handle(remoting.GetRouteInfoByTopic, "", remoting.HandlerFunc(f.serveRoute))
	})
	for _, name := range names {
		b := &fakeBroker{name: name, leader: true}
		b.srv = startServer(t, func(s *remoting.Server) {
			h := remoting.HandlerFunc(b.serveSend)
			s.Handle(remoting.SendMessage, "", h)
			s.Handle(remoting.SendBatchMessage, "", h)
		})
		b.addr = b.srv.Addr().String()
		f.brokers[name] = b
	}
	return f
}

func startServer(t testing.TB, register func(*remoting.Server)) *remoting.Server {
	t.Helper()
	s := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0"})
	register(s)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

func (f *fakeCluster) nsAddr() string { return f.ns.Addr().String() }

func (f *fakeCluster) broker(name string) *fakeBroker {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.brokers[name]
}

// serveRoute answers GET_ROUTEINFO_BY_TOPIC with 4 queues on every group.
func (f *fakeCluster) serveRoute(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	f.routeReqs.Add(1)
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil
		}
	}
	var h protocol.GetRouteInfoRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	rd := protocol.TopicRouteData{}
	f.mu.Lock()
	for _, name := range f.names {
		b := f.brokers[name]
		b.mu.Lock()
		addrs := map[int64]string{}
		if b.leader {
			addrs[0] = b.addr
		}
		b.mu.Unlock()
		rd.QueueDatas = append(rd.QueueDatas, protocol.QueueData{BrokerName: name, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6})
		rd.BrokerDatas = append(rd.BrokerDatas, protocol.BrokerData{Cluster: "fake", BrokerName: name, BrokerAddrs: addrs})
	}
	f.mu.Unlock()
	body, err := rd.Encode()
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = body
	return resp
}

// holdRoutes makes route requests wait until the returned func is called.
func (f *fakeCluster) holdRoutes() (release func()) {
	gate := make(chan struct{})
	f.mu.Lock()
	f.gate = gate
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			f.gate = nil
			f.mu.Unlock()
			close(gate)
		})
	}
}

// newLeader starts a new broker for group name and lists it as the
// group's leader instead of the old one (a failover), which it returns.
func (f *fakeCluster) newLeader(name string) *fakeBroker {
	f.t.Helper()
	b := &fakeBroker{name: name, leader: true}
	b.srv = startServer(f.t, func(s *remoting.Server) {
		h := remoting.HandlerFunc(b.serveSend)
		s.Handle(remoting.SendMessage, "", h)
		s.Handle(remoting.SendBatchMessage, "", h)
	})
	b.addr = b.srv.Addr().String()
	f.mu.Lock()
	f.brokers[name] = b
	f.mu.Unlock()
	return b
}

// setLeader lists the broker as its group's leader, or not.
func (b *fakeBroker) setLeader(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.leader = on
}

// program makes h answer the broker's sends; n counts them from 1. A nil
// answer from h stores the message; noAnswer answers nothing.
func (b *fakeBroker) program(h func(n int32, req *remoting.Command) *remoting.Command) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.handle = h
}

func (b *fakeBroker) serveSend(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	n := b.sends.Add(1)
	h, err := protocol.DecodeSendRequestHeader(req.Code, req.ExtFields)
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	b.mu.Lock()
	handle := b.handle
	b.mu.Unlock()
	if handle != nil {
		switch resp := handle(n, req); resp {
		case noAnswer:
			return nil
		case nil:
		default:
			return resp
		}
	}
	return b.stored(req, h)
}

// stored answers SUCCESS for the message(s) of req.
func (b *fakeBroker) stored(req *remoting.Command, h protocol.SendMessageRequestHeader) *remoting.Command {
	b.mu.Lock()
	off := b.offset
	b.offset++
	b.mu.Unlock()
	rh := protocol.SendMessageResponseHeader{MsgID: fmt.Sprintf("%032X", off), QueueID: h.QueueID, QueueOffset: off,
		Region: "DefaultRegion", TraceOn: true}
	return rh.Response(req, remoting.Success)
}

// answer returns a handler answering code with remark.
func answer(code int32, remark string) func(int32, *remoting.Command) *remoting.Command {
	return func(_ int32, req *remoting.Command) *remoting.Command { return remoting.NewResponse(req, code, remark) }
}

// noAnswer, returned by a program, leaves the send unanswered (the
// request is processed, the client waits for its timeout).
var noAnswer = &remoting.Command{}

// never is a program that answers nothing.
func never(int32, *remoting.Command) *remoting.Command { return noAnswer }

func sendErr(t testing.TB, err error) *SendError {
	t.Helper()
	var se *SendError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *SendError", err, err)
	}
	return se
}
