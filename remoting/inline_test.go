package remoting

import (
	"context"
	"strconv"
	"testing"
)

// inlineTest is an InlineHandler: it takes requests whose "take" field is
// set on the read goroutine, answers a "panic" one by panicking there, and
// leaves the others to a worker, which answers them through ServeAsync.
type inlineTest struct {
	block chan struct{} // holds the one worker
}

func (h inlineTest) ServeInline(ctx context.Context, c *Conn, req *Command, reply Reply) bool {
	if !Inline(ctx) || Inline(Detached(ctx)) || Detached(ctx).Done() != c.Context().Done() {
		reply(NewResponse(req, SystemError, "inline context not marked, or Detached kept the mark or lost the connection's"))
		return true
	}
	switch req.ExtFields["mode"] {
	case "take":
		resp := NewResponse(req, Success, "inline")
		resp.ExtFields = map[string]string{"i": req.ExtFields["i"]}
		reply(resp)
		return true
	case "panic":
		panic("inline handler panicked")
	}
	return false
}

func (h inlineTest) ServeAsync(ctx context.Context, _ *Conn, req *Command, reply Reply) {
	<-h.block
	if Inline(ctx) {
		reply(NewResponse(req, SystemError, "a worker's context marked inline"))
		return
	}
	reply(NewResponse(req, Success, "worker"))
}

func (h inlineTest) Serve(ctx context.Context, c *Conn, req *Command) *Command {
	return AsyncHandlerFunc(h.ServeAsync).Serve(ctx, c, req)
}

// TestInlineHandler: ServeInline's context is marked Inline (and
// Detached's is not), a worker's is not; while the pool's one worker is
// held by a request the inline start declined, requests it takes are answered on the read
// goroutine (none needs the worker); a panic there is SystemError; the
// declined request is answered by the worker once released; the pool
// counts every request.
func TestInlineHandler(t *testing.T) {
	h := inlineTest{block: make(chan struct{})}
	s := startServer(t, ServerConfig{Pools: map[string]PoolConfig{DefaultPool: {Workers: 1}}}, func(s *Server) {
		s.Handle(SendMessage, "", h)
	})
	c := newClient(t, ClientConfig{})
	addr := s.Addr().String()
	declined := make(chan *Command, 1)
	go func() {
		resp, err := c.Invoke(ctxGuard(t), addr, NewRequest(SendMessage, map[string]string{"mode": "worker"}, nil))
		if err != nil {
			t.Error(err)
		}
		declined <- resp
	}()
	waitFor(t, "the declined request on the worker", func() bool { return s.Stats().InFlight == 1 })
	for i := range 32 {
		resp, err := c.Invoke(ctxGuard(t), addr, NewRequest(SendMessage, map[string]string{"mode": "take", "i": strconv.Itoa(i)}, nil))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code != Success || resp.Remark != "inline" || resp.ExtFields["i"] != strconv.Itoa(i) {
			t.Fatalf("inline answer %d: %+v", i, resp)
		}
	}
	resp, err := c.Invoke(ctxGuard(t), addr, NewRequest(SendMessage, map[string]string{"mode": "panic"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != SystemError {
		t.Fatalf("panic inline answered %+v, want SystemError", resp)
	}
	close(h.block)
	if resp := recv(t, declined, "the worker's answer"); resp == nil || resp.Remark != "worker" {
		t.Fatalf("declined request answered %+v", resp)
	}
	waitFor(t, "nothing in flight", func() bool { return s.Stats().InFlight == 0 })
	var handled uint64
	for _, p := range s.PoolStats() {
		handled += p.Handled
	}
	if handled != 34 {
		t.Fatalf("pool handled %d requests, want 34", handled)
	}
}
