package client

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ledgermq/ledgermq/remoting"
)

// TestBrokerAnswers: how each kind of broker answer ends a send: retried
// or not, and with which outcome; the same through Send and through
// SendFunc's first attempt without a goroutine.
func TestBrokerAnswers(t *testing.T) {
	firstThen := func(code int32) func(int32, *remoting.Command) *remoting.Command {
		return func(n int32, req *remoting.Command) *remoting.Command {
			if n == 1 {
				return remoting.NewResponse(req, code, "first attempt refused")
			}
			return nil
		}
	}
	for _, tt := range []struct {
		name     string
		program  func(int32, *remoting.Command) *remoting.Command
		opts     []Option
		attempts int
		outcome  Outcome // of the send
		earlier  Outcome // of the first attempt, when there were two or more
		status   SendStatus
		code     int32 // of the error, when the send failed
	}{
		{name: "stored", program: nil, attempts: 1, outcome: OutcomeOK},
		{name: "flush disk timeout is stored", program: answerStored(remoting.FlushDiskTimeout), attempts: 1, outcome: OutcomeOK, status: SendFlushDiskTimeout},
		{name: "not available, retried", program: firstThen(remoting.ServiceNotAvailable), attempts: 2, outcome: OutcomeOK, earlier: OutcomeFailed},
		{name: "busy, retried", program: firstThen(remoting.SystemBusy), attempts: 2, outcome: OutcomeOK, earlier: OutcomeFailed},
		{name: "topic missing, retried", program: firstThen(remoting.TopicNotExist), attempts: 2, outcome: OutcomeOK, earlier: OutcomeFailed},
		{name: "system error, retried, maybe duplicated", program: firstThen(remoting.SystemError), attempts: 2, outcome: OutcomeOK, earlier: OutcomeUnknown},
		{name: "illegal, not retried", program: answer(remoting.MessageIllegal, "too big"), attempts: 1, outcome: OutcomeFailed, code: remoting.MessageIllegal},
		{name: "unknown code, not retried", program: answer(999, "?"), attempts: 1, outcome: OutcomeUnknown, code: 999},
		{name: "busy every time", program: answer(remoting.SystemBusy, "busy"), attempts: 1 + DefaultRetries, outcome: OutcomeFailed, code: remoting.SystemBusy},
		{name: "not leader, retried", program: firstThen(remoting.NotLeaderForQueue), attempts: 2, outcome: OutcomeOK, earlier: OutcomeFailed},
		{name: "system error without retry after unknown", program: answer(remoting.SystemError, "outcome unknown"),
			opts: []Option{WithRetryAfterUnknown(false)}, attempts: 1, outcome: OutcomeUnknown, code: remoting.SystemError},
		{name: "no retries", program: answer(remoting.ServiceNotAvailable, "no leader"), opts: []Option{WithRetries(0)},
			attempts: 1, outcome: OutcomeFailed, code: remoting.ServiceNotAvailable},
	} {
		for _, via := range sendWays {
			t.Run(via+"/"+tt.name, func(t *testing.T) {
				f := startFake(t, "a")
				b := f.broker("a")
				b.program(tt.program)
				p := newProducer(t, append([]Option{WithNameServers(f.nsAddr())}, tt.opts...)...)
				res, err := sendVia(t, p, via, ctxGuard(t), &Message{Topic: "T", Body: []byte("x")})
				if got := OutcomeOf(err); got != tt.outcome {
					t.Fatalf("outcome %v (%v), want %v", got, err, tt.outcome)
				}
				if got := int(b.sends.Load()); got != tt.attempts {
					t.Fatalf("broker saw %d attempts, want %d", got, tt.attempts)
				}
				if err != nil {
					se := sendErr(t, err)
					var be *BrokerError
					if len(se.Attempts) != tt.attempts || !errors.As(err, &be) || be.Code != tt.code || be.Addr != b.addr {
						t.Fatalf("error %v: %d attempts, broker error %+v", err, len(se.Attempts), be)
					}
					return
				}
				if res.Attempts != tt.attempts || res.Status != tt.status {
					t.Fatalf("result %+v", res)
				}
				if tt.attempts > 1 {
					if res.Earlier[0].Outcome != tt.earlier || res.MaybeDuplicated() != (tt.earlier == OutcomeUnknown) {
						t.Fatalf("earlier %+v, MaybeDuplicated %v", res.Earlier, res.MaybeDuplicated())
					}
				}
			})
		}
	}
}

// answerStored answers a code that means stored, with the send header.
func answerStored(code int32) func(int32, *remoting.Command) *remoting.Command {
	return func(n int32, req *remoting.Command) *remoting.Command {
		resp := remoting.NewResponse(req, code, "stored, flush timed out")
		resp.ExtFields = map[string]string{"msgId": "00", "queueId": req.ExtFields["queueId"], "queueOffset": "7"}
		return resp
	}
}

// TestDialFailureIsFailed: a broker that cannot be dialled fails the send
// as certainly not stored once the send times out, every attempt
// recorded; it is tried beyond the retry budget, as a killed leader is.
func TestDialFailureIsFailed(t *testing.T) {
	f := startFake(t, "a")
	b := f.broker("a")
	d := newFaultDialer()
	d.setRefuse(b.addr, true)
	p := newProducer(t, WithNameServers(f.nsAddr()), WithDial(d.dial), WithSendTimeout(time.Second))
	ctx := ctxGuard(t)
	_, err := p.Send(ctx, &Message{Topic: "T", Body: []byte("x")})
	if !errors.Is(err, ErrSendFailed) || !errors.Is(err, errInjected) || errors.Is(err, ErrUnknownOutcome) ||
		!errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("send: %v", err)
	}
	se := sendErr(t, err)
	if len(se.Attempts) <= 1+DefaultRetries {
		t.Fatalf("%d attempts", len(se.Attempts))
	}
	for _, a := range se.Attempts {
		if a.Outcome != OutcomeFailed || a.Addr != b.addr {
			t.Fatalf("attempt %+v", a)
		}
	}
	if err := p.SendOneWay(ctx, &Message{Topic: "T", Body: []byte("x")}); OutcomeOf(err) != OutcomeFailed {
		t.Fatalf("one-way: %v", err)
	}
	if n := b.sends.Load(); n != 0 {
		t.Fatalf("broker saw %d sends", n)
	}
	// The link comes back: the next send dials again.
	d.setRefuse(b.addr, false)
	if _, err := p.Send(ctx, &Message{Topic: "T", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
}

// TestCertainFailuresOutlastRetries: while the group's only leader refuses
// sends (down: its dial fails; or answering SERVICE_NOT_AVAILABLE in an
// election) for longer than the retry budget lasts, a send keeps trying,
// recording each attempt, and is stored once the leader serves again;
// every refused attempt is in the result.
func TestCertainFailuresOutlastRetries(t *testing.T) {
	for _, tt := range []struct {
		name string
		down func(f *fakeCluster, d *faultDialer, on bool)
		sent func(f *fakeCluster, dials int32) int32 // attempts so far
	}{
		{"leader unreachable", func(f *fakeCluster, d *faultDialer, on bool) { d.setRefuse(f.broker("a").addr, on) },
			func(_ *fakeCluster, dials int32) int32 { return dials }},
		{"no leader there", func(f *fakeCluster, _ *faultDialer, on bool) {
			if on {
				f.broker("a").program(answer(remoting.ServiceNotAvailable, "service not available now: dledger: not the leader"))
			} else {
				f.broker("a").program(nil)
			}
		}, func(f *fakeCluster, _ int32) int32 { return f.broker("a").sends.Load() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := startFake(t, "a")
			d := newFaultDialer()
			var brokerDials atomic.Int32
			dial := func(ctx context.Context, addr string) (net.Conn, error) {
				if addr == f.broker("a").addr {
					brokerDials.Add(1)
				}
				return d.dial(ctx, addr)
			}
			tt.down(f, d, true)
			p := newProducer(t, WithNameServers(f.nsAddr()), WithDial(dial), WithSendTimeout(guard))
			type sent struct {
				res SendResult
				err error
			}
			done := make(chan sent, 1)
			go func() {
				res, err := p.Send(ctxGuard(t), &Message{Topic: "T", Body: []byte("x")})
				done <- sent{res, err}
			}()
			const refused = 3 + DefaultRetries // more than the budget allows
			waitFor(t, "attempts beyond the retry budget", func() bool { return tt.sent(f, brokerDials.Load()) >= refused })
			tt.down(f, d, false)
			r := <-done
			if r.err != nil {
				t.Fatalf("send once the leader serves: %v", r.err)
			}
			if r.res.Attempts <= refused || r.res.MaybeDuplicated() || len(r.res.Earlier) != r.res.Attempts-1 {
				t.Fatalf("result %+v", r.res)
			}
			for _, a := range r.res.Earlier {
				if a.Outcome != OutcomeFailed || a.Err == nil {
					t.Fatalf("earlier attempt %+v", a)
				}
			}
		})
	}
}

// TestCertainFailureUntilTimeout: a send the leader keeps refusing fails,
// certainly not stored, when its timeout ends, with every attempt and the
// last refusal in the error; WithRetries(0) still means one attempt.
func TestCertainFailureUntilTimeout(t *testing.T) {
	f := startFake(t, "a")
	b := f.broker("a")
	b.program(answer(remoting.ServiceNotAvailable, "service not available now: dledger: not the leader"))
	p := newProducer(t, WithNameServers(f.nsAddr()), WithSendTimeout(time.Second))
	_, err := p.Send(ctxGuard(t), &Message{Topic: "T", Body: []byte("x")})
	var be *BrokerError
	if !errors.Is(err, ErrSendFailed) || errors.Is(err, ErrUnknownOutcome) || !errors.Is(err, context.DeadlineExceeded) ||
		!errors.As(err, &be) || be.Code != remoting.ServiceNotAvailable {
		t.Fatalf("send: %v", err)
	}
	se := sendErr(t, err)
	if len(se.Attempts) <= 1+DefaultRetries || int(b.sends.Load()) != len(se.Attempts) {
		t.Fatalf("%d attempts, broker saw %d", len(se.Attempts), b.sends.Load())
	}
	for _, a := range se.Attempts {
		if !errors.As(a.Err, &be) || be.Code != remoting.ServiceNotAvailable || a.Outcome != OutcomeFailed {
			t.Fatalf("attempt %+v", a)
		}
	}
}

// TestConnectionLostAfterWrite: when the connection dies after the
// request went out, the outcome is unknown; the retry that stores the
// message reports that it may be duplicated, and without retries after
// unknown outcomes the send ends with ErrUnknownOutcome.
func TestConnectionLostAfterWrite(t *testing.T) {
	f := startFake(t, "a")
	b := f.broker("a")
	d := newFaultDialer()
	d.nextConn(b.addr, cutAfterWrite)
	p := newProducer(t, WithNameServers(f.nsAddr()), WithDial(d.dial))
	ctx := ctxGuard(t)
	res, err := p.Send(ctx, &Message{Topic: "T", Body: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || !res.MaybeDuplicated() || !errors.Is(res.Earlier[0].Err, remoting.ErrConnClosed) {
		t.Fatalf("result %+v", res)
	}
	waitFor(t, "both attempts at the broker", func() bool { return b.sends.Load() == 2 })

	d.nextConn(b.addr, cutAfterWrite)
	strict := newProducer(t, WithNameServers(f.nsAddr()), WithDial(d.dial), WithRetryAfterUnknown(false))
	_, err = strict.Send(ctx, &Message{Topic: "T", Body: []byte("y")})
	if !errors.Is(err, ErrUnknownOutcome) || !errors.Is(err, remoting.ErrConnClosed) || len(sendErr(t, err).Attempts) != 1 {
		t.Fatalf("strict send: %v", err)
	}
	waitFor(t, "the request at the broker", func() bool { return b.sends.Load() == 3 })
}

// TestTimeoutIsUnknown: a broker that takes the request and never answers
// leaves the outcome unknown once the send timeout passes.
func TestTimeoutIsUnknown(t *testing.T) {
	f := startFake(t, "a")
	b := f.broker("a")
	b.program(never)
	p := newProducer(t, WithNameServers(f.nsAddr()), WithSendTimeout(200*time.Millisecond))
	_, err := p.Send(ctxGuard(t), &Message{Topic: "T", Body: []byte("x")})
	if !errors.Is(err, ErrUnknownOutcome) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("send: %v", err)
	}
	if n := len(sendErr(t, err).Attempts); n != 1 || b.sends.Load() != 1 {
		t.Fatalf("%d attempts, broker saw %d", n, b.sends.Load())
	}
}

// TestWaitsForLeader: while the route lists the group without a leader
// (an election), a send waits, re-reading the route, and goes out as soon
// as a leader is listed; if none comes in time it fails with ErrNoRoute.
func TestWaitsForLeader(t *testing.T) {
	f := startFake(t, "a")
	b := f.broker("a")
	b.setLeader(false)
	p := newProducer(t, WithNameServers(f.nsAddr()), WithSendTimeout(300*time.Millisecond))
	_, err := p.Send(ctxGuard(t), &Message{Topic: "T", Body: []byte("x")})
	if !errors.Is(err, ErrNoRoute) || !errors.Is(err, ErrSendFailed) {
		t.Fatalf("send without a leader: %v", err)
	}

	patient := newProducer(t, WithNameServers(f.nsAddr()), WithSendTimeout(guard))
	done := make(chan error, 1)
	before := f.routeReqs.Load()
	go func() {
		_, err := patient.Send(ctxGuard(t), &Message{Topic: "T", Body: []byte("x")})
		done <- err
	}()
	waitFor(t, "the send re-reading the route", func() bool { return f.routeReqs.Load() >= before+3 })
	b.setLeader(true)
	if err := <-done; err != nil {
		t.Fatalf("send once a leader is listed: %v", err)
	}
	if b.sends.Load() != 1 {
		t.Fatalf("broker saw %d sends", b.sends.Load())
	}
}

// TestLatencyFaultTolerance: a group whose send failed is avoided while
// another group can take the messages, until its time is up or its route
// names a new leader; a slow group is avoided for 30 s; with one group
// only, the client keeps sending to it; with the strategy off, the failed
// group stays in the rotation.
func TestLatencyFaultTolerance(t *testing.T) {
	t.Run("failed group avoided", func(t *testing.T) {
		clk := &fakeClock{now: time.Unix(1_000_000, 0)}
		f := startFake(t, "a", "b")
		a, b := f.broker("a"), f.broker("b")
		a.program(answer(remoting.ServiceNotAvailable, "not the leader"))
		p := newProducer(t, WithNameServers(f.nsAddr()), withClock(clk.Now))
		ctx := ctxGuard(t)
		send := func(n int) {
			t.Helper()
			for range n {
				if _, err := p.Send(ctx, &Message{Topic: "T", Body: []byte("x")}); err != nil {
					t.Fatal(err)
				}
			}
		}
		send(4) // round-robin reaches a at least once, fails over to b
		if a.sends.Load() == 0 {
			t.Fatal("round robin never chose group a")
		}
		failedOnce := a.sends.Load()
		send(20)
		if got := a.sends.Load(); got != failedOnce {
			t.Fatalf("group a got %d more sends while avoided", got-failedOnce)
		}
		clk.Advance(601 * time.Second)
		a.program(nil)
		send(8)
		if a.sends.Load() == failedOnce {
			t.Fatal("group a still avoided after 600 s")
		}
		if b.sends.Load() < 20 {
			t.Fatalf("group b took only %d sends", b.sends.Load())
		}
	})
	t.Run("slow group avoided", func(t *testing.T) {
		clk := &fakeClock{now: time.Unix(1_000_000, 0)}
		f := startFake(t, "a", "b")
		a := f.broker("a")
		var slow atomic.Bool
		slow.Store(true)
		a.program(func(int32, *remoting.Command) *remoting.Command {
			if slow.Load() {
				time.Sleep(560 * time.Millisecond) // the latency under test
			}
			return nil
		})
		p := newProducer(t, WithNameServers(f.nsAddr()), withClock(clk.Now))
		ctx := ctxGuard(t)
		for a.sends.Load() == 0 {
			if _, err := p.Send(ctx, &Message{Topic: "T", Body: []byte("x")}); err != nil {
				t.Fatal(err)
			}
		}
		slow.Store(false)
		for range 12 {
			if _, err := p.Send(ctx, &Message{Topic: "T", Body: []byte("x")}); err != nil {
				t.Fatal(err)
			}
		}
		if a.sends.Load() != 1 {
			t.Fatalf("slow group a got %d sends within 30 s", a.sends.Load())
		}
		clk.Advance(30 * time.Second)
		for range 8 {
			if _, err := p.Send(ctx, &Message{Topic: "T", Body: []byte("x")}); err != nil {
				t.Fatal(err)
			}
		}
		if a.sends.Load() == 1 {
			t.Fatal("group a still avoided after 30 s")
		}
	})
	t.Run("single group keeps its leader", func(t *testing.T) {
		f := startFake(t, "a")
		a := f.broker("a")
		a.program(func(n int32, req *remoting.Command) *remoting.Command {
			if n == 1 {
				return remoting.NewResponse(req, remoting.ServiceNotAvailable, "not ready")
			}
			return nil
		})
		p := newProducer(t, WithNameServers(f.nsAddr()))
		ctx := ctxGuard(t)
		for i := range 3 {
			res, err := p.Send(ctx, &Message{Topic: "T", Body: []byte("x")})
			if err != nil || res.Queue.BrokerName != "a" {
				t.Fatalf("send %d: %+v %v", i, res, err)
			}
		}
		if a.sends.Load() != 4 {
			t.Fatalf("group a saw %d sends, want 4", a.sends.Load())
		}
	})
	t.Run("off", func(t *testing.T) {
		f := startFake(t, "a", "b")
		a := f.broker("a")
		a.program(answer(remoting.ServiceNotAvailable, "not the leader"))
		p := newProducer(t, WithNameServers(f.nsAddr()), WithLatencyFaultTolerance(false))
		ctx := ctxGuard(t)
		for range 12 {
			if _, err := p.Send(ctx, &Message{Topic: "T", Body: []byte("x")}); err != nil {
				t.Fatal(err)
			}
		}
		if a.sends.Load() < 3 {
			t.Fatalf("without fault tolerance group a got only %d of 12 first tries", a.sends.Load())
		}
	})
}

// TestQueueSelector: a custom selector decides every queue; one that
// picks a queue outside the route fails the send before the wire.
func TestQueueSelector(t *testing.T) {
	f := startFake(t, "a", "b")
	b := f.broker("b")
	pick := QueueSelectorFunc(func(_ *Message, qs []Queue) Queue { return qs[len(qs)-1] })
	p := newProducer(t, WithNameServers(f.nsAddr()), WithQueueSelector(pick))
	ctx := ctxGuard(t)
	for range 5 {
		res, err := p.Send(ctx, &Message{Topic: "T", Body: []byte("x")})
		if err != nil || res.Queue != (Queue{"T", "b", 3}) {
			t.Fatalf("send: %+v %v", res, err)
		}
	}
	if b.sends.Load() != 5 {
		t.Fatalf("b saw %d", b.sends.Load())
	}
	bad := newProducer(t, WithNameServers(f.nsAddr()), WithQueueSelector(QueueSelectorFunc(
		func(*Message, []Queue) Queue { return Queue{"T", "zzz", 0} })))
	if _, err := bad.Send(ctx, &Message{Topic: "T", Body: []byte("x")}); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("bad selector: %v", err)
	}
}

// TestCloseWaitsAndLeavesNothing: Close waits for the async sends in
// flight, whose callbacks have all run when it returns; later sends fail
// with ErrClosed; no goroutine of the producer is left.
func TestCloseWaitsAndLeavesNothing(t *testing.T) {
	f := startFake(t, "a")
	b := f.broker("a")
	b.program(never)
	ignore := goleak.IgnoreCurrent()

	p, err := NewProducer(WithNameServers(f.nsAddr()), WithSendTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var called atomic.Int32
	for range 5 {
		err := p.SendAsync(context.Background(), &Message{Topic: "T", Body: []byte("x")}, func(_ SendResult, err error) {
			if !errors.Is(err, ErrUnknownOutcome) {
				t.Errorf("async send: %v", err)
			}
			called.Add(1)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the requests at the broker", func() bool { return b.sends.Load() == 5 })
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if n := called.Load(); n != 5 {
		t.Fatalf("%d callbacks had run when Close returned", n)
	}
	goleak.VerifyNone(t, ignore)
	_, err = p.Send(context.Background(), &Message{Topic: "T", Body: []byte("x")})
	if !errors.Is(err, ErrClosed) || OutcomeOf(err) != OutcomeFailed {
		t.Fatalf("send after close: %v", err)
	}
	if err := p.SendAsync(context.Background(), &Message{Topic: "T", Body: []byte("x")}, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("async send after close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestAsyncBackPressure: SendAsync waits for a free slot and gives up
// with its context.
func TestAsyncBackPressure(t *testing.T) {
	f := startFake(t, "a")
	b := f.broker("a")
	release := make(chan struct{})
	b.program(func(int32, *remoting.Command) *remoting.Command {
		<-release
		return nil
	})
	p := newProducer(t, WithNameServers(f.nsAddr()), WithMaxAsyncInFlight(2), WithSendTimeout(guard))
	ctx := ctxGuard(t)
	done := make(chan error, 3)
	for range 2 {
		if err := p.SendAsync(ctx, &Message{Topic: "T", Body: []byte("x")}, func(_ SendResult, err error) { done <- err }); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err := p.SendAsync(short, &Message{Topic: "T", Body: []byte("x")}, func(SendResult, error) { t.Error("callback of a refused send") })
	if !errors.Is(err, context.DeadlineExceeded) || OutcomeOf(err) != OutcomeFailed {
		t.Fatalf("third async send: %v", err)
	}
	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
