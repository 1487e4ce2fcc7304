package client

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// storedWithWindow is a program that stores the message and answers with
// a duplicate window of windowMs (none when 0), saying duplicate when dup
// is set, as a ledgermq broker group with its window on answers.
func storedWithWindow(b *fakeBroker, windowMs int64, dup bool) func(int32, *remoting.Command) *remoting.Command {
	return func(_ int32, req *remoting.Command) *remoting.Command {
		h, err := protocol.DecodeSendRequestHeader(req.Code, req.ExtFields)
		if err != nil {
			return remoting.NewResponse(req, remoting.SystemError, err.Error())
		}
		b.mu.Lock()
		off := b.offset
		b.offset++
		b.mu.Unlock()
		rh := protocol.SendMessageResponseHeader{MsgID: "00", QueueID: h.QueueID, QueueOffset: off,
			Region: "DefaultRegion", DedupWindowMs: windowMs, Duplicate: dup}
		return rh.Response(req, remoting.Success)
	}
}

// firstUnknown runs program after answering the first send SYSTEM_ERROR
// (an outcome unknown, retried).
func firstUnknown(program func(int32, *remoting.Command) *remoting.Command) func(int32, *remoting.Command) *remoting.Command {
	return func(n int32, req *remoting.Command) *remoting.Command {
		if n == 1 {
			return remoting.NewResponse(req, remoting.SystemError, "outcome unknown")
		}
		return program(n, req)
	}
}

// TestDedupWindowCoversRetry: a send whose first attempt's outcome is
// unknown and whose retry the same broker group answers with its
// duplicate window is not maybe duplicated, and the answer's Duplicate
// and window reach the result; the same retry answered without a window
// is maybe duplicated. Through Send and through SendFunc.
func TestDedupWindowCoversRetry(t *testing.T) {
	for _, tt := range []struct {
		name     string
		windowMs int64
		dup      bool
		maybe    bool
	}{
		{name: "covered, answered with the first store", windowMs: 120_000, dup: true, maybe: false},
		{name: "covered, stored by the retry", windowMs: 120_000, dup: false, maybe: false},
		{name: "no window", windowMs: 0, maybe: true},
	} {
		for _, via := range sendWays {
			t.Run(via+"/"+tt.name, func(t *testing.T) {
				f := startFake(t, "a")
				b := f.broker("a")
				b.program(firstUnknown(storedWithWindow(b, tt.windowMs, tt.dup)))
				p := newProducer(t, WithNameServers(f.nsAddr()))
				res, err := sendVia(t, p, via, ctxGuard(t), &Message{Topic: "T", Body: []byte("x")})
				if err != nil {
					t.Fatal(err)
				}
				if res.Attempts != 2 || res.Earlier[0].Outcome != OutcomeUnknown || b.sends.Load() != 2 {
					t.Fatalf("result %+v; the broker saw %d sends", res, b.sends.Load())
				}
				if res.MaybeDuplicated() != tt.maybe || res.Duplicate != tt.dup ||
					res.DedupWindow != time.Duration(tt.windowMs)*time.Millisecond {
					t.Fatalf("MaybeDuplicated %v, Duplicate %v, window %v: result %+v",
						res.MaybeDuplicated(), res.Duplicate, res.DedupWindow, res)
				}
				first := res.Earlier[0].Start
				if first.IsZero() || res.started.Before(first) {
					t.Fatalf("attempts started at %v and %v", first, res.started)
				}
			})
		}
	}
}

// TestDedupWindowOtherGroup: a retry that went to another broker group
// after an unknown attempt is maybe duplicated, although that group
// answered with a window: the first group's window does not see the retry.
func TestDedupWindowOtherGroup(t *testing.T) {
	for _, via := range sendWays {
		t.Run(via, func(t *testing.T) {
			f := startFake(t, "a", "b")
			var sends atomic.Int32 // over both groups
			for _, name := range []string{"a", "b"} {
				b := f.broker(name)
				stored := storedWithWindow(b, 120_000, false)
				b.program(func(n int32, req *remoting.Command) *remoting.Command {
					if sends.Add(1) == 1 {
						return remoting.NewResponse(req, remoting.SystemError, "outcome unknown")
					}
					return stored(n, req)
				})
			}
			p := newProducer(t, WithNameServers(f.nsAddr()))
			res, err := sendVia(t, p, via, ctxGuard(t), &Message{Topic: "T", Body: []byte("x")})
			if err != nil {
				t.Fatal(err)
			}
			if res.Attempts != 2 || res.Earlier[0].Outcome != OutcomeUnknown ||
				res.Earlier[0].Queue.BrokerName == res.Queue.BrokerName {
				t.Fatalf("result %+v", res)
			}
			if !res.MaybeDuplicated() || res.DedupWindow != 2*time.Minute {
				t.Fatalf("MaybeDuplicated %v, window %v", res.MaybeDuplicated(), res.DedupWindow)
			}
		})
	}
}

// TestMaybeDuplicatedRule: the decision itself, on attempts with exact
// start times.
func TestMaybeDuplicatedRule(t *testing.T) {
	t0 := time.Now()
	qa := Queue{Topic: "T", BrokerName: "a", QueueID: 1}
	qb := Queue{Topic: "T", BrokerName: "b", QueueID: 1}
	at := func(q Queue, o Outcome, start time.Time) Attempt {
		return Attempt{Queue: q, Outcome: o, Start: start}
	}
	w := 2 * time.Minute
	for _, tt := range []struct {
		name    string
		earlier []Attempt
		q       Queue // of the acknowledged attempt
		window  time.Duration
		started time.Time
		maybe   bool
	}{
		{name: "first attempt", q: qa, window: w, started: t0},
		{name: "earlier failed, no window", earlier: []Attempt{at(qa, OutcomeFailed, t0)}, q: qb, started: t0.Add(time.Second)},
		{name: "covered", earlier: []Attempt{at(qa, OutcomeUnknown, t0)}, q: qa, window: w, started: t0.Add(time.Second)},
		{name: "covered, another queue of the group", earlier: []Attempt{at(Queue{Topic: "T", BrokerName: "a"}, OutcomeUnknown, t0)},
			q: qa, window: w, started: t0.Add(time.Second)},
		{name: "another group", earlier: []Attempt{at(qb, OutcomeUnknown, t0)}, q: qa, window: w, started: t0.Add(time.Second), maybe: true},
		{name: "no window", earlier: []Attempt{at(qa, OutcomeUnknown, t0)}, q: qa, started: t0.Add(time.Second), maybe: true},
		{name: "window elapsed", earlier: []Attempt{at(qa, OutcomeUnknown, t0)}, q: qa, window: w, started: t0.Add(w + time.Millisecond), maybe: true},
		{name: "exactly the window after", earlier: []Attempt{at(qa, OutcomeUnknown, t0)}, q: qa, window: w, started: t0.Add(w), maybe: true},
		{name: "just inside the window", earlier: []Attempt{at(qa, OutcomeUnknown, t0)}, q: qa, window: w, started: t0.Add(w - time.Nanosecond)},
		{name: "one of two unknowns not covered", earlier: []Attempt{at(qb, OutcomeUnknown, t0), at(qa, OutcomeUnknown, t0.Add(time.Second))},
			q: qa, window: w, started: t0.Add(2 * time.Second), maybe: true},
		{name: "two unknowns covered", earlier: []Attempt{at(qa, OutcomeUnknown, t0), at(qb, OutcomeFailed, t0.Add(time.Second)), at(qa, OutcomeUnknown, t0.Add(2*time.Second))},
			q: qa, window: w, started: t0.Add(3 * time.Second)},
		{name: "unknown attempt without a start", earlier: []Attempt{at(qa, OutcomeUnknown, time.Time{})}, q: qa, window: w, started: t0, maybe: true},
		{name: "result without a start", earlier: []Attempt{at(qa, OutcomeUnknown, t0)}, q: qa, window: w, maybe: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := SendResult{Queue: tt.q, Earlier: tt.earlier, Attempts: len(tt.earlier) + 1, DedupWindow: tt.window, started: tt.started}
			if got := r.MaybeDuplicated(); got != tt.maybe {
				t.Fatalf("MaybeDuplicated %v, want %v", got, tt.maybe)
			}
		})
	}
}

// TestDedupWindowDecoding: the window and the duplicate mark of a send
// answer, as the list decoding reads them and as a duration.
func TestDedupWindowDecoding(t *testing.T) {
	list := []remoting.ExtField{{Key: "msgId", Value: "A"}, {Key: "queueId", Value: "1"}, {Key: "queueOffset", Value: "2"},
		{Key: protocol.ExtDedupWindow, Value: "120000"}, {Key: protocol.ExtDuplicate, Value: "true"}}
	var h protocol.SendMessageResponseHeader
	if err := decodeSendResponse(&remoting.Command{ExtList: list}, &h); err != nil || h.DedupWindowMs != 120_000 || !h.Duplicate {
		t.Fatalf("%+v %v", h, err)
	}
	list[3].Value = "2m"
	err := decodeSendResponse(&remoting.Command{ExtList: list}, &h)
	if !errors.Is(err, remoting.ErrBadHeader) {
		t.Fatalf("a malformed window: %v", err)
	}
	for ms, want := range map[int64]time.Duration{0: 0, -1: 0, 1: time.Millisecond, 120_000: 2 * time.Minute,
		1 << 62: time.Duration(1<<63 - 1)} {
		if got := dedupWindow(ms); got != want {
			t.Fatalf("window of %d ms: %v, want %v", ms, got, want)
		}
	}
}
