package remoting

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/internal/testwait"
)

// newTestLogger logs to w.
func newTestLogger(w *bytes.Buffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: w, Level: hclog.Debug})
}

// waitFor polls cond until it holds, failing the test after guard.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, guard, what, cond)
}

// gate is a handler that holds every request until opened.
type gate struct {
	open    chan struct{}
	started chan struct{}
}

func newGate() *gate { return &gate{open: make(chan struct{}), started: make(chan struct{}, 1024)} }

func (g *gate) Serve(ctx context.Context, _ *Conn, req *Command) *Command {
	g.started <- struct{}{}
	select {
	case <-g.open:
	case <-ctx.Done():
	}
	return NewResponse(req, Success, "")
}

// sender writes frames to a raw connection on a goroutine the test owns:
// the writes block while the server applies back-pressure, and end with an
// error when the test closes the connection.
func sender(t *testing.T, nc net.Conn, frames [][]byte) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		for _, f := range frames {
			if _, err := nc.Write(f); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	t.Cleanup(func() {
		_ = nc.Close()
		<-exited
	})
	return done
}

// frames returns n encoded SEND_MESSAGE requests with a body of size bytes
// and opaques 1..n.
func frames(t *testing.T, n, size int) [][]byte {
	t.Helper()
	out := make([][]byte, n)
	for i := range out {
		f, err := Encode(nil, &Command{Code: SendMessage, Opaque: int32(i + 1), Body: make([]byte, size)})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = f
	}
	return out
}

// Frames already read used to wait in a worker queue with their buffers,
// without limit (64 × 15 MiB REGISTER_BROKER frames took the name server
// to 1.1 GiB). Now the read budget caps what is queued: the connection
// stops being read until a handler returns, and every request is still
// served once the handlers run.
func TestReadBudgetBoundsQueuedFrames(t *testing.T) {
	const frameBody, budgetBytes, n = 60 << 10, 256 << 10, 64
	g := newGate()
	s := startServer(t, ServerConfig{
		MaxFrameSize: 64 << 10,
		Limits:       Limits{ReadBudget: budgetBytes},
		Pools:        map[string]PoolConfig{DefaultPool: {Workers: 1, QueueSize: 1024}},
	}, func(s *Server) { s.Handle(SendMessage, "", g) })
	nc := dialRaw(t, s)
	sent := sender(t, nc, frames(t, n, frameBody))

	recv(t, g.started, "first handler")
	waitFor(t, "a reader waiting for the budget", func() bool { return s.Stats().ReadWaiting == 1 })
	st := s.Stats()
	if st.HeldBytes > budgetBytes {
		t.Fatalf("%d bytes held, budget %d", st.HeldBytes, budgetBytes)
	}
	// 4 frames fit: one being handled, three queued; the fifth waits.
	if q := s.PoolStats()[DefaultPool].Queued; q != 3 || st.InFlight != 4 {
		t.Fatalf("%d queued, %d in flight; want 3 and 4 (stats %+v)", q, st.InFlight, st)
	}

	close(g.open)
	for i := range n {
		if resp := readCmd(t, nc); resp.Code != Success {
			t.Fatalf("response %d: %+v", i, resp)
		}
	}
	if err := recv(t, sent, "sender"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "budget returned", func() bool { st := s.Stats(); return st.HeldBytes == 0 && st.InFlight == 0 })
	if st := s.Stats(); st.ReadWaits == 0 {
		t.Fatalf("no read waited: %+v", st)
	}
}

// 32 connections each holding 12 MiB of a 16 MiB frame took each server
// past 600 MiB. A frame now counts at its announced length as soon as its
// prefix arrives, so partial frames use up the budget (and make the next
// connection wait) instead of memory; a connection that dies inside its
// frame gives its share back.
func TestReadBudgetCountsPartialFrames(t *testing.T) {
	const announced, budgetBytes = 60 << 10, 256 << 10
	s := startServer(t, ServerConfig{MaxFrameSize: 64 << 10, Limits: Limits{ReadBudget: budgetBytes}},
		func(s *Server) { s.Handle(HeartBeat, "", echo) })
	partial := func() net.Conn {
		nc := dialRaw(t, s)
		b := binary.BigEndian.AppendUint32(nil, announced)
		b = append(b, make([]byte, announced/2)...)
		if _, err := nc.Write(b); err != nil {
			t.Fatal(err)
		}
		return nc
	}
	var held []net.Conn
	for range 4 {
		held = append(held, partial())
	}
	waitFor(t, "four partial frames counted", func() bool { return s.HeldBytes() == 4*announced })
	fifth := partial()
	waitFor(t, "the fifth waiting", func() bool { return s.Stats().ReadWaiting == 1 })
	if h := s.HeldBytes(); h > budgetBytes {
		t.Fatalf("%d bytes held, budget %d", h, budgetBytes)
	}

	// A client arriving now waits behind the fifth; when two of the
	// partial senders give up, both are served.
	c := newClient(t, ClientConfig{})
	answered := make(chan error, 1)
	if err := c.InvokeAsync(ctxGuard(t), s.Addr().String(), NewRequest(HeartBeat, nil, nil),
		func(resp *Command, err error) {
			if err == nil && resp.Code != Success {
				err = fmt.Errorf("code %d", resp.Code)
			}
			answered <- err
		}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the client waiting too", func() bool { return s.Stats().ReadWaiting == 2 })
	_ = held[0].Close()
	_ = held[1].Close()
	if err := recv(t, answered, "heartbeat after the budget freed"); err != nil {
		t.Fatal(err)
	}
	_ = fifth.Close()
	_ = held[2].Close()
	_ = held[3].Close()
	waitFor(t, "budget returned", func() bool { return s.HeldBytes() == 0 })
}

// A connection with MaxInFlightPerConn requests queued or being handled
// gets SYSTEM_BUSY for the next ones, at once; the others are served.
func TestMaxInFlightPerConn(t *testing.T) {
	g := newGate()
	s := startServer(t, ServerConfig{Limits: Limits{MaxInFlightPerConn: 4}},
		func(s *Server) { s.Handle(SendMessage, "", g) })
	nc := dialRaw(t, s)
	for _, f := range frames(t, 6, 10) {
		if _, err := nc.Write(f); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []int32{5, 6} {
		resp := readCmd(t, nc)
		if resp.Opaque != want || resp.Code != SystemBusy || !strings.Contains(resp.Remark, "TOO_MANY_REQUESTS") {
			t.Fatalf("want SYSTEM_BUSY for %d, got %+v", want, resp)
		}
	}
	// Another connection has its own allowance.
	c := newClient(t, ClientConfig{})
	other := make(chan *Command, 1)
	if err := c.InvokeAsync(ctxGuard(t), s.Addr().String(), NewRequest(SendMessage, nil, nil),
		func(resp *Command, _ error) { other <- resp }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "five handlers started", func() bool { return len(g.started) == 5 })
	close(g.open)
	got := map[int32]bool{}
	for range 4 {
		resp := readCmd(t, nc)
		if resp.Code != Success {
			t.Fatalf("%+v", resp)
		}
		got[resp.Opaque] = true
	}
	if len(got) != 4 || got[5] || got[6] {
		t.Fatalf("served %v, want 1..4", got)
	}
	if resp := recv(t, other, "other connection"); resp == nil || resp.Code != Success {
		t.Fatalf("other connection: %+v", resp)
	}
	if st := s.Stats(); st.BusyInFlight != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// Connections beyond MaxConns are closed at accept; once one closes, a new
// one is served.
func TestMaxConns(t *testing.T) {
	s := startServer(t, ServerConfig{Limits: Limits{MaxConns: 2}}, func(s *Server) { s.Handle(HeartBeat, "", echo) })
	ping := func(nc net.Conn) {
		t.Helper()
		writeCmd(t, nc, &Command{Code: HeartBeat, Opaque: 7})
		if resp := readCmd(t, nc); resp.Code != Success {
			t.Fatalf("%+v", resp)
		}
	}
	a, b := dialRaw(t, s), dialRaw(t, s)
	ping(a)
	ping(b)
	for range 3 {
		waitClosedByPeer(t, dialRaw(t, s))
	}
	if st := s.Stats(); st.RefusedConns != 3 || st.Conns != 2 {
		t.Fatalf("stats %+v", st)
	}
	_ = a.Close()
	waitFor(t, "closed connection forgotten", func() bool { return s.ConnCount() == 1 })
	ping(dialRaw(t, s))
}

// refusalLog logs the first refusal and then at most one line per
// LogEvery, carrying the count it stood for.
func TestRefusalLogIsRateLimited(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(100, 0)
	r := refusalLog{logger: newTestLogger(&out), now: func() time.Time { return now }}
	for range 5 {
		r.refused("p", 1)
	}
	now = now.Add(LogEvery)
	r.refused("p", 1)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "refused_since_last_line=4") {
		t.Fatalf("log:\n%s", out.String())
	}
}

// hugeExtHeader is a JSON header with n ext fields.
func hugeExtHeader(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"code":10,"opaque":1,"extFields":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + strconv.Itoa(i) + `":""`)
	}
	b.WriteString("}}")
	return []byte(b.String())
}

// binaryExtHeader is a ROCKETMQ header with n ext fields.
func binaryExtHeader(n int) []byte {
	ext := map[string]string{}
	for i := range n {
		ext["k"+strconv.Itoa(i)] = ""
	}
	f, _ := Encode(nil, &Command{Code: 10, ExtFields: ext, SerializeType: SerializeRocketMQ})
	return f[8:]
}

// A header of 1.2 M ext fields cost about 8× its size to decode. Headers
// beyond the limits (ext fields, nesting, bytes) are now refused, in both
// header types, before they cost more than their size.
func TestHeaderLimits(t *testing.T) {
	lim := HeaderLimits{MaxBytes: 4096, MaxExtFields: 8, MaxDepth: 4}
	nested := func(depth int) []byte {
		return []byte(`{"x":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`)
	}
	jsonF := func(h []byte) []byte { return jsonFrame(string(h), nil) }
	binF := func(h []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(SerializeRocketMQ)<<24|uint32(len(h))), h...)
	}
	for _, tc := range []struct {
		name  string
		frame []byte
		ok    bool
	}{
		{"json 8 ext fields", jsonF(hugeExtHeader(8)), true},
		{"json 9 ext fields", jsonF(hugeExtHeader(9)), false},
		{"json ext fields over two objects", jsonF([]byte(`{"extFields":{"a":"","b":"","c":"","d":""},"extFields":{"e":"","f":"","g":"","h":"","i":""}}`)), false},
		{"binary 8 ext fields", binF(binaryExtHeader(8)), true},
		{"binary 9 ext fields", binF(binaryExtHeader(9)), false},
		{"depth 4", jsonF(nested(4)), true},
		{"depth 5", jsonF(nested(5)), false},
		{"4096-byte header", jsonF([]byte(`{"remark":"` + strings.Repeat("r", 4096-13) + `"}`)), true},
		{"4097-byte header", jsonF([]byte(`{"remark":"` + strings.Repeat("r", 4097-13) + `"}`)), false},
	} {
		_, err := DecodeLimited(tc.frame, lim)
		if tc.ok != (err == nil) || err != nil && !errors.Is(err, ErrBadHeader) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// The default limits refuse the 1.2 M-field header (here 100 000).
	if _, err := Decode(jsonFrame(string(hugeExtHeader(100_000)), nil)); !errors.Is(err, ErrBadHeader) {
		t.Fatalf("default limits: %v", err)
	}
	if _, err := Decode(jsonFrame(string(hugeExtHeader(DefaultMaxExtFields)), nil)); err != nil {
		t.Fatalf("a header at the default limit: %v", err)
	}
}

// A server closes a connection whose header exceeds its limits, and keeps
// serving the others.
func TestServerHeaderLimits(t *testing.T) {
	closed := make(chan *Conn, 2)
	s := startServer(t, ServerConfig{Limits: Limits{Header: HeaderLimits{MaxExtFields: 16}},
		OnConnClose: func(c *Conn) { closed <- c }},
		func(s *Server) { s.Handle(HeartBeat, "", echo) })
	nc := dialRaw(t, s)
	writeCmd(t, nc, &Command{Code: HeartBeat, Opaque: 1, ExtFields: map[string]string{"a": "b"}})
	if resp := readCmd(t, nc); resp.Code != Success {
		t.Fatalf("%+v", resp)
	}
	for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
		nc := dialRaw(t, s)
		ext := map[string]string{}
		for i := range 17 {
			ext[strconv.Itoa(i)] = "v"
		}
		writeCmd(t, nc, &Command{Code: HeartBeat, Opaque: 1, ExtFields: ext, SerializeType: st})
		waitClosedByPeer(t, nc)
		recv(t, closed, "close after an oversized header")
	}
	waitFor(t, "budget returned", func() bool { return s.HeldBytes() == 0 })
}

// The budget grants each class in arrival order, never more than its
// limit, keeps the reserve for small grants, and gives a waiter's grant
// back when its context ends.
func TestBudget(t *testing.T) {
	b := newBudget(10, 0, 10)
	var o budgetOwner
	ctx := ctxGuard(t)
	if w, err := b.acquire(ctx, &o, 6, true); w || err != nil {
		t.Fatal(w, err)
	}
	type res struct {
		name string
		err  error
	}
	got := make(chan res, 3)
	var wg sync.WaitGroup
	start := func(name string, ctx context.Context, n int64, waiting int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.acquire(ctx, &o, n, true)
			got <- res{name, err}
		}()
		waitFor(t, name+" waiting", func() bool { return b.stats().waiting == waiting })
	}
	t.Cleanup(wg.Wait)
	start("big", ctx, 8, 1)
	// A small request that would fit waits behind the big one.
	start("small", ctx, 2, 2)
	cctx, cancel := context.WithCancel(ctx)
	start("cancelled", cctx, 1, 3)
	cancel()
	if r := recv(t, got, "cancelled"); r.name != "cancelled" || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("%+v", r)
	}
	// Releasing makes room for both, granted in one go (their goroutines
	// report in either order).
	b.release(&o, 6)
	granted := map[string]bool{}
	for range 2 {
		r := recv(t, got, "big and small")
		if r.err != nil {
			t.Fatalf("%+v", r)
		}
		granted[r.name] = true
	}
	if !granted["big"] || !granted["small"] {
		t.Fatalf("granted %v", granted)
	}
	if st := b.stats(); st.held != 10 || o.held != 10 || st.waiting != 0 || st.waits != 3 || st.starved != 3 || !st.starvedSince.IsZero() {
		t.Fatalf("%+v owner %d", st, o.held)
	}
	b.release(&o, 10)
	if st := b.stats(); st.held != 0 || o.held != 0 {
		t.Fatal(st.held, o.held)
	}
}

// Large grants never take the reserve and one owner never holds more than
// its share when it takes one; small grants use the whole budget and pass
// large waiters.
func TestBudgetReserveAndShare(t *testing.T) {
	b := newBudget(100, 20, 50)
	var x, y, z budgetOwner
	ctx := ctxGuard(t)
	mustTake := func(o *budgetOwner, n int64, small bool) {
		t.Helper()
		if w, err := b.acquire(ctx, o, n, small); w || err != nil {
			t.Fatalf("acquire %d small=%v: waited %v, %v", n, small, w, err)
		}
	}
	mustTake(&x, 50, false)
	mustTake(&y, 30, false) // 80 held: the large part is full
	granted := make(chan string, 4)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	wait := func(name string, o *budgetOwner, n int64, small bool, waiting int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.acquire(ctx, o, n, small); err == nil {
				granted <- name
			}
		}()
		waitFor(t, name+" waiting", func() bool { return b.stats().waiting == waiting })
	}
	// x is at its share: its next large grant waits, even once room frees.
	wait("x again", &x, 10, false, 1)
	wait("z", &z, 10, false, 2)
	// Small frames still fit in the reserve, ahead of the large waiters.
	mustTake(&z, 15, true)
	if st := b.stats(); st.starved != 0 || st.shortfall == 0 {
		t.Fatalf("%+v", st)
	}
	b.release(&y, 30) // room for z; x is still at its share
	if name := recv(t, granted, "a large grant"); name != "z" {
		t.Fatalf("granted %s first", name)
	}
	b.release(&x, 50)
	if name := recv(t, granted, "x's grant"); name != "x again" {
		t.Fatal(name)
	}
	if st := b.stats(); st.held != 35 || st.waiting != 0 || st.shortfall != 0 {
		t.Fatalf("%+v", st)
	}
}

// The limits' zero values take the defaults, the budget is never below
// the frame limit, and negative limits disable.
func TestLimitsDefaults(t *testing.T) {
	l := Limits{}.withDefaults(DefaultMaxFrameSize)
	if l.ReadBudget != DefaultReadBudget || l.MaxConns != DefaultMaxConns ||
		l.MaxInFlightPerConn != DefaultMaxInFlightPerConn || l.Header != DefaultHeaderLimits {
		t.Fatalf("%+v", l)
	}
	if l.ReadReserve != DefaultReadBudget/8 || l.MaxConnShare != (DefaultReadBudget-DefaultReadBudget/8)/4 ||
		l.FrameTimeout != DefaultFrameTimeout || l.MinReadRate != DefaultMinReadRate ||
		l.StallGrace != DefaultStallGrace || l.StarvedAfter != DefaultStarvedAfter {
		t.Fatalf("%+v", l)
	}
	l = Limits{ReadBudget: 1, MaxConns: -1, MaxInFlightPerConn: -1}.withDefaults(1 << 20)
	if l.ReadBudget != 1<<20+2*SmallFrameSize || l.ReadReserve != 2*SmallFrameSize || l.MaxConnShare != 1<<20 ||
		l.MaxConns != 0 || l.MaxInFlightPerConn != 0 {
		t.Fatalf("%+v", l)
	}
}
