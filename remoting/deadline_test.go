package remoting

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"
)

// pendingOf returns the calls pending on conn and the size of its
// deadline heap.
func pendingOf(conn *Conn) (pending, deadlines int) {
	conn.mu.Lock()
	defer conn.mu.Unlock()
	return len(conn.pending), len(conn.deadlines)
}

// TestCallDeadline checks deadlines kept by the connection: a call whose
// deadline passes fails with ErrTimeout (and context.DeadlineExceeded)
// with no deadline on its context, calls fail in deadline order whatever
// their start order (the later one is still pending when the earlier one
// failed), answered calls leave the heap, the connection survives, and a
// deadline already past fails before anything is sent. The server sends
// the client a notification as each held call arrives: a connection that
// reads nothing through a call's wait would close at its timeout
// (ErrConnSilent; silent_test.go).
func TestCallDeadline(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 8)
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(PullMessage, "", HandlerFunc(func(_ context.Context, conn *Conn, req *Command) *Command {
			arrived <- struct{}{}
			_ = conn.Oneway(NewRequest(NotifyConsumerIdsChanged, nil, nil))
			<-release
			return NewResponse(req, Success, "late")
		}))
		s.Handle(HeartBeat, "", echo)
	})
	defer close(release)
	c := newClient(t, ClientConfig{})
	addr := s.Addr().String()
	ctx := ctxGuard(t)
	for range 3 {
		if _, err := c.InvokeWith(ctx, addr, NewRequest(HeartBeat, nil, nil), CallOptions{Deadline: time.Now().Add(guard)}); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := c.conn(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	if p, d := pendingOf(conn); p != 0 || d != 0 {
		t.Fatalf("after answered calls: %d pending, %d deadlines", p, d)
	}

	long := make(chan error, 1)
	go func() {
		_, err := c.InvokeWith(ctx, addr, NewRequest(PullMessage, nil, nil), CallOptions{Deadline: time.Now().Add(guard / 2)})
		long <- err
	}()
	// The long call is pending (the server has it) before the short one
	// starts.
	recv(t, arrived, "the long call")
	_, err = c.InvokeWith(ctx, addr, NewRequest(PullMessage, nil, nil), CallOptions{Deadline: time.Now().Add(200 * time.Millisecond)})
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("short call: %v", err)
	}
	if p, d := pendingOf(conn); p != 1 || d != 1 {
		t.Fatalf("after the short call's deadline: %d pending, %d deadlines; want the long call's", p, d)
	}
	select {
	case err := <-long:
		t.Fatalf("long call ended with the short one: %v", err)
	default:
	}

	if _, err := c.InvokeWith(ctx, addr, NewRequest(HeartBeat, nil, nil), CallOptions{Deadline: time.Now().Add(-time.Millisecond)}); !errors.Is(err, ErrTimeout) {
		t.Fatalf("past deadline: %v", err)
	}
	if resp, err := c.Invoke(ctx, addr, NewRequest(HeartBeat, nil, nil)); err != nil || resp.Code != Success {
		t.Fatalf("after timeouts: %v %+v", err, resp)
	}
	// Cancelling the context still ends a call with a deadline.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.InvokeWith(cctx, addr, NewRequest(PullMessage, nil, nil), CallOptions{Deadline: time.Now().Add(guard)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	// Closing the connection fails the long call and empties the heap.
	conn.Close()
	if err := recv(t, long, "long call"); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("long call after close: %v", err)
	}
	if _, d := pendingOf(conn); d != 0 {
		t.Fatalf("%d deadlines after close", d)
	}
}

// TestCallExtList checks that a call asking for ExtList gets the fields
// the map of a plain call holds.
func TestCallExtList(t *testing.T) {
	s := startServer(t, ServerConfig{}, func(s *Server) { s.Handle(HeartBeat, "", echo) })
	c := newClient(t, ClientConfig{})
	addr := s.Addr().String()
	ext := map[string]string{"msgId": "A,B", "queueId": "3", "queueOffset": "42", "MSG_REGION": "r"}
	for _, typ := range []byte{SerializeJSON, SerializeRocketMQ} {
		req := NewRequest(HeartBeat, ext, nil)
		req.SerializeType = typ
		byMap, err := c.Invoke(ctxGuard(t), addr, req)
		if err != nil {
			t.Fatal(err)
		}
		byList, err := c.InvokeWith(ctxGuard(t), addr, req, CallOptions{ExtList: true})
		if err != nil {
			t.Fatal(err)
		}
		if byMap.ExtList != nil || byList.ExtFields != nil || !maps.Equal(byMap.ExtFields, ext) || !maps.Equal(byList.ExtMap(), ext) {
			t.Fatalf("type %d: map %v %v, list %v %v", typ, byMap.ExtFields, byMap.ExtList, byList.ExtFields, byList.ExtList)
		}
	}
}
