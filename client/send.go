package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// errNoLeader: the chosen group (or every group) has no leader in the
// route right now; the send waits for a route that has one.
var errNoLeader = errors.New("client: no leader in the route")

// Backoff between route reads while a send waits for a leader, or before
// it dials again the address whose transport just failed.
const (
	firstBackoff = 10 * time.Millisecond
	maxBackoff   = 50 * time.Millisecond
)

// Backoff before a send tries again an address that certainly refused it
// (a failed dial, SERVICE_NOT_AVAILABLE, not leader): long enough not to
// flood a group in an election, short enough that the send goes out
// within a fraction of the election once the route names the new leader
// (a new address is tried at once).
const (
	firstRetryBackoff = 20 * time.Millisecond
	maxRetryBackoff   = 200 * time.Millisecond
)

// attemptResult is an Attempt with what the send loop needs to go on.
type attemptResult struct {
	Attempt
	retry     bool // a failure RocketMQ retries
	transport bool // no answer from the broker (dial, connection, timeout)
	// certain: refused before anything was stored because the group had
	// no writable leader there (dial failed, 14, 501, 1500); retried
	// until the send times out, outside the retry budget.
	certain bool
	result  SendResult
}

// sendRetry is a send's retry state across its attempts.
type sendRetry struct {
	route   backoff         // waits for a route with a leader
	refused backoff         // waits before an address that refused the send
	tried   map[string]bool // addresses that certainly refused this send
	// pin is the queue of a half message's first attempt whose outcome
	// was unknown: every later attempt goes to it (pick).
	pin *Queue
}

// deliver is the send loop shared by every kind of send:
//
//  1. resolve a queue and its group's leader from the route (cached for
//     the first attempt, fetched again, coalesced, for every retry);
//     wait, re-reading the route with backoff, while the group has no
//     leader;
//  2. attempt it;
//  3. on anything but success, refresh the route at once and, if the
//     failure is retryable and the budget allows, go to 1, preferring
//     another group. When no retry follows, a transport failure or a
//     retryable answer marks the route suspect: the next send waits for
//     the fresh read rather than go to the same leader again.
//
// The budget: a failure that certainly stored nothing because the group
// had no writable leader at that address (attemptResult.certain) is
// retried until ctx ends, an address that refused the send being tried
// again only after a back-off of 20 ms doubling to 200 ms (a new leader's
// address at once); every other retryable failure counts against
// WithRetries, as in RocketMQ. WithRetries(0) turns retrying off.
//
// ctx bounds it all, with the send timeout.
func (p *Producer) deliver(ctx context.Context, out *outgoing, kind sendKind) (SendResult, error) {
	if p.tracer == nil {
		return p.deliverOnce(ctx, out, kind)
	}
	begin := time.Now()
	res, err := p.deliverOnce(ctx, out, kind)
	for _, e := range pubEvents(p.opts.group, out, res, err, time.Since(begin), begin) {
		p.tracer.add(e)
	}
	return res, err
}

// deliverOnce is deliver without the trace.
func (p *Producer) deliverOnce(ctx context.Context, out *outgoing, kind sendKind) (SendResult, error) {
	out.loop.init(p, ctx, out)
	defer out.loop.sctx.stop()
	return p.runLoop(out, kind, nil)
}

// sendLoop is a send's state across its attempts (deliverOnce).
type sendLoop struct {
	ctx  context.Context // the caller's, bounded by the send timeout
	sctx *sendContext    // stopped once the send is over (nil: nothing to stop)
	// attempts lists the failed attempts: most sends succeed at once and
	// need no list.
	attempts []Attempt
	last     *attemptResult // the failed attempt a retry follows
	rs       sendRetry
	spent    int // attempts that count against the retry budget
}

// init starts the loop of out, bounded by ctx and the send timeout.
func (l *sendLoop) init(p *Producer, ctx context.Context, out *outgoing) {
	l.ctx, l.sctx = withSendTimeout(ctx, out.start, p.opts.sendTimeout, &out.sctx)
	l.rs = sendRetry{route: backoff{next: firstBackoff, leaveRoom: true},
		refused: backoff{next: firstRetryBackoff, max: maxRetryBackoff, leaveRoom: true}}
}

// target is where an attempt goes: a queue, its group's leader, and the
// route that named them.
type target struct {
	q    Queue
	addr string
	info *publishInfo
}

// runLoop makes out's attempts until one settles the send: the first at
// first when it is set (resolved already), every other where resolve
// says.
func (p *Producer) runLoop(out *outgoing, kind sendKind, first *target) (SendResult, error) {
	l := &out.loop
	for {
		var t target
		if first != nil {
			t, first = *first, nil
		} else {
			q, addr, info, err := p.resolve(l.ctx, out, l.last, &l.rs)
			if err != nil {
				if l.last != nil {
					// No further attempt (the send timed out between attempts,
					// or the route is gone): say why the last one failed too.
					err = fmt.Errorf("%w, retrying after: %w", err, l.last.Err)
				}
				return SendResult{}, p.sendError(out, l.attempts, err)
			}
			t = target{q: q, addr: addr, info: info}
		}
		r := p.attempt(l.ctx, out, kind, t.q, t.addr)
		if res, done, err := p.settle(out, t.info, &r); done {
			return res, err
		}
	}
}

// settle takes in r, an attempt of out to r.Queue at r.Addr on the route
// info: done, with the send's result or error, when it ends the send;
// otherwise the loop is ready for the retry.
func (p *Producer) settle(out *outgoing, info *publishInfo, r *attemptResult) (SendResult, bool, error) {
	l := &out.loop
	q, addr := r.Queue, r.Addr
	if r.Outcome != OutcomeOK {
		l.attempts = append(l.attempts, r.Attempt)
	}
	if !r.certain {
		l.spent++
	}
	if r.Outcome == OutcomeUnknown && out.half() && l.rs.pin == nil {
		q := r.Queue
		l.rs.pin = &q
	}
	if p.opts.latencyFault && !out.ordered && (r.Outcome == OutcomeOK || r.retry) {
		p.core.faults.update(q.BrokerName, addr, r.Latency, r.Outcome != OutcomeOK)
	}
	if r.Outcome == OutcomeOK {
		if info.fromDefault {
			// The broker created the topic; learn its real route.
			p.core.routes.trigger(out.topic)
		}
		res := r.result
		res.Attempts = len(l.attempts) + 1
		if len(l.attempts) > 0 {
			res.Earlier = slices.Clip(l.attempts)
		}
		return res, true, nil
	}
	overBudget := p.opts.retries == 0 || !r.certain && l.spent > p.opts.retries
	if !r.retry || overBudget || l.ctx.Err() != nil ||
		(r.Outcome == OutcomeUnknown && !p.opts.retryUnknown) {
		if r.transport || r.retry {
			// The leader may be gone: the next send reads the route first.
			p.core.routes.invalidate(out.topic)
		} else {
			p.core.routes.trigger(out.topic)
		}
		return SendResult{}, true, p.sendError(out, l.attempts, r.Err)
	}
	p.core.routes.trigger(out.topic) // the retry's resolve waits for it
	if r.certain {
		if l.rs.tried == nil {
			l.rs.tried = map[string]bool{}
		}
		l.rs.tried[addr] = true
	}
	p.opts.logger.Debug("retrying send", "topic", out.topic, "queue", q, "addr", addr,
		"outcome", r.Outcome, "error", r.Err)
	failed := *r // only a retry keeps its attempt past the loop
	l.last = &failed
	return SendResult{}, false, nil
}

// sendError builds the error of a failed send: unknown as soon as one
// attempt's outcome was.
func (p *Producer) sendError(out *outgoing, attempts []Attempt, cause error) error {
	o := OutcomeFailed
	if unknownAmong(attempts) {
		o = OutcomeUnknown
	}
	return &SendError{Topic: out.topic, Outcome: o, Attempts: attempts, Err: cause}
}

// resolve picks the queue and leader address of the next attempt. For a
// retry (last != nil) it reads the route again first. While the route has
// no leader for the queue, it waits with backoff and reads it again; if
// the route still names the address whose transport just failed, or one
// that certainly refused this send, it waits once (rs.refused's back-off
// for the latter), reads it again, and then uses what it gets.
func (p *Producer) resolve(ctx context.Context, out *outgoing, last *attemptResult, rs *sendRetry) (Queue, string, *publishInfo, error) {
	var info *publishInfo
	var err error
	if last == nil {
		info, err = p.core.routes.get(ctx, out.topic)
	} else {
		info, err = p.core.routes.refresh(ctx, out.topic)
	}
	waitedForAddr := false
	for {
		if err != nil {
			return Queue{}, "", nil, err
		}
		q, addr, perr := p.pick(info, out, last, rs.pin)
		refused := perr == nil && rs.tried[addr]
		sameAsFailed := perr == nil && last != nil && last.transport && addr == last.Addr
		bo := &rs.route
		switch {
		case errors.Is(perr, errNoLeader):
		case (refused || sameAsFailed) && !waitedForAddr:
			waitedForAddr = true
			if refused {
				bo = &rs.refused
			}
		case perr != nil:
			return Queue{}, "", nil, perr
		default:
			return q, addr, info, nil
		}
		if werr := bo.wait(ctx); werr != nil {
			if errors.Is(perr, errNoLeader) {
				return Queue{}, "", nil, fmt.Errorf("%w: topic %s: no leader for its queue(s) before the send timed out: %w",
					ErrNoRoute, out.topic, werr)
			}
			return Queue{}, "", nil, werr
		}
		info, err = p.core.routes.refresh(ctx, out.topic)
	}
}

// pick chooses the queue of the next attempt and its group's leader:
// pin when set (sendRetry.pin), else the selector's queue of an ordered
// send, else the next in turn.
//
// A half message whose attempt had an unknown outcome may be stored in
// that group: the group decides every copy of one transaction once (its
// leader keeps each transaction's latest copy by UNIQ_KEY), but another
// group would hold a copy of its own, checked back and committed on its
// own, so the transaction could be delivered twice. So every later attempt
// goes to the same queue: all copies lie in the group the transaction is
// ended on, and name one queue.
func (p *Producer) pick(info *publishInfo, out *outgoing, last *attemptResult, pin *Queue) (Queue, string, error) {
	if len(info.all) == 0 {
		return Queue{}, "", fmt.Errorf("%w: topic %s has no writable queue", ErrNoRoute, out.topic)
	}
	if pin != nil {
		addr, ok := info.leaders[pin.BrokerName]
		if !ok {
			return Queue{}, "", errNoLeader
		}
		return *pin, addr, nil
	}
	if out.ordered {
		sel := p.opts.selector
		if sel == nil {
			sel = HashSelector()
		}
		q := sel.Select(out.msg, slices.Clip(info.all))
		if !slices.Contains(info.all, q) {
			return Queue{}, "", fmt.Errorf("%w: the queue selector chose %v, which the route of %s does not have", ErrInvalidMessage, q, out.topic)
		}
		addr, ok := info.leaders[q.BrokerName]
		if !ok {
			return Queue{}, "", errNoLeader
		}
		return q, addr, nil
	}
	if len(info.queues) == 0 {
		return Queue{}, "", errNoLeader
	}
	q := p.roundRobin(info, last)
	return q, info.leaders[q.BrokerName], nil
}

// roundRobin is RocketMQ's selectOneMessageQueue: the next queue in turn,
// skipping the group of the failed last attempt when another group has a
// leader, and, with latency fault tolerance, skipping groups the fault
// table avoids; when it avoids them all, the one that will be available
// first.
func (p *Producer) roundRobin(info *publishInfo, last *attemptResult) Queue {
	qs := info.queues
	n := uint32(len(qs))
	start := info.next.Add(1)
	avoid := ""
	if last != nil && len(info.leaders) > 1 {
		avoid = last.Queue.BrokerName
	}
	if p.opts.latencyFault {
		for i := range n {
			q := qs[(start+i)%n]
			if q.BrokerName != avoid && p.core.faults.available(q.BrokerName, info.leaders[q.BrokerName]) {
				return q
			}
		}
		names := slices.DeleteFunc(info.brokerNames(), func(b string) bool { return b == avoid })
		if b := p.core.faults.leastBad(names, info.leaders); b != "" {
			for i := range n {
				if q := qs[(start+i)%n]; q.BrokerName == b {
					return q
				}
			}
		}
	}
	for i := range n {
		if q := qs[(start+i)%n]; q.BrokerName != avoid {
			return q
		}
	}
	return qs[start%n]
}

// attempt sends out to q at addr once.
func (p *Producer) attempt(ctx context.Context, out *outgoing, kind sendKind, q Queue, addr string) attemptResult {
	start := time.Now() // the one clock reading for the checks, the start and the latency
	r := attemptResult{Attempt: Attempt{Queue: q, Addr: addr, Start: start}}
	if err := errAt(ctx, start); err != nil {
		// Nothing was written.
		r.Outcome, r.Err = OutcomeFailed, err
		return r
	}
	sr := out.request(q)
	defer sr.release() // the response does not refer to the request
	req := &sr.cmd
	if kind == kindOneway {
		err := p.core.rc.InvokeOneway(ctx, addr, req)
		r.Latency = time.Since(start)
		if err != nil {
			r.Outcome, r.retry, r.transport, r.certain = classifyTransport(err)
			r.Err = err
		}
		return r
	}
	cctx, copts := callContext(ctx)
	copts.ExtList = true // read by decodeSendResponse
	resp, err := p.core.rc.InvokeWith(cctx, addr, req, copts)
	r.Latency = time.Since(start)
	p.answered(out, &r, resp, err)
	return r
}

// answered completes r, an attempt of out, with what its call returned.
func (p *Producer) answered(out *outgoing, r *attemptResult, resp *remoting.Command, err error) {
	if err != nil {
		r.Outcome, r.retry, r.transport, r.certain = classifyTransport(err)
		r.Err = err
		return
	}
	cls := classifyCode(resp.Code, resp.Remark)
	r.Outcome, r.retry, r.certain = cls.outcome, cls.retry, cls.certain
	if cls.outcome != OutcomeOK {
		r.Err = &BrokerError{Code: resp.Code, Remark: resp.Remark, Addr: r.Addr}
		return
	}
	var h protocol.SendMessageResponseHeader
	if err := decodeSendResponse(resp, &h); err != nil {
		// Stored, says the code, but we cannot tell where: report the
		// outcome as unknown rather than invent a result, and do not retry.
		r.Outcome, r.retry = OutcomeUnknown, false
		r.Err = fmt.Errorf("client: broker %s acknowledged the send with a malformed header: %w", r.Addr, err)
		return
	}
	offIDs := offsetMsgIDs(&h, &out.offID)
	r.result = SendResult{
		Status:        cls.status,
		MsgID:         out.ids[0],
		MsgIDs:        out.ids,
		OffsetMsgIDs:  offIDs,
		Queue:         Queue{Topic: out.topic, BrokerName: r.Queue.BrokerName, QueueID: h.QueueID},
		QueueOffset:   h.QueueOffset,
		TransactionID: h.TransactionID,
		Region:        h.Region,
		Addr:          r.Addr,
		Duplicate:     h.Duplicate,
		DedupWindow:   dedupWindow(h.DedupWindowMs),
		started:       r.Start,
	}
	if len(offIDs) > 0 {
		r.result.OffsetMsgID = offIDs[0]
	}
}

// dedupWindow is a send answer's DedupWindowMs as a duration: none when
// not positive, the longest duration when too long for one.
func dedupWindow(ms int64) time.Duration {
	switch {
	case ms <= 0:
		return 0
	case ms > math.MaxInt64/int64(time.Millisecond):
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// backoff is a doubling wait, capped at max (maxBackoff when 0).
type backoff struct {
	next, max time.Duration
	// leaveRoom: when ctx's deadline leaves less than the wait and as
	// long again for the attempt after it, give up at once with
	// context.DeadlineExceeded. A send attempt started that close to its
	// deadline would likely time out in flight and turn a certain
	// failure into an unknown outcome.
	leaveRoom bool
}

// wait sleeps for the next backoff, or until ctx ends (its error).
func (b *backoff) wait(ctx context.Context) error {
	d := b.next
	b.next = min(2*b.next, cmp.Or(b.max, maxBackoff))
	if dl, ok := ctx.Deadline(); ok && b.leaveRoom {
		if left := time.Until(dl); left < 2*d {
			return fmt.Errorf("%w: %v of the send timeout left, too little to wait %v and try again",
				context.DeadlineExceeded, left.Round(time.Millisecond), d)
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
