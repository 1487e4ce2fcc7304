package jepsen

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

// One proxy per destination names each connection's source by the
// process holding its other end, and applies that link's policy.
func TestProxyToNamesTheSourceProcess(t *testing.T) {
	n := NewNet(4)
	defer n.Close()
	owners := func() map[int]string { return map[int]string{os.Getpid(): "n0"} }
	addr, err := n.ProxyTo("n1", echoServer(t), SourceByProcess(owners))
	if err != nil {
		t.Fatal(err)
	}
	c, r := dialProxy(t, addr)
	roundTrip(t, c, r, "named")

	n.Set(Link{From: "n2", To: "n1"}, Policy{Block: true}) // another sender's link: no effect
	roundTrip(t, c, r, "other link")
	n.Set(Link{From: "n0", To: "n1"}, Policy{Block: true})
	if _, err := io.WriteString(c, "held\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := r.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read through n0->n1 blocked: %v, want a timeout", err)
	}
	n.Heal()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "held\n" {
		t.Fatalf("after heal: %q, %v", got, err)
	}
}

// A connection whose source is none of the owners is refused.
func TestProxyToRefusesAnUnnamedSource(t *testing.T) {
	n := NewNet(5)
	defer n.Close()
	owners := func() map[int]string { return map[int]string{os.Getpid() + 1<<20: "n0"} }
	addr, err := n.ProxyTo("n1", echoServer(t), SourceByProcess(owners))
	if err != nil {
		t.Fatal(err)
	}
	c, r := dialProxy(t, addr)
	_, _ = io.WriteString(c, "x\n")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.ReadString('\n'); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("an unnamed source was proxied: %v", err)
	}
	if n.Unidentified() != 1 {
		t.Fatalf("unidentified %d, want 1", n.Unidentified())
	}
}
