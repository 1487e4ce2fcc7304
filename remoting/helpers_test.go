package remoting

import (
	"bytes"
	"context"
	"maps"
	"net"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/testwait"
)

// guard bounds every wait in the tests; it is a failure deadline, never a
// way to let something happen.
const guard = 10 * time.Second

// startServer starts a server on a loopback port with the given config and
// handlers; the test's cleanup closes it.
func startServer(t testing.TB, cfg ServerConfig, register func(*Server)) *Server {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	s := NewServer(cfg)
	if register != nil {
		register(s)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("server close: %v", err)
		}
	})
	return s
}

// newClient returns a client closed by the test's cleanup.
func newClient(t testing.TB, cfg ClientConfig) *Client {
	t.Helper()
	c := NewClient(cfg)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// ctxGuard is a context bounded by guard.
func ctxGuard(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	t.Cleanup(cancel)
	return ctx
}

// recv waits for a value on ch, failing the test after guard.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	return testwait.Recv(t, ch, guard, what)
}

// echo answers with the request's ext fields and body.
var echo = HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
	resp := NewResponse(req, Success, "")
	resp.ExtFields = maps.Clone(req.ExtFields)
	resp.Body = req.Body
	return resp
})

// dialRaw opens a plain TCP connection to s.
func dialRaw(t testing.TB, s *Server) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.Addr().String(), guard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return nc
}

// writeCmd encodes cmd onto a raw connection.
func writeCmd(t testing.TB, nc net.Conn, cmd *Command) {
	t.Helper()
	frame, err := Encode(nil, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
}

// readCmd reads and decodes one frame from a raw connection.
func readCmd(t testing.TB, nc net.Conn) *Command {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(guard))
	frame, err := ReadFrame(nc, nil, 0)
	if err != nil {
		t.Fatalf("read frame: %v", err)
	}
	cmd, err := Decode(frame)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return cmd
}

// waitClosedByPeer reads from nc until the peer closes it, discarding any
// bytes, and fails if that does not happen within guard.
func waitClosedByPeer(t testing.TB, nc net.Conn) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(guard))
	buf := make([]byte, 4096)
	for {
		if _, err := nc.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("server did not close the connection")
			}
			return
		}
	}
}

// sameCommand compares two commands, treating nil and empty maps and bodies
// as equal.
func sameCommand(a, b *Command) bool {
	return a.Code == b.Code && a.Language == b.Language && a.Version == b.Version &&
		a.Opaque == b.Opaque && a.Flag == b.Flag && a.Remark == b.Remark &&
		a.SerializeType == b.SerializeType && bytes.Equal(a.Body, b.Body) &&
		len(a.ExtFields) == len(b.ExtFields) && maps.Equal(a.ExtFields, b.ExtFields)
}
