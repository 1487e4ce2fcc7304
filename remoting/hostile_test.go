package remoting

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"
)

// hostileInputs are byte streams a broken or malicious peer might send.
// Each one must make the server close that connection.
func hostileInputs() map[string][]byte {
	frameOf := func(word uint32, rest string) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(4+len(rest)))
		b = binary.BigEndian.AppendUint32(b, word)
		return append(b, rest...)
	}
	jsonOf := func(h string) []byte { return frameOf(uint32(len(h)), h) }
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	garbage[0] = 0x7f // make the first length prefix oversized
	return map[string][]byte{
		"http request":                []byte("GET / HTTP/1.1\r\nHost: broker\r\n\r\n"),
		"random bytes":                garbage,
		"oversized length":            {0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0},
		"just over the limit":         binary.BigEndian.AppendUint32(nil, 1<<16-3),
		"negative length":             {0xff, 0xff, 0xff, 0xff},
		"length below the word":       {0, 0, 0, 2, 0, 0},
		"bad type byte":               frameOf(5<<24|2, "{}"),
		"header past the frame":       frameOf(100, "{}"),
		"code as a non-number string": jsonOf(`{"code":"ten","opaque":1}`),
		"code out of int32":           jsonOf(`{"code":2147483648,"opaque":1}`),
		"ext value cut short":         jsonOf(`{"code":34,"opaque":1,"extFields":{"queueId":1`),
		"ext value bad literal":       jsonOf(`{"code":34,"opaque":1,"extFields":{"a":nul}}`),
		"truncated json":              jsonOf(`{"code":34,"opaque":1`),
		"binary remark past header": frameOf(1<<24|21, string([]byte{
			0, 34, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0})),
		"binary ext past header": frameOf(1<<24|21, string([]byte{
			0, 34, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 50})),
	}
}

// Hostile input closes the offending connection, fires OnConnClose, and
// leaves other clients of the same server unaffected.
func TestHostileInput(t *testing.T) {
	closed := make(chan *Conn, 32)
	s := startServer(t, ServerConfig{MaxFrameSize: 1 << 16, OnConnClose: func(c *Conn) { closed <- c }},
		func(s *Server) { s.Handle(HeartBeat, "", echo) })
	good := newClient(t, ClientConfig{})
	addr := s.Addr().String()
	ping := func() {
		t.Helper()
		resp, err := good.Invoke(ctxGuard(t), addr, NewRequest(HeartBeat, map[string]string{"k": "v"}, nil))
		if err != nil || resp.Code != Success || resp.ExtFields["k"] != "v" {
			t.Fatalf("good client: %v %+v", err, resp)
		}
	}
	ping()
	for name, input := range hostileInputs() {
		t.Run(name, func(t *testing.T) {
			nc := dialRaw(t, s)
			if _, err := nc.Write(input); err != nil {
				t.Fatal(err)
			}
			waitClosedByPeer(t, nc)
			c := recv(t, closed, "OnConnClose")
			if c.RemoteAddr().String() != nc.LocalAddr().String() {
				t.Fatalf("closed %v, expected %v", c.RemoteAddr(), nc.LocalAddr())
			}
			ping()
		})
	}
	if n := s.ConnCount(); n != 1 {
		t.Fatalf("%d connections open, want only the good client's", n)
	}
}

// A peer that disconnects in the middle of a frame, or stalls inside one,
// is cleaned up.
func TestMidFrameDisconnectAndStall(t *testing.T) {
	closed := make(chan *Conn, 4)
	s := startServer(t, ServerConfig{IdleTimeout: 100 * time.Millisecond, OnConnClose: func(c *Conn) { closed <- c }},
		func(s *Server) { s.Handle(HeartBeat, "", echo) })

	frame, err := Encode(nil, NewRequest(HeartBeat, map[string]string{"a": "b"}, []byte("body")))
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{2, 6, len(frame) - 1} {
		nc := dialRaw(t, s)
		if _, err := nc.Write(frame[:cut]); err != nil {
			t.Fatal(err)
		}
		_ = nc.Close()
		recv(t, closed, "close after a cut frame")
	}

	// Announce a large frame, send a little of it, then go silent: the
	// idle timeout ends it, and only what arrived was buffered.
	nc := dialRaw(t, s)
	stall := binary.BigEndian.AppendUint32(nil, 8<<20)
	stall = append(stall, 0, 0, 0, 2, '{', '}')
	if _, err := nc.Write(stall); err != nil {
		t.Fatal(err)
	}
	recv(t, closed, "close of a stalled frame")
	waitClosedByPeer(t, nc)
}

// Responses nobody asked for, and requests that claim to be responses, are
// dropped without harm.
func TestUnsolicitedResponses(t *testing.T) {
	s := startServer(t, ServerConfig{}, func(s *Server) { s.Handle(HeartBeat, "", echo) })
	nc := dialRaw(t, s)
	for op := range int32(5) {
		writeCmd(t, nc, &Command{Code: Success, Opaque: op, Flag: FlagResponse})
	}
	writeCmd(t, nc, &Command{Code: HeartBeat, Opaque: 42})
	if resp := readCmd(t, nc); resp.Opaque != 42 || resp.Code != Success {
		t.Fatalf("%+v", resp)
	}
}

// A peer that sends requests but never reads: the responses back up, the
// queue's back-pressure holds the workers, and the write timeout closes the
// connection, releasing them. Other clients keep being served.
func TestPeerThatDoesNotRead(t *testing.T) {
	closed := make(chan *Conn, 1)
	big := make([]byte, 1<<20)
	s := startServer(t, ServerConfig{WriteTimeout: 200 * time.Millisecond, OnConnClose: func(c *Conn) { closed <- c },
		Pools: map[string]PoolConfig{DefaultPool: {Workers: 4, QueueSize: 64}}},
		func(s *Server) {
			s.Handle(PullMessage, "", HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
				resp := NewResponse(req, Success, "")
				resp.Body = big
				return resp
			}))
			s.Handle(HeartBeat, "", echo)
		})
	nc := dialRaw(t, s)
	for op := range int32(48) { // 48 MiB of responses, far beyond socket buffers
		writeCmd(t, nc, &Command{Code: PullMessage, Opaque: op})
	}
	recv(t, closed, "close of the non-reading peer")
	c := newClient(t, ClientConfig{})
	if resp, err := c.Invoke(ctxGuard(t), s.Addr().String(), NewRequest(HeartBeat, nil, nil)); err != nil || resp.Code != Success {
		t.Fatalf("other client: %v %+v", err, resp)
	}
}
