package remoting

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/rawconn"
)

// TestRawSocketIOClient: a client with RawSocketIO makes its TCP
// connections raw, and calls over one carry frames larger than the
// socket buffers both ways, and end at their deadline as a plain
// client's do.
func TestRawSocketIOClient(t *testing.T) {
	held := make(chan Reply, 2)
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(SendMessage, "", HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
			resp := NewResponse(req, Success, "")
			resp.Body = bytes.Repeat(req.Body, 2)
			return resp
		}))
		s.Handle(HeartBeat, "", AsyncHandlerFunc(func(_ context.Context, _ *Conn, _ *Command, reply Reply) {
			held <- reply // answered late, at the end
		}))
	})
	addr := s.Addr().String()
	c := newClient(t, ClientConfig{RawSocketIO: true})
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	resp, err := c.Invoke(ctxGuard(t), addr, NewRequest(SendMessage, nil, body))
	if err != nil || !bytes.Equal(resp.Body, bytes.Repeat(body, 2)) {
		t.Fatalf("round trip: %v", err)
	}
	if _, ok := c.liveConn(addr).nc.(*rawconn.Conn); !ok {
		t.Fatal("the connection is not raw")
	}
	plain := newClient(t, ClientConfig{})
	if _, err := plain.Invoke(ctxGuard(t), addr, NewRequest(SendMessage, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.liveConn(addr).nc.(*net.TCPConn); !ok {
		t.Fatal("a plain client's connection is not the net package's")
	}
	for _, cl := range []*Client{c, plain} {
		ctx, cancel := context.WithTimeout(ctxGuard(t), 20*time.Millisecond)
		_, err := cl.Invoke(ctx, addr, NewRequest(HeartBeat, nil, nil))
		cancel()
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("past the deadline: %v", err)
		}
	}
	for range 2 {
		recv(t, held, "a held request")(NewResponse(NewRequest(HeartBeat, nil, nil), Success, "late"))
	}
}
