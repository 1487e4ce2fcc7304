package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ledgermq/ledgermq/internal/testwait"
	"github.com/ledgermq/ledgermq/remoting"
)

// sendWays are the ways sendVia sends.
var sendWays = []string{"Send", "SendFunc"}

// sendVia sends m with p through Send, or through SendFunc with the
// topic's route and its leaders' connections ready first, so that the
// first attempt is made without a goroutine, waiting for its callback.
func sendVia(t testing.TB, p *Producer, via string, ctx context.Context, m *Message) (SendResult, error) {
	t.Helper()
	if via == "Send" {
		return p.Send(ctx, m)
	}
	readyForFunc(t, p, m.Topic)
	type outcome struct {
		res SendResult
		err error
	}
	done := make(chan outcome, 2)
	if err := p.SendFunc(ctx, m, func(res SendResult, err error) { done <- outcome{res, err} }); err != nil {
		return SendResult{}, err
	}
	o := recvOne(t, done, "SendFunc's outcome")
	select {
	case <-done:
		t.Fatal("SendFunc called f twice")
	default:
	}
	return o.res, o.err
}

// readyForFunc reads topic's route and connects to its leaders, as a
// first send would.
func readyForFunc(t testing.TB, p *Producer, topic string) {
	t.Helper()
	ctx := ctxGuard(t)
	info, err := p.core.routes.get(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range info.leaders {
		// Any request dials; the fake broker answers this one "not supported".
		if _, err := p.core.rc.Invoke(ctx, addr, remoting.NewRequest(remoting.HeartBeat, nil, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if p.core.routes.ready(topic) == nil {
		t.Fatal("the route is not ready")
	}
}

func recvOne[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	return testwait.Recv(t, ch, guard, what)
}

// TestSendFuncPipeline: sends chained from their own callbacks, as a
// closed-loop sender keeps them in flight, are each stored once over two
// groups; the first ones, before any route or connection, go through a
// goroutine; every callback runs once and Close leaves no goroutine.
func TestSendFuncPipeline(t *testing.T) {
	f := startFake(t, "a", "b")
	ignore := goleak.IgnoreCurrent()
	p, err := NewProducer(WithNameServers(f.nsAddr()), WithCompression(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxGuard(t)
	const inflight, total = 16, 2000
	var next atomic.Int64
	var mu sync.Mutex
	seen := map[string]bool{}
	var failures []error
	var slots sync.WaitGroup
	var send func(m *Message)
	send = func(m *Message) {
		if next.Add(1) > total {
			slots.Done()
			return
		}
		err := p.SendFunc(ctx, m, func(res SendResult, err error) {
			mu.Lock()
			switch key := fmt.Sprintf("%s/%d", res.Queue.BrokerName, res.QueueOffset); {
			case err != nil:
				failures = append(failures, err)
			case seen[res.MsgID] || seen[key]:
				failures = append(failures, fmt.Errorf("%s at %s twice", res.MsgID, key))
			default:
				seen[res.MsgID], seen[key] = true, true
			}
			mu.Unlock()
			send(m)
		})
		if err != nil {
			t.Error(err)
			slots.Done()
		}
	}
	for range inflight {
		slots.Add(1)
		send(&Message{Topic: "T", Body: []byte("x")})
	}
	slots.Wait()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, ignore)
	if len(failures) > 0 || len(seen) != 2*total {
		t.Fatalf("%d stored, failures %v", len(seen)/2, failures)
	}
	if n := f.broker("a").sends.Load() + f.broker("b").sends.Load(); n != total {
		t.Fatalf("the brokers saw %d sends, want %d", n, total)
	}
}

// TestSendFuncEnds: a SendFunc whose broker never answers ends with its
// context's cancellation or at the send timeout, unknown, each once; a
// send after Close, or of an invalid message, fails at once without a
// callback; Close waits for the sends in flight and their callbacks.
func TestSendFuncEnds(t *testing.T) {
	f := startFake(t, "a")
	b := f.broker("a")
	b.program(never)
	p := newProducer(t, WithNameServers(f.nsAddr()), WithSendTimeout(200*time.Millisecond))
	readyForFunc(t, p, "T")
	m := &Message{Topic: "T", Body: []byte("x")}

	_, err := sendVia(t, p, "SendFunc", ctxGuard(t), m)
	if !errors.Is(err, ErrUnknownOutcome) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("at the send timeout: %v", err)
	}

	ctx, cancel := context.WithCancel(ctxGuard(t))
	done := make(chan error, 4)
	for range 2 {
		if err := p.SendFunc(ctx, m, func(_ SendResult, err error) { done <- err }); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "both requests at the broker", func() bool { return b.sends.Load() == 3 })
	cancel()
	for range 2 {
		if err := recvOne(t, done, "a cancelled send's outcome"); !errors.Is(err, ErrUnknownOutcome) || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: %v", err)
		}
	}

	if err := p.SendFunc(ctxGuard(t), &Message{Topic: "T"}, func(SendResult, error) { t.Error("callback of an invalid message") }); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("empty body: %v", err)
	}
	var called atomic.Int32
	for range 3 {
		if err := p.SendFunc(context.Background(), m, func(SendResult, error) { called.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if n := called.Load(); n != 3 {
		t.Fatalf("%d callbacks had run when Close returned", n)
	}
	if err := p.SendFunc(ctxGuard(t), m, func(SendResult, error) { t.Error("callback after Close") }); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if len(done) != 0 {
		t.Fatal("a callback ran twice")
	}
}

// TestSendFuncFailover: a first attempt refused by a group whose leader
// moved is retried, on a goroutine, at the new leader the route names.
func TestSendFuncFailover(t *testing.T) {
	f := startFake(t, "a")
	old := f.broker("a")
	p := newProducer(t, WithNameServers(f.nsAddr()))
	readyForFunc(t, p, "T")
	old.program(answer(remoting.NotLeaderForQueue, "not leader"))
	old.setLeader(false)
	moved := f.newLeader("a")
	res, err := sendVia(t, p, "SendFunc", ctxGuard(t), &Message{Topic: "T", Body: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || res.Addr != moved.addr || res.Earlier[0].Addr != old.addr || old.sends.Load() != 1 {
		t.Fatalf("result %+v; the old leader saw %d sends", res, old.sends.Load())
	}
}
