package remoting

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/tlsconf"
)

// tlsPair returns a server config and a client config of one dev CA.
func tlsPair(t *testing.T) (srv, cli *tls.Config) {
	t.Helper()
	f, err := tlsconf.WriteDev(filepath.Join(t.TempDir(), "tls"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := tlsconf.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	srv, err = src.ServerConfig(false)
	if err != nil {
		t.Fatal(err)
	}
	return srv, src.ClientConfig()
}

// TestTLSRequestsBothWays: a request, and the server's request back to
// the client on the same connection, over TLS.
func TestTLSRequestsBothWays(t *testing.T) {
	srvTLS, cliTLS := tlsPair(t)
	s := startServer(t, ServerConfig{TLS: srvTLS}, func(s *Server) {
		s.Handle(HeartBeat, "", HandlerFunc(func(ctx context.Context, conn *Conn, req *Command) *Command {
			if _, ok := conn.nc.(*tls.Conn); !ok {
				return NewResponse(req, SystemError, "not TLS")
			}
			ctx, cancel := context.WithTimeout(ctx, guard)
			defer cancel()
			answer, err := conn.Request(ctx, NewRequest(CheckTransactionState, nil, nil))
			if err != nil {
				return NewResponse(req, SystemError, err.Error())
			}
			resp := NewResponse(req, Success, "")
			resp.SetExt("verdict", answer.ExtFields["v"])
			return resp
		}))
	})
	c := newClient(t, ClientConfig{TLS: cliTLS, OnRequest: HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
		resp := NewResponse(req, Success, "")
		resp.SetExt("v", "8")
		return resp
	})})
	resp, err := c.Invoke(ctxGuard(t), s.Addr().String(), NewRequest(HeartBeat, nil, []byte("over tls")))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != Success || resp.ExtFields["verdict"] != "8" {
		t.Fatalf("%+v", resp)
	}
}

// TestTLSPlaintextRefused: a plaintext client on a TLS port and a TLS
// client on a plaintext port both fail with an error, and neither server
// keeps the connection.
func TestTLSPlaintextRefused(t *testing.T) {
	srvTLS, cliTLS := tlsPair(t)
	tlsSrv := startServer(t, ServerConfig{TLS: srvTLS}, func(s *Server) { s.Handle(SendMessage, "", echo) })
	plainSrv := startServer(t, ServerConfig{}, func(s *Server) { s.Handle(SendMessage, "", echo) })

	plain := newClient(t, ClientConfig{})
	if resp, err := plain.Invoke(ctxGuard(t), tlsSrv.Addr().String(), NewRequest(SendMessage, nil, []byte("x"))); err == nil {
		t.Fatalf("plaintext request answered by a TLS port: %+v", resp)
	}
	waitFor(t, "TLS server drops the plaintext connection", func() bool { return tlsSrv.ConnCount() == 0 })

	secure := newClient(t, ClientConfig{TLS: cliTLS})
	if resp, err := secure.Invoke(ctxGuard(t), plainSrv.Addr().String(), NewRequest(SendMessage, nil, []byte("x"))); err == nil {
		t.Fatalf("TLS request answered by a plaintext port: %+v", resp)
	}
	waitFor(t, "plaintext server drops the TLS connection", func() bool { return plainSrv.ConnCount() == 0 })

	// The TLS port still serves TLS clients.
	if resp, err := secure.Invoke(ctxGuard(t), tlsSrv.Addr().String(), NewRequest(SendMessage, nil, []byte("x"))); err != nil || resp.Code != Success {
		t.Fatalf("%+v, %v", resp, err)
	}
}

// TestTLSForeignServerRefused: a client that trusts another CA does not
// talk to the server.
func TestTLSForeignServerRefused(t *testing.T) {
	srvTLS, _ := tlsPair(t)
	_, otherCli := tlsPair(t)
	s := startServer(t, ServerConfig{TLS: srvTLS}, func(s *Server) { s.Handle(SendMessage, "", echo) })
	c := newClient(t, ClientConfig{TLS: otherCli})
	if _, err := c.Invoke(ctxGuard(t), s.Addr().String(), NewRequest(SendMessage, nil, nil)); err == nil {
		t.Fatal("a client of another CA was answered")
	}
}

// TestTLSHandshakeTimeout: a connection that never starts its handshake
// is closed after HandshakeTimeout, not held until the idle timeout.
func TestTLSHandshakeTimeout(t *testing.T) {
	srvTLS, _ := tlsPair(t)
	s := startServer(t, ServerConfig{TLS: srvTLS, HandshakeTimeout: 50 * time.Millisecond}, nil)
	nc, err := net.DialTimeout("tcp", s.Addr().String(), guard)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetReadDeadline(time.Now().Add(guard))
	if _, err := io.ReadAll(nc); err != nil {
		t.Fatalf("the silent connection was not closed by the server: %v", err)
	}
	waitFor(t, "connection forgotten", func() bool { return s.ConnCount() == 0 })
}
