package remoting

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// stallN opens n connections that each announce a frame of announced bytes
// with a code header and stop after sent bytes; the test's cleanup closes
// them.
func stallN(t *testing.T, s *Server, code int32, n, announced, sent int) []net.Conn {
	t.Helper()
	out := make([]net.Conn, 0, n)
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		nc, err := StallFrame(ctx, s.Addr().String(), code, announced, sent)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = nc.Close() })
		out = append(out, nc)
	}
	return out
}

// invokeOK sends req to s and fails the test unless it succeeds.
func invokeOK(t *testing.T, c *Client, s *Server, req *Command) *Command {
	t.Helper()
	resp, err := c.Invoke(ctxGuard(t), s.Addr().String(), req)
	if err != nil || resp.Code != Success {
		t.Fatalf("%s: %v %+v", RequestCodeName(req.Code), err, resp)
	}
	return resp
}

// 32 connections each sending 12 MiB of a 16 MiB frame used to fill the
// name server's budget: every other request waited for as long as they
// stayed open. Large frames now hold at most the budget less its reserve,
// so small requests are read at once while the stalled frames hold the
// rest and further ones wait (here the stall watcher is kept out of it).
func TestStalledFramesLeaveTheReserve(t *testing.T) {
	const frame, budgetBytes = 1 << 20, 4 << 20
	s := startServer(t, ServerConfig{MaxFrameSize: frame,
		Limits: Limits{ReadBudget: budgetBytes, StallGrace: time.Hour, StarvedAfter: time.Nanosecond}},
		func(s *Server) {
			s.Handle(HeartBeat, "", echo)
			s.Handle(SendMessage, "", echo)
		})
	stallN(t, s, SendMessage, 8, frame, frame*3/4)
	reserve := s.Stats().ReadReserve
	waitFor(t, "the large part full and the others waiting", func() bool {
		st := s.Stats()
		return st.HeldBytes > budgetBytes-reserve-frame && st.ReadWaiting == 8-3
	})
	c := newClient(t, ClientConfig{})
	for i := range 50 {
		resp := invokeOK(t, c, s, NewRequest(HeartBeat, map[string]string{"i": string(rune('a' + i%26))}, make([]byte, 16<<10)))
		if len(resp.Body) != 16<<10 {
			t.Fatalf("body %d", len(resp.Body))
		}
	}
	st := s.Stats()
	if st.HeldBytes > budgetBytes-reserve || st.StarvedReads != 0 || s.ReadHealth() != nil {
		t.Fatalf("stats %+v, health %v", st, s.ReadHealth())
	}
}

// When readers wait for the budget, the connections silent inside a frame
// that holds budget are closed, the longest silent first: a legitimate
// large request then goes through, and a slow sender that keeps sending
// completes.
func TestStalledFramesClosedWhenBudgetShort(t *testing.T) {
	const frame, budgetBytes = 1 << 20, 4 << 20
	s := startServer(t, ServerConfig{MaxFrameSize: frame,
		Limits: Limits{ReadBudget: budgetBytes, StallGrace: 50 * time.Millisecond}},
		func(s *Server) { s.Handle(SendMessage, "", echo) })
	stallN(t, s, SendMessage, 8, frame, frame/2)
	// Three fit in the large part; the five others wait, so the silent
	// three are closed, and so on.
	waitFor(t, "stalled connections closed", func() bool { return s.Stats().StalledCloses >= 3 })
	stallN(t, s, SendMessage, 8, frame, frame/2)

	c := newClient(t, ClientConfig{})
	big := make([]byte, 512<<10)
	resp := invokeOK(t, c, s, NewRequest(SendMessage, nil, big))
	if len(resp.Body) != len(big) {
		t.Fatalf("body %d", len(resp.Body))
	}

	// A slow sender, paced well within the limits, is served too.
	slow, err := Encode(nil, &Command{Code: SendMessage, Opaque: 9, Body: make([]byte, 256<<10)})
	if err != nil {
		t.Fatal(err)
	}
	nc := dialRaw(t, s)
	done := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for len(slow) > 0 {
			<-tick.C // pacing the sender, not waiting for a condition
			n := min(len(slow), 8<<10)
			if _, err := nc.Write(slow[:n]); err != nil {
				done <- err
				return
			}
			slow = slow[n:]
		}
		done <- nil
	}()
	t.Cleanup(func() { _ = nc.Close(); wg.Wait() })
	if resp := readCmd(t, nc); resp.Code != Success || resp.Opaque != 9 || len(resp.Body) != 256<<10 {
		t.Fatalf("slow sender: %+v", resp)
	}
	if err := recv(t, done, "slow sender"); err != nil {
		t.Fatal(err)
	}

	// The attack's second round is closed as the first was.
	waitFor(t, "the second round closed", func() bool { return s.Stats().StalledCloses >= 6 })
}

// A frame that does not arrive within FrameTimeout plus its length at
// MinReadRate closes its connection, with or without budget pressure.
func TestFrameDeadline(t *testing.T) {
	closed := make(chan *Conn, 1)
	s := startServer(t, ServerConfig{OnConnClose: func(c *Conn) { closed <- c },
		Limits: Limits{FrameTimeout: 50 * time.Millisecond, MinReadRate: 1 << 40, StallGrace: time.Hour}},
		func(s *Server) { s.Handle(SendMessage, "", echo) })
	nc := stallN(t, s, SendMessage, 1, 1<<20, 100)[0]
	recv(t, closed, "close of the late frame")
	waitClosedByPeer(t, nc)
	waitFor(t, "budget returned", func() bool { return s.HeldBytes() == 0 })
	if st := s.Stats(); st.StalledCloses != 1 {
		t.Fatalf("%+v", st)
	}
}

// A request whose code may not carry a large body is answered as soon as
// its header is read, its body is discarded without being held, and the
// connection goes on; codes in LargeBodyCodes and responses are not
// limited.
func TestLargeBodyCodes(t *testing.T) {
	srvConn := make(chan *Conn, 1)
	s := startServer(t, ServerConfig{LargeBodyCodes: []int32{SendMessage}},
		func(s *Server) {
			s.Handle(SendMessage, "", echo)
			s.Handle(HeartBeat, "", echo)
			s.Handle(GetConsumerListByGroup, "", HandlerFunc(func(_ context.Context, c *Conn, req *Command) *Command {
				srvConn <- c
				return NewResponse(req, Success, "")
			}))
		})
	c := newClient(t, ClientConfig{OnRequest: HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
		resp := NewResponse(req, Success, "")
		resp.Body = make([]byte, 1<<20)
		return resp
	})})
	big := make([]byte, SmallFrameSize+1)
	resp, err := c.Invoke(ctxGuard(t), s.Addr().String(), NewRequest(HeartBeat, nil, big))
	if err != nil || resp.Code != SystemError || !strings.Contains(resp.Remark, "HEART_BEAT") {
		t.Fatalf("%v %+v", err, resp)
	}
	invokeOK(t, c, s, NewRequest(HeartBeat, nil, make([]byte, 1000)))
	if resp := invokeOK(t, c, s, NewRequest(SendMessage, nil, big)); len(resp.Body) != len(big) {
		t.Fatalf("body %d", len(resp.Body))
	}
	// A large response to the server's own call is read.
	invokeOK(t, c, s, NewRequest(GetConsumerListByGroup, nil, nil))
	conn := recv(t, srvConn, "the server side of the connection")
	back, err := conn.Request(ctxGuard(t), NewRequest(GetConsumerRunningInfo, nil, nil))
	if err != nil || back.Code != Success || len(back.Body) != 1<<20 {
		t.Fatalf("%v %+v", err, back)
	}
	waitFor(t, "budget returned", func() bool { return s.HeldBytes() == 0 })
	if st := s.Stats(); st.RefusedBodies != 1 {
		t.Fatalf("%+v", st)
	}
}

// When small frames wait for the budget without a break (here many small
// partial frames hold all of it), ReadHealth says the server cannot read
// new requests; once they go, it is healthy again.
func TestReadHealth(t *testing.T) {
	const announced = 60 << 10
	s := startServer(t, ServerConfig{MaxFrameSize: 64 << 10,
		Limits: Limits{ReadBudget: 256 << 10, StallGrace: time.Hour, StarvedAfter: time.Nanosecond}},
		func(s *Server) { s.Handle(HeartBeat, "", echo) })
	if err := s.ReadHealth(); err != nil {
		t.Fatal(err)
	}
	conns := stallN(t, s, HeartBeat, 5, announced, announced/2)
	waitFor(t, "the fifth waiting", func() bool { return s.Stats().ReadWaiting == 1 })
	waitFor(t, "starvation reported", func() bool { return s.ReadHealth() != nil })
	if err := s.ReadHealth(); !strings.Contains(err.Error(), "1 requests waiting to be read") {
		t.Fatal(err)
	}
	if st := s.Stats(); st.StarvedReads != 1 {
		t.Fatalf("%+v", st)
	}
	for _, nc := range conns {
		_ = nc.Close()
	}
	waitFor(t, "healthy again", func() bool { return s.ReadHealth() == nil && s.HeldBytes() == 0 })
}

// With LargeBodyField set, a large body is read only when the header
// carries that field (a signature, say).
func TestLargeBodyField(t *testing.T) {
	s := startServer(t, ServerConfig{LargeBodyCodes: []int32{SendMessage}, LargeBodyField: "Signature"},
		func(s *Server) { s.Handle(SendMessage, "", echo) })
	c := newClient(t, ClientConfig{})
	big := make([]byte, SmallFrameSize+1)
	resp, err := c.Invoke(ctxGuard(t), s.Addr().String(), NewRequest(SendMessage, nil, big))
	if err != nil || resp.Code != SystemError {
		t.Fatalf("%v %+v", err, resp)
	}
	invokeOK(t, c, s, NewRequest(SendMessage, map[string]string{"Signature": "x"}, big))
	invokeOK(t, c, s, NewRequest(SendMessage, nil, make([]byte, 1000)))
}
