package faultnet

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/internal/testwait"
)

// waitTimeout bounds every wait in the tests; reaching it is a failure,
// never a synchronisation point.
const waitTimeout = 10 * time.Second

func newTestNetwork(t testing.TB, opts ...Option) *Network {
	t.Helper()
	nw := NewNetwork(opts...)
	t.Cleanup(func() { _ = nw.Close() })
	return nw
}

func mustListen(t testing.TB, nw *Network, id string) *Layer {
	t.Helper()
	l, err := nw.Listen(id, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen(%s): %v", id, err)
	}
	return l
}

func addrOf(l *Layer) raft.ServerAddress { return raft.ServerAddress(l.Addr().String()) }

// acceptConn waits for one accepted connection on l.
func acceptConn(t testing.TB, l *Layer) *Conn {
	t.Helper()
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := l.Accept()
		ch <- result{c, err}
	}()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("Accept on %s: %v", l.ID(), r.err)
		}
		return r.c.(*Conn)
	case <-timer.C:
		t.Fatalf("Accept on %s: nothing within %v", l.ID(), waitTimeout)
		return nil
	}
}

// connect dials from a to b and returns both ends.
func connect(t testing.TB, a, b *Layer) (*Conn, *Conn) {
	t.Helper()
	c, err := a.Dial(addrOf(b), time.Second)
	if err != nil {
		t.Fatalf("Dial %s -> %s: %v", a.ID(), b.ID(), err)
	}
	return c.(*Conn), acceptConn(t, b)
}

// sendRecv writes msg on w and reads it back on r.
func sendRecv(t testing.TB, w, r net.Conn, msg string) {
	t.Helper()
	if _, err := w.Write([]byte(msg)); err != nil {
		t.Fatalf("Write: %v", err)
	}
	buf := make([]byte, len(msg))
	if err := r.SetReadDeadline(time.Now().Add(waitTimeout)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatalf("Read: %v", err)
	}
	if err := r.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if string(buf) != msg {
		t.Fatalf("read %q, want %q", buf, msg)
	}
}

// waitFor polls cond every few milliseconds until it holds or waitTimeout
// passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, waitTimeout, what, cond)
}

func wantErr(t testing.TB, err error, targets ...error) {
	t.Helper()
	if err == nil {
		t.Fatalf("got nil error, want %v", targets)
	}
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Fatalf("error %q does not match %v", err, target)
		}
	}
}

// echoServer accepts on l and echoes every connection until l goes down.
// Close waits for all its goroutines.
type echoServer struct {
	wg sync.WaitGroup
}

func startEcho(l *Layer) *echoServer {
	s := &echoServer{}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return s
}

// wait returns once the server's Layer is down and every connection it
// served is closed.
func (s *echoServer) wait() { s.wg.Wait() }
