package remoting

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"
)

// outcome is what an InvokeFunc call's done received.
type outcome struct {
	resp *Command
	err  error
}

// watchCount is how many contexts conn watches.
func watchCount(conn *Conn) int {
	conn.mu.Lock()
	defer conn.mu.Unlock()
	return len(conn.watches)
}

// TestInvokeFunc: InvokeFunc never dials (ErrNotConnected); on an open
// connection a burst of calls sharing one context is answered, each
// outcome delivered once, the response's fields listed when asked, and
// the context is watched once while calls are pending and no longer
// after.
func TestInvokeFunc(t *testing.T) {
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(SendMessage, "", HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
			resp := NewResponse(req, Success, "")
			resp.ExtFields = map[string]string{"i": req.ExtFields["i"]}
			return resp
		}))
	})
	c := newClient(t, ClientConfig{RawSocketIO: true}) // as the producer client
	addr := s.Addr().String()
	ctx, cancel := context.WithCancel(ctxGuard(t))
	defer cancel()
	req := NewRequest(SendMessage, map[string]string{"i": "x"}, nil)
	if err := c.InvokeFunc(ctx, addr, req, CallOptions{}, func(*Command, error) {
		t.Error("done called for a call that was not made")
	}); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("before any dial: %v", err)
	}
	if _, err := c.Invoke(ctx, addr, req); err != nil { // dials
		t.Fatal(err)
	}

	const n = 64
	got := make(chan outcome, 2*n)
	var calls sync.WaitGroup
	for i := range n {
		calls.Add(1)
		o := CallOptions{ExtList: i%2 == 0, Deadline: time.Now().Add(time.Minute)}
		err := c.InvokeFunc(ctx, addr, NewRequest(SendMessage, map[string]string{"i": strconv.Itoa(i)}, nil), o,
			func(resp *Command, err error) {
				got <- outcome{resp, err}
				calls.Done()
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for range n {
		o := recv(t, got, "an outcome")
		if o.err != nil || o.resp.Code != Success {
			t.Fatalf("outcome %+v %v", o.resp, o.err)
		}
		i := o.resp.ExtMap()["i"]
		listed := o.resp.ExtFields == nil
		if n, _ := strconv.Atoi(i); seen[i] || listed != (n%2 == 0) {
			t.Fatalf("response %q (listed %v) twice or in the wrong form", i, listed)
		}
		seen[i] = true
	}
	calls.Wait()
	if len(got) != 0 {
		t.Fatal("an outcome delivered twice")
	}
	conn := c.liveConn(addr)
	if conn == nil {
		t.Fatal("no live connection")
	}
	if w := watchCount(conn); w != 0 {
		t.Fatalf("%d contexts still watched with no call pending", w)
	}
}

// TestInvokeFuncEnds: a call nobody answers ends with ErrTimeout at its
// deadline (its connection, which read nothing meanwhile, closing:
// ErrConnSilent), with its context's error when that ends first (the
// other contexts' calls untouched), and with ErrConnClosed when its
// connection closes; each once, and no context stays watched.
func TestInvokeFuncEnds(t *testing.T) {
	held := make(chan Reply, 16)
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(SendMessage, "", AsyncHandlerFunc(func(_ context.Context, _ *Conn, _ *Command, reply Reply) {
			held <- reply
		}))
	})
	c := newClient(t, ClientConfig{RawSocketIO: true}) // as the producer client
	addr := s.Addr().String()
	if _, err := c.Invoke(ctxGuard(t), addr, NewRequest(HeartBeat, nil, nil)); err != nil {
		t.Fatal(err)
	}
	conn := c.liveConn(addr)
	invoke := func(ctx context.Context, o CallOptions) <-chan outcome {
		ch := make(chan outcome, 2)
		if err := c.InvokeFunc(ctx, addr, NewRequest(SendMessage, nil, nil), o, func(resp *Command, err error) {
			ch <- outcome{resp, err}
		}); err != nil {
			t.Fatal(err)
		}
		return ch
	}

	timed := invoke(context.Background(), CallOptions{Deadline: time.Now().Add(50 * time.Millisecond)})
	if o := recv(t, timed, "the deadline"); !errors.Is(o.err, ErrTimeout) || !errors.Is(o.err, context.DeadlineExceeded) {
		t.Fatalf("at the deadline: %v", o.err)
	}
	if err := conn.closedError(); !conn.Closed() || !errors.Is(err, ErrConnSilent) {
		t.Fatalf("a connection that read nothing through a timeout: closed %v, %v", conn.Closed(), err)
	}
	if _, err := c.Invoke(ctxGuard(t), addr, NewRequest(HeartBeat, nil, nil)); err != nil {
		t.Fatal(err)
	}
	conn = c.liveConn(addr)

	ctxA, cancelA := context.WithCancel(ctxGuard(t))
	ctxB, cancelB := context.WithCancel(ctxGuard(t))
	defer cancelB()
	a1, a2 := invoke(ctxA, CallOptions{}), invoke(ctxA, CallOptions{})
	b := invoke(ctxB, CallOptions{})
	waitFor(t, "the four requests held", func() bool { return len(held) == 4 })
	if w := watchCount(conn); w != 2 {
		t.Fatalf("%d contexts watched, want 2", w)
	}
	cancelA()
	for _, ch := range []<-chan outcome{a1, a2} {
		if o := recv(t, ch, "the cancellation"); !errors.Is(o.err, context.Canceled) {
			t.Fatalf("cancelled: %v", o.err)
		}
	}
	if w := watchCount(conn); w != 1 {
		t.Fatalf("%d contexts watched after one ended, want 1", w)
	}
	if err := c.InvokeFunc(ctxA, addr, NewRequest(SendMessage, nil, nil), CallOptions{}, func(*Command, error) {
		t.Error("done called for a call that was not made")
	}); !errors.Is(err, context.Canceled) {
		t.Fatalf("with an ended context: %v", err)
	}

	_ = conn.Close()
	if o := recv(t, b, "the close"); !errors.Is(o.err, ErrConnClosed) {
		t.Fatalf("closed: %v", o.err)
	}
	if w := watchCount(conn); w != 0 {
		t.Fatalf("%d contexts watched on a closed connection", w)
	}
	for _, ch := range []<-chan outcome{timed, a1, a2, b} {
		select {
		case o := <-ch:
			t.Fatalf("a second outcome: %+v %v", o.resp, o.err)
		default:
		}
	}
	if err := c.InvokeFunc(ctxB, addr, NewRequest(SendMessage, nil, nil), CallOptions{}, nil); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("after the close: %v", err)
	}
	for range 4 { // the server's requests end with their (dropped) replies
		recv(t, held, "a request held")(NewResponse(NewRequest(SendMessage, nil, nil), Success, "late"))
	}
	waitFor(t, "nothing in flight", func() bool { return s.Stats().InFlight == 0 })
}
