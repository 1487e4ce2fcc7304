package jepsen

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer answers every line with the same line, until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func dialProxy(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line string) {
	t.Helper()
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := r.ReadString('\n')
	if err != nil || got != line+"\n" {
		t.Fatalf("echo of %q: %q, %v", line, got, err)
	}
}

func TestProxyBlockHoldsBytesUntilHeal(t *testing.T) {
	n := NewNet(1)
	defer n.Close()
	addr, err := n.Proxy("n0", "n1", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c, r := dialProxy(t, addr)
	roundTrip(t, c, r, "before")
	if n.Accepted() != 1 {
		t.Fatalf("accepted %d connections, want 1", n.Accepted())
	}

	// One way: n1's answers are held, n0's bytes pass.
	n.Set(Link{From: "n1", To: "n0"}, Policy{Block: true})
	if _, err := io.WriteString(c, "held\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := r.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read through a blocked link: %v, want a timeout", err)
	}
	if len(n.Faulty()) != 1 {
		t.Fatalf("faulty links %v", n.Faulty())
	}
	n.Heal()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "held\n" {
		t.Fatalf("after heal: %q, %v", got, err)
	}
	roundTrip(t, c, r, "after")
}

func TestProxyDelayAndLossKeepOrder(t *testing.T) {
	n := NewNet(2)
	defer n.Close()
	addr, err := n.Proxy(Client, "n0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	n.Set(Link{From: Client, To: "n0"}, Policy{Delay: 5 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.5})
	c, r := dialProxy(t, addr)
	for _, line := range []string{"a", "b", "c", "d", "e"} {
		roundTrip(t, c, r, line)
	}
}

func TestProxyTargetDownResets(t *testing.T) {
	n := NewNet(3)
	defer n.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close()
	addr, err := n.Proxy("n0", Namesrv, target)
	if err != nil {
		t.Fatal(err)
	}
	c, r := dialProxy(t, addr)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.ReadByte(); err == nil {
		t.Fatal("a proxy to a closed port kept the connection")
	}
}

func TestProxyRefusesOffLoopbackTarget(t *testing.T) {
	n := NewNet(4)
	defer n.Close()
	if _, err := n.Proxy("n0", "n1", "10.0.0.1:80"); !errors.Is(err, errNotLoopback) {
		t.Fatalf("proxy to 10.0.0.1: %v", err)
	}
}

func TestNetCloseEndsConnections(t *testing.T) {
	n := NewNet(5)
	addr, err := n.Proxy("n0", "n1", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c, r := dialProxy(t, addr)
	roundTrip(t, c, r, "x")
	n.Set(Link{From: "n0", To: "n1"}, Policy{Block: true})
	_, _ = io.WriteString(c, "stuck\n")
	n.Close() // returns only once every goroutine ended
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.ReadByte(); err == nil {
		t.Fatal("connection survived Net.Close")
	}
}
