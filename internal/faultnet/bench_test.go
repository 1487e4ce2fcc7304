package faultnet

import (
	"io"
	"net"
	"testing"
	"time"
)

// BenchmarkConnRoundTrip measures a 1 KiB echo over a faultnet connection,
// the per-RPC overhead raft sees.
func BenchmarkConnRoundTrip(b *testing.B) {
	nw := newTestNetwork(b)
	x, y := mustListen(b, nw, "x"), mustListen(b, nw, "y")
	srv := startEcho(y)
	c, err := x.Dial(addrOf(y), time.Second)
	if err != nil {
		b.Fatal(err)
	}
	msg := make([]byte, 1024)
	buf := make([]byte, len(msg))
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
	_ = nw.Close()
	srv.wait()
}

// BenchmarkRawTCPRoundTrip is the same echo over plain loopback TCP, the
// baseline for BenchmarkConnRoundTrip.
func BenchmarkRawTCPRoundTrip(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s, err := ln.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		_, _ = io.Copy(s, s)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	msg := make([]byte, 1024)
	buf := make([]byte, len(msg))
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
	_ = c.Close()
	_ = ln.Close()
	<-done
}

// BenchmarkDialAccept measures connection set-up: TCP connect, preamble,
// handshake goroutine, registration and Accept.
func BenchmarkDialAccept(b *testing.B) {
	nw := newTestNetwork(b)
	x, y := mustListen(b, nw, "x"), mustListen(b, nw, "y")
	for b.Loop() {
		c, err := x.Dial(addrOf(y), time.Second)
		if err != nil {
			b.Fatal(err)
		}
		s, err := y.Accept()
		if err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
		_ = s.Close()
	}
}

// BenchmarkPartitionHeal measures switching a partition on and off: the
// policy update plus the scan of tracked connections (the connections the
// first partition cuts are gone afterwards, so later rounds scan the
// surviving same-group ones).
func BenchmarkPartitionHeal(b *testing.B) {
	nw := newTestNetwork(b)
	ls := []*Layer{mustListen(b, nw, "a"), mustListen(b, nw, "b"), mustListen(b, nw, "c")}
	for _, l := range ls {
		for _, m := range ls {
			connect(b, l, m)
		}
	}
	for b.Loop() {
		if err := nw.Partition([]string{"a"}, []string{"b"}); err != nil {
			b.Fatal(err)
		}
		nw.Heal()
	}
}
