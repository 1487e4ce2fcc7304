package remoting

import (
	"context"
	"strconv"
	"sync"
	"testing"
)

// TestAsyncHandler: an AsyncHandler returns at once, so one worker takes
// every request of a burst while none is answered yet; the requests count
// in flight until their replies, which one goroutine gives in reverse
// order (each reaches its caller by opaque); a second reply is ignored.
func TestAsyncHandler(t *testing.T) {
	const n = 16
	var mu sync.Mutex
	var replies []Reply
	var reqs []*Command
	got := make(chan struct{}, n)
	s := startServer(t, ServerConfig{Pools: map[string]PoolConfig{DefaultPool: {Workers: 1}}}, func(s *Server) {
		s.Handle(SendMessage, "", AsyncHandlerFunc(func(_ context.Context, _ *Conn, req *Command, reply Reply) {
			mu.Lock()
			replies, reqs = append(replies, reply), append(reqs, req)
			mu.Unlock()
			got <- struct{}{}
		}))
	})
	c := newClient(t, ClientConfig{})
	addr := s.Addr().String()
	answers := make(chan *Command, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			resp, err := c.Invoke(ctxGuard(t), addr, NewRequest(SendMessage, map[string]string{"i": strconv.Itoa(i)}, nil))
			if err != nil {
				errs <- err
				return
			}
			answers <- resp
		}()
	}
	for range n {
		recv(t, got, "a request taken by the one worker")
	}
	if in := s.Stats().InFlight; in != n {
		t.Fatalf("in flight before the replies: %d, want %d", in, n)
	}
	mu.Lock()
	for i := n - 1; i >= 0; i-- {
		resp := NewResponse(reqs[i], Success, "")
		resp.ExtFields = map[string]string{"i": reqs[i].ExtFields["i"]}
		replies[i](resp)
		replies[i](NewResponse(reqs[i], SystemError, "twice"))
	}
	mu.Unlock()
	seen := map[string]bool{}
	for range n {
		select {
		case err := <-errs:
			t.Fatal(err)
		case resp := <-answers:
			if resp.Code != Success || seen[resp.ExtFields["i"]] {
				t.Fatalf("answer %+v (seen %v)", resp, seen)
			}
			seen[resp.ExtFields["i"]] = true
		}
	}
	waitFor(t, "nothing in flight", func() bool { return s.Stats().InFlight == 0 })
}

// TestAsyncHandlerPanicAndClosedConn: a panic before the reply is answered
// SystemError; a reply given after its connection closed is dropped and
// still ends the request (nothing stays in flight).
func TestAsyncHandlerPanicAndClosedConn(t *testing.T) {
	held := make(chan Reply, 1)
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(SendMessage, "", AsyncHandlerFunc(func(context.Context, *Conn, *Command, Reply) {
			panic("boom")
		}))
		s.Handle(HeartBeat, "", AsyncHandlerFunc(func(_ context.Context, _ *Conn, _ *Command, reply Reply) {
			held <- reply
		}))
	})
	c := newClient(t, ClientConfig{})
	addr := s.Addr().String()
	resp, err := c.Invoke(ctxGuard(t), addr, NewRequest(SendMessage, nil, nil))
	if err != nil || resp.Code != SystemError {
		t.Fatalf("a panicking handler: %+v %v", resp, err)
	}
	c2 := newClient(t, ClientConfig{})
	ctx, cancel := context.WithCancel(ctxGuard(t))
	done := make(chan error, 1)
	go func() {
		_, err := c2.Invoke(ctx, addr, NewRequest(HeartBeat, nil, nil))
		done <- err
	}()
	reply := recv(t, held, "the request held")
	cancel()
	<-done
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the server to see the connection closed", func() bool { return s.Stats().Conns <= 1 })
	reply(NewResponse(NewRequest(HeartBeat, nil, nil), Success, "late"))
	waitFor(t, "nothing in flight", func() bool { return s.Stats().InFlight == 0 })
}
