package remoting

import (
	"context"
	"sync/atomic"
	"testing"
)

// TestClientSignsEveryRequest: ClientConfig.Sign sees every request of
// Invoke, InvokeAsync and InvokeOneway before it leaves, and what it adds
// reaches the server.
func TestClientSignsEveryRequest(t *testing.T) {
	const code = 7001
	var seen atomic.Int32
	got := make(chan string, 3)
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(code, "", HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
			got <- req.ExtFields["Signature"]
			return NewResponse(req, Success, "")
		}))
	})
	c := newClient(t, ClientConfig{Sign: func(req *Command) {
		seen.Add(1)
		if req.ExtFields == nil {
			req.ExtFields = map[string]string{}
		}
		req.ExtFields["Signature"] = "signed"
	}})
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	addr := s.Addr().String()
	if _, err := c.Invoke(ctx, addr, NewRequest(code, nil, nil)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	if err := c.InvokeAsync(ctx, addr, NewRequest(code, nil, nil), func(_ *Command, err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := c.InvokeOneway(ctx, addr, NewRequest(code, nil, nil)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		select {
		case sig := <-got:
			if sig != "signed" {
				t.Fatalf("the server saw Signature %q", sig)
			}
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	if n := seen.Load(); n != 3 {
		t.Fatalf("Sign called %d times, want 3", n)
	}
}
