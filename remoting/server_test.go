package remoting

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRequestResponse(t *testing.T) {
	s := startServer(t, ServerConfig{}, func(s *Server) { s.Handle(SendMessage, "", echo) })
	c := newClient(t, ClientConfig{})
	ctx := ctxGuard(t)
	for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
		req := NewRequest(SendMessage, map[string]string{"topic": "T", "properties": "TAGS\x01a\x02"}, []byte("payload"))
		req.SerializeType = st
		resp, err := c.Invoke(ctx, s.Addr().String(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code != Success || !resp.IsResponse() || resp.ExtFields["topic"] != "T" ||
			resp.ExtFields["properties"] != "TAGS\x01a\x02" || string(resp.Body) != "payload" {
			t.Fatalf("type %d: %+v", st, resp)
		}
		// Responses take the request's header form, as Java's broker's do.
		if resp.SerializeType != st || resp.Language != LanguageJava || resp.Version != Version {
			t.Fatalf("response style: %+v", resp)
		}
		if req.Opaque != 0 || req.Flag != 0 {
			t.Fatal("Invoke modified the request")
		}
	}
}

// One request sent to many addresses at once must not race: Invoke never
// writes to the caller's Command.
func TestSharedRequestAcrossServers(t *testing.T) {
	var addrs []string
	for range 3 {
		s := startServer(t, ServerConfig{}, func(s *Server) { s.Handle(HeartBeat, "", echo) })
		addrs = append(addrs, s.Addr().String())
	}
	c := newClient(t, ClientConfig{})
	req := NewRequest(HeartBeat, nil, []byte(`{"clientID":"x"}`))
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Invoke(ctxGuard(t), addrs[i%3], req)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Requests on one connection complete in the order their handlers finish,
// not the order they were sent; opaque matching delivers each response to
// its caller.
func TestConcurrentRequestsOutOfOrder(t *testing.T) {
	const n = 8
	release := make([]chan struct{}, n)
	for i := range release {
		release[i] = make(chan struct{})
	}
	started := make(chan int, n)
	h := HandlerFunc(func(ctx context.Context, _ *Conn, req *Command) *Command {
		id, _ := ExtInt(req.ExtFields, "id")
		started <- int(id)
		<-release[id]
		resp := NewResponse(req, Success, "")
		resp.SetExt("id", strconv.Itoa(int(id)))
		return resp
	})
	s := startServer(t, ServerConfig{Pools: map[string]PoolConfig{"send": {Workers: n, QueueSize: n}}},
		func(s *Server) { s.Handle(SendMessage, "send", h) })
	c := newClient(t, ClientConfig{})
	addr := s.Addr().String()

	type result struct {
		id   int
		resp *Command
		err  error
	}
	results := make(chan result, n)
	for i := range n {
		go func() {
			resp, err := c.Invoke(ctxGuard(t), addr, NewRequest(SendMessage, map[string]string{"id": strconv.Itoa(i)}, nil))
			results <- result{i, resp, err}
		}()
	}
	for range n {
		recv(t, started, "handler start")
	}
	// Release in reverse order; each response must reach its own caller
	// before the next handler is released.
	for i := n - 1; i >= 0; i-- {
		close(release[i])
		r := recv(t, results, "response")
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.id != i || r.resp.ExtFields["id"] != strconv.Itoa(i) {
			t.Fatalf("released %d, got caller %d with response id %s", i, r.id, r.resp.ExtFields["id"])
		}
	}
	if got := s.ConnCount(); got != 1 {
		t.Fatalf("%d connections, want one shared connection", got)
	}
}

func TestOneway(t *testing.T) {
	got := make(chan *Command, 1)
	h := HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
		got <- req
		return NewResponse(req, Success, "must not be sent")
	})
	s := startServer(t, ServerConfig{Pools: map[string]PoolConfig{DefaultPool: {Workers: 1, QueueSize: 4}}},
		func(s *Server) {
			s.Handle(UpdateConsumerOffset, "", h)
			s.Handle(HeartBeat, "", echo)
		})
	c := newClient(t, ClientConfig{})
	req := NewRequest(UpdateConsumerOffset, map[string]string{"commitOffset": "1"}, nil)
	if err := c.InvokeOneway(ctxGuard(t), s.Addr().String(), req); err != nil {
		t.Fatal(err)
	}
	r := recv(t, got, "one-way request")
	if !r.IsOneway() || r.IsResponse() || r.ExtFields["commitOffset"] != "1" {
		t.Fatalf("%+v", r)
	}
	if req.Flag != 0 {
		t.Fatal("InvokeOneway modified the request")
	}

	// On a raw connection: after a one-way request, the next frame the
	// server sends is the answer to the following request. With one
	// worker, the one-way handler has finished before the next one runs.
	nc := dialRaw(t, s)
	writeCmd(t, nc, &Command{Code: UpdateConsumerOffset, Opaque: 1, Flag: FlagOneway})
	recv(t, got, "raw one-way request")
	writeCmd(t, nc, &Command{Code: HeartBeat, Opaque: 2})
	if resp := readCmd(t, nc); resp.Opaque != 2 {
		t.Fatalf("first frame answers opaque %d; the one-way request was answered", resp.Opaque)
	}
	// Without the one-way bit (how the Go client sends "one-way" calls)
	// the request is served the same and its response is harmless.
	writeCmd(t, nc, &Command{Code: UpdateConsumerOffset, Opaque: 3})
	recv(t, got, "flag-0 request")
	if resp := readCmd(t, nc); resp.Opaque != 3 || resp.Remark != "must not be sent" {
		t.Fatalf("%+v", resp)
	}
}

func TestInvokeAsync(t *testing.T) {
	s := startServer(t, ServerConfig{}, func(s *Server) { s.Handle(PullMessage, "", echo) })
	c := newClient(t, ClientConfig{})
	const n = 20
	type result struct {
		resp *Command
		err  error
	}
	results := make(chan result, n)
	for i := range n {
		req := NewRequest(PullMessage, map[string]string{"i": strconv.Itoa(i)}, nil)
		err := c.InvokeAsync(ctxGuard(t), s.Addr().String(), req, func(resp *Command, err error) {
			results <- result{resp, err}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for range n {
		r := recv(t, results, "async callback")
		if r.err != nil || r.resp.Code != Success {
			t.Fatalf("%+v %v", r.resp, r.err)
		}
		seen[r.resp.ExtFields["i"]] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct responses", len(seen))
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(PullMessage, "", HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
			<-release
			return NewResponse(req, Success, "late")
		}))
		s.Handle(HeartBeat, "", echo)
	})
	defer close(release)
	c := newClient(t, ClientConfig{})
	addr := s.Addr().String()
	// Connect first, so that the short deadlines below expire while
	// waiting for a response rather than while dialling.
	if _, err := c.Invoke(ctxGuard(t), addr, NewRequest(HeartBeat, nil, nil)); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := c.Invoke(ctx, addr, NewRequest(PullMessage, nil, nil))
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("sync: %v", err)
	}

	done := make(chan error, 1)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if err := c.InvokeAsync(ctx2, addr, NewRequest(PullMessage, nil, nil), func(_ *Command, err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done, "async timeout"); !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("async: %v", err)
	}

	// A cancelled (not expired) context is not a timeout.
	ctx3, cancel3 := context.WithCancel(context.Background())
	cancel3()
	if _, err := c.Invoke(ctx3, addr, NewRequest(PullMessage, nil, nil)); !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Fatalf("cancelled: %v", err)
	}

	// The connection survives timeouts.
	if resp, err := c.Invoke(ctxGuard(t), addr, NewRequest(HeartBeat, nil, nil)); err != nil || resp.Code != Success {
		t.Fatalf("after timeouts: %v %+v", err, resp)
	}
}

func TestUnknownCode(t *testing.T) {
	s := startServer(t, ServerConfig{}, nil)
	c := newClient(t, ClientConfig{})
	resp, err := c.Invoke(ctxGuard(t), s.Addr().String(), NewRequest(999, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != RequestCodeNotSupported || resp.Remark != "request type 999 not supported" {
		t.Fatalf("%+v", resp)
	}
}

func TestHandlerPanic(t *testing.T) {
	s := startServer(t, ServerConfig{Pools: map[string]PoolConfig{DefaultPool: {Workers: 1}}}, func(s *Server) {
		s.Handle(SendMessage, "", HandlerFunc(func(context.Context, *Conn, *Command) *Command {
			panic("boom")
		}))
		s.Handle(HeartBeat, "", echo)
	})
	c := newClient(t, ClientConfig{})
	addr := s.Addr().String()
	for range 3 {
		resp, err := c.Invoke(ctxGuard(t), addr, NewRequest(SendMessage, nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code != SystemError {
			t.Fatalf("%+v", resp)
		}
		if resp, err := c.Invoke(ctxGuard(t), addr, NewRequest(HeartBeat, nil, nil)); err != nil || resp.Code != Success {
			t.Fatalf("after panic: %v %+v", err, resp)
		}
	}
}

// A flood on one pool is answered SYSTEM_BUSY once its queue is full, while
// another pool keeps serving.
func TestPoolFlood(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 8)
	slow := HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
		started <- struct{}{}
		<-release
		return NewResponse(req, Success, "")
	})
	s := startServer(t, ServerConfig{Pools: map[string]PoolConfig{
		"send":      {Workers: 1, QueueSize: 2},
		"heartbeat": {Workers: 1, QueueSize: 8},
	}}, func(s *Server) {
		s.Handle(SendMessage, "send", slow)
		s.Handle(HeartBeat, "heartbeat", echo)
	})
	c := newClient(t, ClientConfig{})
	addr := s.Addr().String()
	ctx := ctxGuard(t)

	type result struct {
		i    int
		resp *Command
		err  error
	}
	results := make(chan result, 16)
	send := func(i int) {
		req := NewRequest(SendMessage, map[string]string{"i": strconv.Itoa(i)}, nil)
		if err := c.InvokeAsync(ctx, addr, req, func(resp *Command, err error) { results <- result{i, resp, err} }); err != nil {
			t.Fatal(err)
		}
	}
	send(0)
	recv(t, started, "first send handler") // the only worker is now busy
	// Requests on one connection are dispatched in order: 1 and 2 fill the
	// queue, 3..6 find it full.
	for i := 1; i <= 6; i++ {
		send(i)
	}
	busy := map[int]bool{}
	for range 4 {
		r := recv(t, results, "busy answer")
		if r.err != nil || r.resp.Code != SystemBusy || !strings.Contains(r.resp.Remark, "TOO_MANY_REQUESTS") {
			t.Fatalf("send %d: %v %+v", r.i, r.err, r.resp)
		}
		busy[r.i] = true
	}
	for i := 3; i <= 6; i++ {
		if !busy[i] {
			t.Fatalf("send %d was not rejected: %v", i, busy)
		}
	}
	// The heartbeat pool answers while every send is still held.
	for range 5 {
		resp, err := c.Invoke(ctx, addr, NewRequest(HeartBeat, nil, nil))
		if err != nil || resp.Code != Success {
			t.Fatalf("heartbeat during flood: %v %+v", err, resp)
		}
	}
	select {
	case r := <-results:
		t.Fatalf("a held send completed before release: %+v", r)
	default:
	}
	if st := s.PoolStats()["send"]; st.Rejected != 4 || st.Queued != 2 {
		t.Fatalf("send pool stats %+v", st)
	}
	close(release)
	for range 3 {
		r := recv(t, results, "released send")
		if r.err != nil || r.resp.Code != Success || r.i > 2 {
			t.Fatalf("send %d: %v %+v", r.i, r.err, r.resp)
		}
	}
}

// A handler calls back into the client on the same connection
// (CHECK_TRANSACTION_STATE style); the client's OnRequest answers.
func TestServerToClientRequest(t *testing.T) {
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(HeartBeat, "", HandlerFunc(func(ctx context.Context, conn *Conn, req *Command) *Command {
			check := NewRequest(CheckTransactionState, map[string]string{"msgId": "M1"}, []byte("record"))
			ctx, cancel := context.WithTimeout(ctx, guard)
			defer cancel()
			answer, err := conn.Request(ctx, check)
			if err != nil {
				return NewResponse(req, SystemError, err.Error())
			}
			resp := NewResponse(req, Success, "")
			resp.SetExt("verdict", answer.ExtFields["commitOrRollback"])
			return resp
		}))
	})
	notified := make(chan *Command, 1)
	c := newClient(t, ClientConfig{OnRequest: HandlerFunc(func(_ context.Context, conn *Conn, req *Command) *Command {
		switch req.Code {
		case CheckTransactionState:
			if req.ExtFields["msgId"] != "M1" || string(req.Body) != "record" {
				return NewResponse(req, SystemError, "bad check")
			}
			resp := NewResponse(req, Success, "")
			resp.SetExt("commitOrRollback", "8")
			return resp
		case NotifyConsumerIdsChanged:
			notified <- req
		}
		return nil
	})})
	resp, err := c.Invoke(ctxGuard(t), s.Addr().String(), NewRequest(HeartBeat, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != Success || resp.ExtFields["verdict"] != "8" {
		t.Fatalf("%+v", resp)
	}
}

// The server pushes one-way requests to a client connection it learned
// from a handler (NOTIFY_CONSUMER_IDS_CHANGED style).
func TestServerOnewayToClient(t *testing.T) {
	conns := make(chan *Conn, 1)
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(HeartBeat, "", HandlerFunc(func(_ context.Context, conn *Conn, req *Command) *Command {
			conns <- conn
			return NewResponse(req, Success, "")
		}))
	})
	notified := make(chan *Command, 1)
	c := newClient(t, ClientConfig{OnRequest: HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
		notified <- req
		return NewResponse(req, Success, "ignored for one-way")
	})})
	if _, err := c.Invoke(ctxGuard(t), s.Addr().String(), NewRequest(HeartBeat, nil, nil)); err != nil {
		t.Fatal(err)
	}
	conn := recv(t, conns, "server conn")
	if err := conn.Oneway(NewRequest(NotifyConsumerIdsChanged, map[string]string{"consumerGroup": "g"}, nil)); err != nil {
		t.Fatal(err)
	}
	n := recv(t, notified, "notification")
	if n.Code != NotifyConsumerIdsChanged || !n.IsOneway() || n.ExtFields["consumerGroup"] != "g" {
		t.Fatalf("%+v", n)
	}
}

// A client without OnRequest answers server requests with code 3.
func TestClientWithoutOnRequest(t *testing.T) {
	answers := make(chan *Command, 1)
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(HeartBeat, "", HandlerFunc(func(ctx context.Context, conn *Conn, req *Command) *Command {
			ctx, cancel := context.WithTimeout(ctx, guard)
			defer cancel()
			a, err := conn.Request(ctx, NewRequest(GetConsumerRunningInfo, nil, nil))
			if err != nil {
				t.Error(err)
				return NewResponse(req, SystemError, "")
			}
			answers <- a
			return NewResponse(req, Success, "")
		}))
	})
	c := newClient(t, ClientConfig{})
	if _, err := c.Invoke(ctxGuard(t), s.Addr().String(), NewRequest(HeartBeat, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if a := recv(t, answers, "answer"); a.Code != RequestCodeNotSupported {
		t.Fatalf("%+v", a)
	}
}

func TestIdleTimeoutAndOnConnClose(t *testing.T) {
	closed := make(chan *Conn, 4)
	s := startServer(t, ServerConfig{IdleTimeout: 50 * time.Millisecond, OnConnClose: func(c *Conn) { closed <- c }},
		func(s *Server) { s.Handle(HeartBeat, "", echo) })
	nc := dialRaw(t, s)
	// Silent connection: closed by the idle timeout.
	c := recv(t, closed, "idle close")
	if c.RemoteAddr().String() != nc.LocalAddr().String() || !c.Closed() || c.Context().Err() == nil {
		t.Fatalf("closed conn %v, ours %v", c.RemoteAddr(), nc.LocalAddr())
	}
	waitClosedByPeer(t, nc)
	if n := s.ConnCount(); n != 0 {
		t.Fatalf("%d connections left", n)
	}

}

func TestOnConnCloseOnHangUp(t *testing.T) {
	closed := make(chan *Conn, 1)
	s := startServer(t, ServerConfig{OnConnClose: func(c *Conn) { closed <- c }},
		func(s *Server) { s.Handle(HeartBeat, "", echo) })
	cl := NewClient(ClientConfig{})
	if _, err := cl.Invoke(ctxGuard(t), s.Addr().String(), NewRequest(HeartBeat, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if n := s.ConnCount(); n != 1 {
		t.Fatalf("%d connections", n)
	}
	_ = cl.Close()
	c := recv(t, closed, "close on hang-up")
	if !c.Closed() {
		t.Fatal("hook saw an open connection")
	}
	if n := s.ConnCount(); n != 0 {
		t.Fatalf("%d connections left", n)
	}
}

// When the connection dies, pending calls fail with ErrConnClosed at once,
// and the next call dials a new connection.
func TestConnDeathFailsPendingAndRedials(t *testing.T) {
	var mu sync.Mutex
	var serverConns []*Conn
	entered := make(chan struct{}, 1)
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(PullMessage, "", HandlerFunc(func(_ context.Context, conn *Conn, req *Command) *Command {
			mu.Lock()
			serverConns = append(serverConns, conn)
			mu.Unlock()
			entered <- struct{}{}
			return nil // held, like a long poll
		}))
		s.Handle(HeartBeat, "", echo)
	})
	c := newClient(t, ClientConfig{})
	addr := s.Addr().String()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Invoke(context.Background(), addr, NewRequest(PullMessage, nil, nil))
		errc <- err
	}()
	recv(t, entered, "held pull")
	mu.Lock()
	_ = serverConns[0].Close()
	mu.Unlock()
	if err := recv(t, errc, "pending failure"); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("%v", err)
	}
	// The dead connection is replaced on the next call: the call failed
	// only after the connection was marked closed.
	resp, err := c.Invoke(ctxGuard(t), addr, NewRequest(HeartBeat, nil, nil))
	if err != nil || resp.Code != Success {
		t.Fatalf("after redial: %v %+v", err, resp)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(serverConns) != 1 || !serverConns[0].Closed() {
		t.Fatal("server side connection state")
	}
}

// A handler that returns nil and answers later with WriteCommand (long
// polling).
func TestDeferredResponse(t *testing.T) {
	held := make(chan struct {
		conn *Conn
		req  *Command
	}, 1)
	s := startServer(t, ServerConfig{Pools: map[string]PoolConfig{"pull": {}}}, func(s *Server) {
		s.Handle(PullMessage, "pull", HandlerFunc(func(_ context.Context, conn *Conn, req *Command) *Command {
			held <- struct {
				conn *Conn
				req  *Command
			}{conn, req}
			return nil
		}))
	})
	c := newClient(t, ClientConfig{})
	done := make(chan *Command, 1)
	go func() {
		resp, err := c.Invoke(ctxGuard(t), s.Addr().String(), NewRequest(PullMessage, nil, nil))
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	h := recv(t, held, "held request")
	resp := NewResponse(h.req, PullNotFound, "")
	resp.SetExt("nextBeginOffset", "5")
	if err := h.conn.WriteCommand(resp); err != nil {
		t.Fatal(err)
	}
	if r := recv(t, done, "deferred response"); r == nil || r.Code != PullNotFound || r.ExtFields["nextBeginOffset"] != "5" {
		t.Fatalf("%+v", r)
	}
}

func TestLargeBodies(t *testing.T) {
	s := startServer(t, ServerConfig{MaxFrameSize: 2 << 20}, func(s *Server) { s.Handle(SendMessage, "", echo) })
	c := newClient(t, ClientConfig{MaxFrameSize: 2 << 20})
	addr := s.Addr().String()
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: written with writev
	resp, err := c.Invoke(ctxGuard(t), addr, NewRequest(SendMessage, nil, body))
	if err != nil || !bytes.Equal(resp.Body, body) {
		t.Fatalf("%v, %d bytes back", err, len(resp.Body))
	}
	// Over the limit: refused before writing, the connection stays up.
	_, err = c.Invoke(ctxGuard(t), addr, NewRequest(SendMessage, nil, make([]byte, 2<<20)))
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("oversized request: %v", err)
	}
	if resp, err := c.Invoke(ctxGuard(t), addr, NewRequest(SendMessage, nil, []byte("x"))); err != nil || string(resp.Body) != "x" {
		t.Fatalf("after refusal: %v", err)
	}
}

func TestClientClose(t *testing.T) {
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(PullMessage, "", HandlerFunc(func(context.Context, *Conn, *Command) *Command { return nil }))
	})
	c := NewClient(ClientConfig{})
	addr := s.Addr().String()
	done := make(chan error, 1)
	if err := c.InvokeAsync(context.Background(), addr, NewRequest(PullMessage, nil, nil), func(_ *Command, err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Close waited for the callback.
	select {
	case err := <-done:
		if !errors.Is(err, ErrConnClosed) || !errors.Is(err, ErrClosed) {
			t.Fatalf("pending call: %v", err)
		}
	default:
		t.Fatal("Close returned before the callback ran")
	}
	if _, err := c.Invoke(ctxGuard(t), addr, NewRequest(PullMessage, nil, nil)); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	if err := c.InvokeAsync(ctxGuard(t), addr, NewRequest(PullMessage, nil, nil), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("async after close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestDialFailure(t *testing.T) {
	s := startServer(t, ServerConfig{}, nil)
	addr := s.Addr().String()
	if err := s.Close(ctxGuard(t)); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, ClientConfig{DialTimeout: time.Second})
	_, err := c.Invoke(ctxGuard(t), addr, NewRequest(HeartBeat, nil, nil))
	if err == nil || errors.Is(err, ErrTimeout) {
		t.Fatalf("dial to a closed port: %v", err)
	}
	if _, err := c.Invoke(ctxGuard(t), "", NewRequest(HeartBeat, nil, nil)); err == nil {
		t.Fatal("empty address accepted")
	}
}

func TestServerLifecycle(t *testing.T) {
	s := NewServer(ServerConfig{Addr: "127.0.0.1:0"})
	if s.Addr() != nil {
		t.Fatal("address before Start")
	}
	// Closing a server that never started is fine.
	if err := s.Close(ctxGuard(t)); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}

	s2 := startServer(t, ServerConfig{}, nil)
	if err := s2.Start(); err == nil {
		t.Fatal("second Start succeeded")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Handle with an unknown pool did not panic")
			}
		}()
		s2.Handle(1, "nope", echo)
	}()

	// Close interrupts a handler that waits on its context, and fails a
	// pending server-to-client call.
	inHandler := make(chan struct{})
	handlerErr := make(chan error, 1)
	s3 := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(HeartBeat, "", HandlerFunc(func(ctx context.Context, conn *Conn, req *Command) *Command {
			close(inHandler)
			_, err := conn.Request(ctx, NewRequest(CheckTransactionState, nil, nil))
			handlerErr <- err
			return nil
		}))
	})
	c := newClient(t, ClientConfig{OnRequest: HandlerFunc(func(context.Context, *Conn, *Command) *Command { return nil })})
	callErr := make(chan error, 1)
	go func() {
		_, err := c.Invoke(ctxGuard(t), s3.Addr().String(), NewRequest(HeartBeat, nil, nil))
		callErr <- err
	}()
	<-inHandler
	if err := s3.Close(ctxGuard(t)); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, handlerErr, "handler"); !errors.Is(err, ErrConnClosed) && !errors.Is(err, context.Canceled) {
		t.Fatalf("server-to-client call during close: %v", err)
	}
	if err := recv(t, callErr, "client"); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("client call during close: %v", err)
	}
}

// Close with an expired context returns its error and still finishes in
// the background.
func TestServerCloseDeadline(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	s := NewServer(ServerConfig{Addr: "127.0.0.1:0"})
	s.Handle(HeartBeat, "", HandlerFunc(func(context.Context, *Conn, *Command) *Command {
		close(entered)
		<-release // ignores its context
		return nil
	}))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, ClientConfig{})
	go func() { _, _ = c.Invoke(ctxGuard(t), s.Addr().String(), NewRequest(HeartBeat, nil, nil)) }()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := s.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v", err)
	}
	close(release)
	// A second Close is a no-op.
	if err := s.Close(ctxGuard(t)); err != nil {
		t.Fatal(err)
	}
}

func ExampleServer() {
	s := NewServer(ServerConfig{Addr: "127.0.0.1:0", Pools: map[string]PoolConfig{"admin": {Workers: 2}}})
	s.Handle(GetBrokerClusterInfo, "admin", HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
		resp := NewResponse(req, Success, "")
		resp.Body = []byte(`{"brokerAddrTable":{},"clusterAddrTable":{}}`)
		return resp
	}))
	if err := s.Start(); err != nil {
		panic(err)
	}
	defer s.Close(context.Background())

	c := NewClient(ClientConfig{})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, s.Addr().String(), NewRequest(GetBrokerClusterInfo, nil, nil))
	if err != nil {
		panic(err)
	}
	fmt.Println(ResponseCodeName(resp.Code), string(resp.Body))
	// Output: SUCCESS {"brokerAddrTable":{},"clusterAddrTable":{}}
}

// A server given a bound listener serves it (its address known before
// Start) and closes it on Close.
func TestServerOnGivenListener(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(ServerConfig{Addr: "127.0.0.1:1", Listener: l})
	s.Handle(SendMessage, "", echo)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if s.Addr().String() != l.Addr().String() {
		t.Fatalf("serving %s, listener %s", s.Addr(), l.Addr())
	}
	c := newClient(t, ClientConfig{})
	resp, err := c.Invoke(ctxGuard(t), l.Addr().String(), NewRequest(SendMessage, nil, []byte("x")))
	if err != nil || string(resp.Body) != "x" {
		t.Fatalf("%+v %v", resp, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Accept(); err == nil {
		t.Fatal("listener still open after Close")
	}
}

// TestServerCloseDrainsInFlight: Close answers the requests already in
// flight before it closes the connections, and refuses new ones with
// SERVICE_NOT_AVAILABLE meanwhile (a client can retry those elsewhere:
// they certainly did not run).
func TestServerCloseDrainsInFlight(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	s := NewServer(ServerConfig{Addr: "127.0.0.1:0"})
	s.Handle(HeartBeat, "", HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
		entered <- struct{}{}
		<-release
		return NewResponse(req, Success, "done")
	}))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, ClientConfig{})
	addr := s.Addr().String()
	// A connection opened before Close, for the request sent during it.
	if _, err := c.Invoke(ctxGuard(t), addr, NewRequest(GetBrokerClusterInfo, nil, nil)); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		resp, err := c.Invoke(ctxGuard(t), addr, NewRequest(HeartBeat, nil, nil))
		if err == nil && resp.Remark != "done" {
			err = errors.New("answer " + resp.Remark)
		}
		first <- err
	}()
	recv(t, entered, "the first request running")
	closed := make(chan error, 1)
	go func() { closed <- s.Close(ctxGuard(t)) }()
	waitFor(t, "the server draining", s.draining.Load)
	resp, err := c.Invoke(ctxGuard(t), addr, NewRequest(HeartBeat, nil, nil))
	if err != nil || resp.Code != ServiceNotAvailable {
		t.Fatalf("a request during the drain: %+v %v", resp, err)
	}
	close(release)
	if err := recv(t, first, "the first answer"); err != nil {
		t.Fatalf("the request in flight lost its answer: %v", err)
	}
	if err := recv(t, closed, "Close"); err != nil {
		t.Fatal(err)
	}
}

// TestResponseHeaderForm: a response goes in its request's header form
// (handlers, the server's own refusals, answers written later), and one
// the binary form cannot carry (a code outside int16) goes as JSON with
// its code intact rather than binary with another.
func TestResponseHeaderForm(t *testing.T) {
	const bigCode = 200052 // beyond int16, like RocketMQ's POP codes
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(SendMessage, "", echo)
		s.Handle(PullMessage, "", HandlerFunc(func(_ context.Context, conn *Conn, req *Command) *Command {
			go func() { _ = conn.WriteCommand(NewResponse(req, Success, "later")) }()
			return nil
		}))
		s.Handle(HeartBeat, "", HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
			return NewResponse(req, bigCode, "big")
		}))
	})
	for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
		nc := dialRaw(t, s)
		for i, tc := range []struct {
			code     int32
			wantCode int32
			wantType byte
		}{
			{SendMessage, Success, st},
			{PullMessage, Success, st},
			{-77, RequestCodeNotSupported, st},
			{HeartBeat, bigCode, SerializeJSON},
		} {
			req := NewRequest(tc.code, map[string]string{"topic": "T"}, nil)
			req.SerializeType, req.Opaque = st, int32(i+1)
			writeCmd(t, nc, req)
			resp := readCmd(t, nc)
			if resp.Opaque != req.Opaque || resp.Code != tc.wantCode || resp.SerializeType != tc.wantType || !resp.IsResponse() {
				t.Fatalf("request %d in form %d answered with code %d in form %d (opaque %d), want code %d in form %d",
					tc.code, st, resp.Code, resp.SerializeType, resp.Opaque, tc.wantCode, tc.wantType)
			}
		}
	}
}
