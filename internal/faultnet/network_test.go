package faultnet

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestEcho(t *testing.T) {
	nw := newTestNetwork(t)
	a, b := mustListen(t, nw, "a"), mustListen(t, nw, "b")

	ca, cb := connect(t, a, b)
	if ca.LocalNode() != "a" || ca.RemoteNode() != "b" || !ca.Dialed() {
		t.Fatalf("dialer end: local %q remote %q dialed %v", ca.LocalNode(), ca.RemoteNode(), ca.Dialed())
	}
	if cb.LocalNode() != "b" || cb.RemoteNode() != "a" || cb.Dialed() {
		t.Fatalf("acceptor end: local %q remote %q dialed %v", cb.LocalNode(), cb.RemoteNode(), cb.Dialed())
	}
	sendRecv(t, ca, cb, "hello")
	sendRecv(t, cb, ca, "world!")

	if got := nw.Stats("a", "b"); got != (LinkStats{Dials: 1, Bytes: 5, Open: 1}) {
		t.Fatalf("Stats(a, b) = %+v", got)
	}
	if got := nw.Stats("b", "a"); got != (LinkStats{Bytes: 6, Open: 1}) {
		t.Fatalf("Stats(b, a) = %+v", got)
	}

	// A close by the user is plain TCP: the other end sees EOF.
	if err := ca.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("Read after peer close: %v, want EOF", err)
	}
	if got := nw.Stats("a", "b").Open; got != 0 {
		t.Fatalf("open a->b after close = %d", got)
	}
}

func TestDialAddressSpellings(t *testing.T) {
	nw := newTestNetwork(t)
	a, b := mustListen(t, nw, "a"), mustListen(t, nw, "b")
	_, port, err := net.SplitHostPort(b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{b.Addr().String(), "localhost:" + port} {
		c, err := a.Dial(raft.ServerAddress(addr), time.Second)
		if err != nil {
			t.Fatalf("Dial(%s): %v", addr, err)
		}
		sendRecv(t, c, acceptConn(t, b), "x")
		_ = c.Close()
	}
	_, err = a.Dial("127.0.0.1:1", time.Second)
	wantErr(t, err, ErrUnknownAddress)
	_, err = a.Dial("not an address", time.Second)
	wantErr(t, err, ErrUnknownAddress)
}

func TestListenErrors(t *testing.T) {
	nw := newTestNetwork(t)
	tests := []struct {
		name, id, addr string
		want           error
	}{
		{"wildcard host", "n", ":0", ErrNotLoopback},
		{"any address", "n", "0.0.0.0:0", ErrNotLoopback},
		{"non-loopback ip", "n", "10.1.2.3:0", ErrNotLoopback},
		{"host name", "n", "example.com:0", ErrNotLoopback},
		{"no port", "n", "127.0.0.1", ErrNotLoopback},
		{"empty id", "", "127.0.0.1:0", ErrInvalidID},
		{"long id", string(make([]byte, MaxIDLen+1)), "127.0.0.1:0", ErrInvalidID},
		{"non-utf8 id", "\xff", "127.0.0.1:0", ErrInvalidID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := nw.Listen(tt.id, tt.addr)
			wantErr(t, err, tt.want)
		})
	}

	a := mustListen(t, nw, "a")
	_, err := nw.Listen("a", "127.0.0.1:0")
	wantErr(t, err, ErrNodeExists)
	// The port is taken by a live node: the bind itself fails.
	if _, err := nw.Listen("b", a.Addr().String()); err == nil {
		t.Fatal("Listen on a live node's address succeeded")
	}

	if err := nw.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = nw.Listen("c", "127.0.0.1:0")
	wantErr(t, err, ErrClosed)
	_, err = a.Accept()
	wantErr(t, err, ErrClosed)
	_, err = a.Dial(addrOf(a), time.Second)
	wantErr(t, err, ErrClosed)
}

func TestPartitionCutsAndRefuses(t *testing.T) {
	nw := newTestNetwork(t)
	a, b, c := mustListen(t, nw, "a"), mustListen(t, nw, "b"), mustListen(t, nw, "c")

	ab, ba := connect(t, a, b)
	cb, bc := connect(t, c, b)
	ac, ca := connect(t, a, c)

	// Bytes written before the partition but not yet read are in flight:
	// they must be dropped, not delivered.
	if _, err := ab.Write([]byte("in flight")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "bytes a->b counted", func() bool { return nw.Stats("a", "b").Bytes == 9 })

	if err := nw.Partition([]string{"a"}, []string{"b", "c"}); err != nil {
		t.Fatal(err)
	}

	_, err := ba.Read(make([]byte, 16))
	wantErr(t, err, ErrCut, ErrUnreachable, net.ErrClosed)
	if errors.Is(err, syscall.ECONNRESET) {
		// A partition says nothing of the peer's process.
		t.Fatalf("a partition's cut %v matches ECONNRESET", err)
	}
	_, err = ab.Write([]byte("x"))
	wantErr(t, err, ErrCut, ErrUnreachable)
	for _, end := range []*Conn{ac, ca} {
		_, err = end.Read(make([]byte, 1))
		wantErr(t, err, ErrCut)
	}
	// Inside a group nothing changes.
	sendRecv(t, cb, bc, "same side")

	for _, d := range []struct{ from, to *Layer }{{a, b}, {b, a}, {a, c}, {c, a}} {
		_, err := d.from.Dial(addrOf(d.to), time.Second)
		wantErr(t, err, ErrUnreachable)
	}
	if got := nw.Stats("a", "b"); got.Refused != 1 || got.Cut != 1 || got.Open != 0 {
		t.Fatalf("Stats(a, b) = %+v, want 1 refused, 1 cut, 0 open", got)
	}

	nw.Heal()
	ab2, ba2 := connect(t, a, b)
	sendRecv(t, ab2, ba2, "healed")
	ca2, ac2 := connect(t, c, a)
	sendRecv(t, ac2, ca2, "healed too")
	// A connection cut by the partition stays cut.
	_, err = ba.Read(make([]byte, 1))
	wantErr(t, err, ErrCut)
}

func TestPartitionRejectsOverlap(t *testing.T) {
	nw := newTestNetwork(t)
	a, b := mustListen(t, nw, "a"), mustListen(t, nw, "b")
	err := nw.Partition([]string{"a", "b"}, []string{"b"})
	wantErr(t, err, ErrBadPartition)
	err = nw.Partition([]string{""})
	wantErr(t, err, ErrBadPartition, ErrInvalidID)
	// Nothing changed.
	ab, ba := connect(t, a, b)
	sendRecv(t, ab, ba, "still connected")
}

func TestPolicyAllows(t *testing.T) {
	type pair struct{ from, to string }
	tests := []struct {
		name    string
		setup   func(n *Network) error
		allowed []pair
		denied  []pair
	}{
		{
			name:    "no faults",
			setup:   func(*Network) error { return nil },
			allowed: []pair{{"a", "b"}, {"b", "a"}, {"a", "a"}},
		},
		{
			name:    "unlisted nodes form a group",
			setup:   func(n *Network) error { return n.Partition([]string{"a"}) },
			allowed: []pair{{"b", "c"}, {"c", "b"}, {"a", "a"}},
			denied:  []pair{{"a", "b"}, {"b", "a"}, {"c", "a"}},
		},
		{
			name: "three groups",
			setup: func(n *Network) error {
				return n.Partition([]string{"a"}, []string{"b"}, []string{"c", "d"})
			},
			allowed: []pair{{"c", "d"}, {"d", "c"}},
			denied:  []pair{{"a", "b"}, {"b", "c"}, {"a", "d"}, {"e", "a"}, {"e", "c"}},
		},
		{
			name:    "empty partition is none",
			setup:   func(n *Network) error { return n.Partition() },
			allowed: []pair{{"a", "b"}},
		},
		{
			name:    "isolate",
			setup:   func(n *Network) error { n.Isolate("b"); return nil },
			allowed: []pair{{"a", "c"}, {"b", "b"}},
			denied:  []pair{{"a", "b"}, {"b", "a"}, {"b", "c"}},
		},
		{
			name:    "isolate then rejoin",
			setup:   func(n *Network) error { n.Isolate("b"); n.Rejoin("b"); return nil },
			allowed: []pair{{"a", "b"}, {"b", "a"}},
		},
		{
			name: "isolate inside a partition",
			setup: func(n *Network) error {
				n.Isolate("b")
				return n.Partition([]string{"a", "b"}, []string{"c"})
			},
			denied: []pair{{"a", "b"}, {"a", "c"}},
		},
		{
			name:    "block is one-way",
			setup:   func(n *Network) error { n.Block("a", "b"); return nil },
			allowed: []pair{{"b", "a"}, {"a", "c"}},
			denied:  []pair{{"a", "b"}},
		},
		{
			name:    "unblock",
			setup:   func(n *Network) error { n.Block("a", "b"); n.Unblock("a", "b"); return nil },
			allowed: []pair{{"a", "b"}},
		},
		{
			name: "heal clears everything",
			setup: func(n *Network) error {
				n.Block("a", "b")
				n.Isolate("c")
				if err := n.Partition([]string{"a"}, []string{"b"}); err != nil {
					return err
				}
				n.Heal()
				return nil
			},
			allowed: []pair{{"a", "b"}, {"b", "a"}, {"c", "a"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := NewNetwork()
			if err := tt.setup(n); err != nil {
				t.Fatal(err)
			}
			for _, p := range tt.allowed {
				if !n.pol.allows(p.from, p.to) {
					t.Errorf("%s -> %s denied, want allowed", p.from, p.to)
				}
			}
			for _, p := range tt.denied {
				if n.pol.allows(p.from, p.to) {
					t.Errorf("%s -> %s allowed, want denied", p.from, p.to)
				}
			}
		})
	}
}

func TestIsolateAndRejoin(t *testing.T) {
	nw := newTestNetwork(t)
	a, b, c := mustListen(t, nw, "a"), mustListen(t, nw, "b"), mustListen(t, nw, "c")
	ab, _ := connect(t, a, b)
	cb, bc := connect(t, c, b)
	ac, ca := connect(t, a, c)

	nw.Isolate("b")
	_, err := ab.Read(make([]byte, 1))
	wantErr(t, err, ErrCut, ErrUnreachable)
	_, err = bc.Write([]byte("x"))
	wantErr(t, err, ErrCut)
	_, err = cb.Read(make([]byte, 1))
	wantErr(t, err, ErrCut)
	sendRecv(t, ac, ca, "a and c unaffected")
	_, err = c.Dial(addrOf(b), time.Second)
	wantErr(t, err, ErrUnreachable)
	_, err = b.Dial(addrOf(a), time.Second)
	wantErr(t, err, ErrUnreachable)

	nw.Rejoin("b")
	x, y := connect(t, b, a)
	sendRecv(t, x, y, "back")
}

func TestBlockOneWay(t *testing.T) {
	nw := newTestNetwork(t)
	a, b := mustListen(t, nw, "a"), mustListen(t, nw, "b")
	ab, ba := connect(t, a, b) // dialed by a: carries a's requests
	rb, ra := connect(t, b, a) // dialed by b: carries b's requests

	nw.Block("a", "b")
	_, err := ba.Read(make([]byte, 1))
	wantErr(t, err, ErrCut, ErrUnreachable)
	_, err = ab.Write([]byte("x"))
	wantErr(t, err, ErrCut)
	// b's connection to a keeps working both ways (request and response).
	sendRecv(t, rb, ra, "request")
	sendRecv(t, ra, rb, "response")

	_, err = a.Dial(addrOf(b), time.Second)
	wantErr(t, err, ErrUnreachable)
	x, y := connect(t, b, a)
	sendRecv(t, x, y, "b still dials a")

	nw.Unblock("a", "b")
	p, q := connect(t, a, b)
	sendRecv(t, p, q, "unblocked")
}

func TestSetDelay(t *testing.T) {
	nw := newTestNetwork(t)
	a, b := mustListen(t, nw, "a"), mustListen(t, nw, "b")
	ab, ba := connect(t, a, b)

	for _, d := range []time.Duration{-time.Millisecond, MaxDelay + 1} {
		wantErr(t, nw.SetDelay("a", "b", d), ErrBadDelay)
	}

	const d = 40 * time.Millisecond
	if err := nw.SetDelay("a", "b", d); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	sendRecv(t, ab, ba, "slow")
	if el := time.Since(start); el < d {
		t.Fatalf("delayed write took %v, want >= %v", el, d)
	}
	// The delay also applies to connections made later, on the a end only.
	ab2, ba2 := connect(t, a, b)
	start = time.Now()
	sendRecv(t, ab2, ba2, "slow too")
	if el := time.Since(start); el < d {
		t.Fatalf("delayed write on new conn took %v, want >= %v", el, d)
	}
	sendRecv(t, ba2, ab2, "reverse is not delayed")

	// A write deadline shorter than the delay times out.
	if err := ab.SetWriteDeadline(time.Now().Add(d / 4)); err != nil {
		t.Fatal(err)
	}
	_, err := ab.Write([]byte("late"))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write past deadline: %v, want deadline exceeded", err)
	}
	if err := ab.SetWriteDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}

	// A cut ends a pending delay at once.
	if err := nw.SetDelay("a", "b", MaxDelay); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := ab.Write([]byte("never"))
		errc <- err
	}()
	nw.Isolate("a")
	select {
	case err := <-errc:
		wantErr(t, err, ErrCut)
	case <-time.After(waitTimeout):
		t.Fatal("delayed Write did not end on cut")
	}

	nw.Heal()
	if err := nw.SetDelay("a", "b", 0); err != nil {
		t.Fatal(err)
	}
	ab3, ba3 := connect(t, a, b)
	sendRecv(t, ab3, ba3, "fast again")
}

func TestKillAndRelisten(t *testing.T) {
	nw := newTestNetwork(t)
	a := mustListen(t, nw, "a")
	b := mustListen(t, nw, "b")
	addr := b.Addr().String()

	for round := range 5 {
		ab, ba := connect(t, a, b)
		bx, ax := connect(t, b, a)
		sendRecv(t, ab, ba, "before kill")

		if err := nw.Kill("b"); err != nil {
			t.Fatalf("round %d: Kill: %v", round, err)
		}
		for _, end := range []*Conn{ab, ax} {
			_, err := end.Read(make([]byte, 1))
			// The peer of a killed process sees a reset.
			wantErr(t, err, ErrCut, ErrKilled, syscall.ECONNRESET)
		}
		_, err := bx.Write([]byte("x"))
		wantErr(t, err, ErrKilled)
		_, err = b.Accept()
		wantErr(t, err, ErrKilled)
		_, err = b.Dial(addrOf(a), time.Second)
		wantErr(t, err, ErrKilled)
		_, err = a.Dial(raft.ServerAddress(addr), time.Second)
		// Nothing listens at a killed node's address.
		wantErr(t, err, ErrNodeDown, syscall.ECONNREFUSED)
		wantErr(t, nw.Kill("b"), ErrNodeDown)
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}

		// Restart on the same port, immediately.
		b, err = nw.Listen("b", nw.Addr("b"))
		if err != nil {
			t.Fatalf("round %d: re-Listen: %v", round, err)
		}
		if b.Addr().String() != addr {
			t.Fatalf("round %d: restarted on %s, want %s", round, b.Addr(), addr)
		}
		x, y := connect(t, a, b)
		sendRecv(t, x, y, "after restart")
		sendRecv(t, y, x, "and back")
	}
	wantErr(t, nw.Kill("nobody"), ErrUnknownNode)
}

func TestGarbagePreamble(t *testing.T) {
	nw := newTestNetwork(t, WithHandshakeTimeout(200*time.Millisecond))
	a, b := mustListen(t, nw, "a"), mustListen(t, nw, "b")
	good, err := appendPreamble(nil, "a")
	if err != nil {
		t.Fatal(err)
	}
	ghost, err := appendPreamble(nil, "ghost")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		bytes []byte
		close bool // half-close after writing
	}{
		{"http request", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), false},
		{"bad version", []byte{preambleMagic0, preambleMagic1, 9, 1, 'a'}, false},
		{"empty id", []byte{preambleMagic0, preambleMagic1, preambleVersion, 0}, false},
		{"invalid utf8", []byte{preambleMagic0, preambleMagic1, preambleVersion, 1, 0xff}, false},
		{"truncated id", good[:len(good)-1], true},
		{"truncated header", good[:2], true},
		{"nothing then eof", nil, true},
		{"silent", nil, false},
		{"unknown node", ghost, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := net.Dial("tcp", b.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if len(tt.bytes) > 0 {
				if _, err := raw.Write(tt.bytes); err != nil {
					t.Fatal(err)
				}
			}
			if tt.close {
				if err := raw.(*net.TCPConn).CloseWrite(); err != nil {
					t.Fatal(err)
				}
			}
			// While the bad connection is pending, a good one still gets
			// through Accept.
			x, y := connect(t, a, b)
			sendRecv(t, x, y, "still accepting")

			waitFor(t, "bad handshake counted", func() bool { return b.BadHandshakes() == i+1 })
			// The Layer closed the bad connection.
			if err := raw.SetReadDeadline(time.Now().Add(waitTimeout)); err != nil {
				t.Fatal(err)
			}
			if n, err := raw.Read(make([]byte, 1)); err == nil {
				t.Fatalf("bad connection still open: read %d bytes", n)
			}
		})
	}
}

func TestCloseStopsGoroutines(t *testing.T) {
	base := runtime.NumGoroutine()
	nw := NewNetwork()
	a, b := mustListen(t, nw, "a"), mustListen(t, nw, "b")
	ab, ba := connect(t, a, b)
	sendRecv(t, ab, ba, "x")
	// A silent client leaves a handshake goroutine pending.
	raw, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// And a connection nobody accepts leaves one blocked handing it over.
	if _, err := a.Dial(addrOf(b), time.Second); err != nil {
		t.Fatal(err)
	}

	done := make(chan struct{})
	go func() {
		_ = nw.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("Network.Close did not return")
	}
	_, err = b.Accept()
	wantErr(t, err, ErrClosed)
	_, err = ba.Read(make([]byte, 1))
	wantErr(t, err, ErrCut, ErrClosed)
	waitFor(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= base })
	if err := a.Close(); err != nil {
		t.Fatalf("Close after Network.Close: %v", err)
	}
}
