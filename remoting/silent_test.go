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

// silentPeer is a TCP listener on loopback whose connections read every
// request and answer none: a peer that vanished, whatever is sent to it
// lost. The test's cleanup closes it and waits for its goroutines.
type silentPeer struct {
	ln       net.Listener
	accepts  atomic.Int32
	requests atomic.Int32

	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func startSilentPeer(t *testing.T) *silentPeer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &silentPeer{ln: ln}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for _, nc := range p.conns {
			_ = nc.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *silentPeer) addr() string { return p.ln.Addr().String() }

// accept takes connections until the listener closes.
func (p *silentPeer) accept() {
	defer p.wg.Done()
	for {
		nc, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepts.Add(1)
		p.mu.Lock()
		p.conns = append(p.conns, nc)
		p.mu.Unlock()
		p.wg.Add(1)
		go p.swallow(nc)
	}
}

// swallow reads and counts the frames of nc until it closes.
func (p *silentPeer) swallow(nc net.Conn) {
	defer p.wg.Done()
	for {
		if _, err := ReadFrame(nc, nil, 0); err != nil {
			return
		}
		p.requests.Add(1)
	}
}

// deadlineCtx is a context whose deadline passes when the test calls
// expire rather than at a time of the clock's: its end is a timeout
// (context.DeadlineExceeded) at the moment the scenario needs it.
type deadlineCtx struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newDeadlineCtx() *deadlineCtx {
	return &deadlineCtx{Context: context.Background(), done: make(chan struct{})}
}

func (c *deadlineCtx) Done() <-chan struct{} { return c.done }

func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func (c *deadlineCtx) expire() { c.once.Do(func() { close(c.done) }) }

// TestSilentConnClosedOnTimeout: against a peer that reads and never
// answers, a call that times out (whichever way it was made) closes its
// connection: the calls pending on it, whose own deadline is a minute
// away, fail at once with ErrConnSilent, and the next call dials a new
// connection.
func TestSilentConnClosedOnTimeout(t *testing.T) {
	short := func(c *Client, addr string, how string) error {
		req := NewRequest(SendMessage, nil, []byte("short"))
		switch how {
		case "deadline":
			_, err := c.InvokeWith(context.Background(), addr, req, CallOptions{Deadline: time.Now().Add(20 * time.Millisecond)})
			return err
		case "context":
			ctx := newDeadlineCtx()
			out := make(chan error, 1)
			go func() {
				_, err := c.Invoke(ctx, addr, req)
				out <- err
			}()
			// The peer has the call before its deadline passes.
			waitFor(t, "the short call sent", func() bool { return pendingCalls(c.liveConn(addr)) == 4 })
			ctx.expire()
			return recv(t, out, "the short call")
		case "async":
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			out := make(chan error, 1)
			if err := c.InvokeAsync(ctx, addr, req, func(_ *Command, err error) { out <- err }); err != nil {
				return err
			}
			return recv(t, out, "the short call")
		case "func":
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			out := make(chan error, 1)
			if err := c.InvokeFunc(ctx, addr, req, CallOptions{}, func(_ *Command, err error) { out <- err }); err != nil {
				return err
			}
			return recv(t, out, "the short call")
		}
		panic(how)
	}
	for _, how := range []string{"deadline", "context", "async", "func"} {
		t.Run(how, func(t *testing.T) {
			p := startSilentPeer(t)
			addr := p.addr()
			c := newClient(t, ClientConfig{})
			long := make(chan error, 3)
			for range 3 {
				go func() {
					_, err := c.InvokeWith(context.Background(), addr, NewRequest(SendMessage, nil, []byte("long")),
						CallOptions{Deadline: time.Now().Add(time.Minute)})
					long <- err
				}()
			}
			waitFor(t, "the long calls at the peer", func() bool { return p.requests.Load() == 3 })
			first := c.liveConn(addr)

			err := short(c, addr, how)
			if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrConnClosed) {
				t.Fatalf("the short call: %v, want a timeout", err)
			}
			if !first.Closed() || c.liveConn(addr) != nil {
				t.Fatal("the silent connection is still open after the timeout")
			}
			for range 3 {
				err := recv(t, long, "a long call failing with the connection")
				if !errors.Is(err, ErrConnSilent) || !errors.Is(err, ErrConnClosed) {
					t.Fatalf("a long call: %v, want ErrConnSilent", err)
				}
			}

			// The client forgets it, and the next call dials afresh.
			waitFor(t, "the closed connection forgotten", func() bool {
				c.mu.Lock()
				defer c.mu.Unlock()
				return c.conns[addr] == nil
			})
			if err := c.InvokeOneway(ctxGuard(t), addr, NewRequest(SendMessage, nil, nil)); err != nil {
				t.Fatal(err)
			}
			if next := c.liveConn(addr); next == nil || next == first {
				t.Fatalf("after the close the client uses %p, the closed one was %p", next, first)
			}
			waitFor(t, "the new connection accepted", func() bool { return p.accepts.Load() == 2 })
		})
	}
}

// pendingCalls is the number of calls pending on conn (0 when nil).
func pendingCalls(conn *Conn) int {
	if conn == nil {
		return 0
	}
	p, _ := pendingOf(conn)
	return p
}

// heldServer is a server that answers HEART_BEAT at once and hands the
// reply of every PULL_MESSAGE to the test on held: reply(nil) ignores the
// request, a response answers it.
func heldServer(t *testing.T, held chan<- Reply) *Server {
	return startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(HeartBeat, "", echo)
		s.Handle(PullMessage, "", AsyncHandlerFunc(func(_ context.Context, _ *Conn, _ *Command, reply Reply) {
			held <- reply
		}))
	})
}

// pullAnswer is the answer to a held PULL_MESSAGE (the reply gives it the
// request's opaque).
func pullAnswer() *Command { return NewResponse(NewRequest(PullMessage, nil, nil), Success, "held") }

// heldConn starts a server that holds PULL_MESSAGE calls until their
// answer is sent on held, and a client with one live connection to it
// (one heartbeat answered), dialled through d.
func heldConn(t *testing.T) (held chan Reply, s *Server, addr string, d *hookDialer, c *Client, conn *Conn) {
	t.Helper()
	held = make(chan Reply, 1)
	s = heldServer(t, held)
	addr = s.Addr().String()
	d = &hookDialer{}
	c = newClient(t, ClientConfig{Dial: d.dial})
	invokeOK(t, c, s, NewRequest(HeartBeat, nil, nil))
	return held, s, addr, d, c, c.liveConn(addr)
}

// TestAnsweredConnKeptOnTimeout: a call that the server ignores times
// out, but the connection, on which other calls were answered while it
// waited, stays: no new dial, and calls go on succeeding on it.
func TestAnsweredConnKeptOnTimeout(t *testing.T) {
	for _, how := range []string{"context", "deadline"} {
		t.Run(how, func(t *testing.T) {
			held, s, addr, d, c, conn := heldConn(t)

			ignored := make(chan error, 1)
			answered := 0
			if how == "context" {
				// Answered calls come between the call and its deadline.
				ctx := newDeadlineCtx()
				go func() {
					_, err := c.Invoke(ctx, addr, NewRequest(PullMessage, nil, nil))
					ignored <- err
				}()
				recv(t, held, "the ignored call")(nil)
				for range 3 {
					invokeOK(t, c, s, NewRequest(HeartBeat, nil, nil))
					answered++
				}
				ctx.expire()
			} else {
				// Answered calls go on until the call's deadline.
				go func() {
					_, err := c.InvokeWith(context.Background(), addr, NewRequest(PullMessage, nil, nil),
						CallOptions{Deadline: time.Now().Add(300 * time.Millisecond)})
					ignored <- err
				}()
				recv(t, held, "the ignored call")(nil)
			loop:
				for {
					select {
					case err := <-ignored:
						ignored <- err
						break loop
					default:
						invokeOK(t, c, s, NewRequest(HeartBeat, nil, nil))
						answered++
					}
				}
			}
			if err := recv(t, ignored, "the ignored call's timeout"); !errors.Is(err, ErrTimeout) {
				t.Fatalf("the ignored call: %v, want ErrTimeout", err)
			}
			if answered == 0 {
				t.Fatal("no call answered while the ignored one waited")
			}
			wantConnKept(t, c, s, addr, conn, d, "a connection answering calls")
		})
	}
}

// TestLongPollAnsweredBeforeDeadline: a single call that the server holds
// while the connection reads nothing at all, and answers just before the
// call's deadline, leaves the connection open (a long poll), the deadline
// sweep that follows included.
func TestLongPollAnsweredBeforeDeadline(t *testing.T) {
	for _, how := range []string{"context", "deadline"} {
		t.Run(how, func(t *testing.T) {
			held, s, addr, d, c, conn := heldConn(t)
			mark := conn.lastRead.Load()

			out := make(chan error, 1)
			var expire func()
			if how == "context" {
				ctx := newDeadlineCtx()
				expire = ctx.expire
				go func() {
					_, err := c.Invoke(ctx, addr, NewRequest(PullMessage, nil, nil))
					out <- err
				}()
				reply := recv(t, held, "the held call")
				if conn.lastRead.Load() != mark {
					t.Fatal("the connection read something while the call waited")
				}
				reply(pullAnswer())
			} else {
				// The answer's time is the scenario: the server holds the
				// call until shortly before its deadline.
				const wait, margin = 400 * time.Millisecond, 150 * time.Millisecond
				deadline := time.Now().Add(wait)
				go func() {
					_, err := c.InvokeWith(context.Background(), addr, NewRequest(PullMessage, nil, nil), CallOptions{Deadline: deadline})
					out <- err
				}()
				reply := recv(t, held, "the held call")
				answer := time.NewTimer(time.Until(deadline.Add(-margin)))
				defer answer.Stop()
				<-answer.C
				if conn.lastRead.Load() != mark {
					t.Fatal("the connection read something while the call waited")
				}
				reply(pullAnswer())
				expire = func() {
					waitFor(t, "the deadline sweep", func() bool {
						conn.mu.Lock()
						defer conn.mu.Unlock()
						return conn.sweepAt.IsZero()
					})
				}
			}
			if err := recv(t, out, "the held call's answer"); err != nil {
				t.Fatalf("the held call: %v", err)
			}
			expire()
			wantConnKept(t, c, s, addr, conn, d, "the connection of a call answered in time")
		})
	}
}

// wantConnKept checks that conn is still the client's live connection to
// addr, takes calls, and was the only one dialled.
func wantConnKept(t *testing.T, c *Client, s *Server, addr string, conn *Conn, d *hookDialer, what string) {
	t.Helper()
	if conn.Closed() || c.liveConn(addr) != conn {
		t.Fatalf("%s was dropped: %v", what, conn.closedError())
	}
	invokeOK(t, c, s, NewRequest(HeartBeat, nil, nil))
	if n := d.calls.Load(); n != 1 {
		t.Fatalf("%d dials, want 1", n)
	}
}

// BenchmarkStampRead is what a client connection's read pays, per read
// system call, to know when it last read.
func BenchmarkStampRead(b *testing.B) {
	c := newConn(nil, connConfig{closeSilent: true})
	b.ReportAllocs()
	for b.Loop() {
		c.stampRead()
	}
}
