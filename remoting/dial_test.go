package remoting

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hookDialer is a ClientConfig.Dial hook that records its calls and the
// connections it opened, and refuses addresses on demand.
type hookDialer struct {
	calls atomic.Int32

	mu      sync.Mutex
	refuse  map[string]error
	conns   []net.Conn
	lastCtx context.Context
}

func (d *hookDialer) dial(ctx context.Context, addr string) (net.Conn, error) {
	d.calls.Add(1)
	d.mu.Lock()
	d.lastCtx = ctx
	err := d.refuse[addr]
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.conns = append(d.conns, nc)
	d.mu.Unlock()
	return nc, nil
}

func (d *hookDialer) setRefuse(addr string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.refuse == nil {
		d.refuse = map[string]error{}
	}
	if err == nil {
		delete(d.refuse, addr)
		return
	}
	d.refuse[addr] = err
}

func (d *hookDialer) conn(i int) net.Conn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.conns[i]
}

// TestDialHook: every connection the client opens goes through the hook,
// including the redial after a connection dies, and concurrent calls share
// one dial; the hook's context carries DialTimeout.
func TestDialHook(t *testing.T) {
	s := startServer(t, ServerConfig{}, func(s *Server) { s.Handle(SendMessage, "", echo) })
	addr := s.Addr().String()
	d := &hookDialer{}
	c := newClient(t, ClientConfig{Dial: d.dial, DialTimeout: time.Second})
	ctx := ctxGuard(t)

	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Invoke(ctx, addr, NewRequest(SendMessage, nil, []byte("x"))); err != nil {
				t.Errorf("invoke: %v", err)
			}
		}()
	}
	wg.Wait()
	if n := d.calls.Load(); n != 1 {
		t.Fatalf("%d dials for concurrent calls to one address, want 1", n)
	}
	d.mu.Lock()
	dl, ok := d.lastCtx.Deadline()
	d.mu.Unlock()
	if !ok || time.Until(dl) > time.Second {
		t.Fatalf("hook context deadline %v (set %v), want within DialTimeout", dl, ok)
	}

	// A connection cut under the client is redialled through the hook.
	_ = d.conn(0).Close()
	var resp *Command
	var err error
	for resp == nil {
		resp, err = c.Invoke(ctx, addr, NewRequest(SendMessage, nil, []byte("y")))
		if err != nil && !errors.Is(err, ErrConnClosed) {
			t.Fatalf("invoke after cut: %v", err)
		}
	}
	if string(resp.Body) != "y" {
		t.Fatalf("echo %q", resp.Body)
	}
	if n := d.calls.Load(); n != 2 {
		t.Fatalf("%d dials after a cut, want 2", n)
	}
}

// TestDialHookError: the hook's error reaches every call path wrapped, the
// client stays usable, and the next call dials again.
func TestDialHookError(t *testing.T) {
	s := startServer(t, ServerConfig{}, func(s *Server) { s.Handle(SendMessage, "", echo) })
	addr := s.Addr().String()
	d := &hookDialer{}
	refused := errors.New("injected: link down")
	d.setRefuse(addr, refused)
	c := newClient(t, ClientConfig{Dial: d.dial})
	ctx := ctxGuard(t)

	if _, err := c.Invoke(ctx, addr, NewRequest(SendMessage, nil, nil)); !errors.Is(err, refused) {
		t.Fatalf("Invoke: %v, want the hook's error", err)
	}
	if err := c.InvokeOneway(ctx, addr, NewRequest(SendMessage, nil, nil)); !errors.Is(err, refused) {
		t.Fatalf("InvokeOneway: %v, want the hook's error", err)
	}
	if err := c.InvokeAsync(ctx, addr, NewRequest(SendMessage, nil, nil), nil); !errors.Is(err, refused) {
		t.Fatalf("InvokeAsync: %v, want the hook's error", err)
	}

	d.setRefuse(addr, nil)
	if _, err := c.Invoke(ctx, addr, NewRequest(SendMessage, nil, nil)); err != nil {
		t.Fatalf("Invoke after the link is back: %v", err)
	}
	if n := d.calls.Load(); n != 4 {
		t.Fatalf("%d dials, want 4", n)
	}
}

// TestDialHookNilConn: a hook that returns neither a connection nor an
// error fails the call instead of crashing the client.
func TestDialHookNilConn(t *testing.T) {
	c := newClient(t, ClientConfig{Dial: func(context.Context, string) (net.Conn, error) { return nil, nil }})
	if _, err := c.Invoke(ctxGuard(t), "127.0.0.1:1", NewRequest(SendMessage, nil, nil)); err == nil {
		t.Fatal("Invoke succeeded without a connection")
	}
}
