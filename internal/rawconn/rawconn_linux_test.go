package rawconn

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// tcpPair returns the two ends of a loopback TCP connection, the
// client's with raw reads and writes.
func tcpPair(t *testing.T) (*Conn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer := recv(t, accepted, "the accepted connection")
	if peer == nil {
		t.Fatal("accept failed")
	}
	raw, ok := Wrap(nc).(*Conn)
	if !ok {
		t.Fatal("a TCP connection was not made raw")
	}
	t.Cleanup(func() { _ = raw.Close(); _ = peer.Close() })
	return raw, peer.(*net.TCPConn)
}

// TestRawConnFrames: batches of frames, empty ones among them, far more
// than the small socket buffers hold, arrive whole and in order (the
// writer waits for the socket between partial writes), and what the
// peer writes is read back byte for byte, then io.EOF once it closes.
func TestRawConnFrames(t *testing.T) {
	raw, peer := tcpPair(t)
	_ = raw.SetWriteBuffer(64 << 10)
	_ = peer.SetReadBuffer(64 << 10)

	var want bytes.Buffer
	var batches [][]*[]byte
	for i := range 40 {
		var batch []*[]byte
		for j := range 1 + i%7 {
			b := bytes.Repeat([]byte{byte(i), byte(j)}, (i*7919+j*104729)%20000)
			batch = append(batch, &b)
			want.Write(b)
		}
		batches = append(batches, batch)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(peer)
		got <- b
	}()
	total := 0
	for _, batch := range batches {
		n, err := raw.WriteBuffers(batch)
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if n, err := raw.Write([]byte("tail")); err != nil || n != 4 {
		t.Fatalf("write: %d %v", n, err)
	}
	want.WriteString("tail")
	_ = raw.CloseWrite()
	if b := recv(t, got, "the peer's read"); !bytes.Equal(b, want.Bytes()) || total+4 != want.Len() {
		t.Fatalf("the peer read %d bytes, %d written, want %d", len(b), total+4, want.Len())
	}
	for _, fb := range raw.iov[:cap(raw.iov)] {
		if fb.Base != nil {
			t.Fatal("the writer's scratch keeps a frame")
		}
	}

	msg := bytes.Repeat([]byte("0123456789"), 50000)
	go func() {
		_, _ = peer.Write(msg)
		_ = peer.CloseWrite()
	}()
	b, err := io.ReadAll(raw)
	if err != nil || !bytes.Equal(b, msg) {
		t.Fatalf("read %d bytes, %v", len(b), err)
	}
	if n, err := raw.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("after the end: %d %v", n, err)
	}
}

// TestRawConnErrors: a read past its deadline, and a read or a write on
// the closed connection, fail as the net package's do, to the text.
func TestRawConnErrors(t *testing.T) {
	raw, _ := tcpPair(t)
	plain := raw.TCPConn
	deadline := time.Now().Add(10 * time.Millisecond)
	_ = raw.SetReadDeadline(deadline)
	_, rawErr := raw.Read(make([]byte, 8))
	_, netErr := plain.Read(make([]byte, 8))
	var oe *net.OpError
	if !errors.Is(rawErr, os.ErrDeadlineExceeded) || !errors.As(rawErr, &oe) || !oe.Timeout() || rawErr.Error() != netErr.Error() {
		t.Fatalf("past the deadline: %v, the net package's %v", rawErr, netErr)
	}

	_ = raw.Close()
	_, rawErr = raw.Read(make([]byte, 8))
	_, netErr = plain.Read(make([]byte, 8))
	if !errors.Is(rawErr, net.ErrClosed) || rawErr.Error() != netErr.Error() {
		t.Fatalf("read when closed: %v, the net package's %v", rawErr, netErr)
	}
	_, rawErr = raw.Write([]byte("x"))
	_, netErr = plain.Write([]byte("x"))
	if !errors.Is(rawErr, net.ErrClosed) || rawErr.Error() != netErr.Error() {
		t.Fatalf("write when closed: %v, the net package's %v", rawErr, netErr)
	}
	if !strings.HasPrefix(rawErr.Error(), "write tcp ") {
		t.Fatalf("write error %q", rawErr)
	}
}

// recv receives from ch, or fails the test after a while.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}
