package client

import (
	"context"
	"errors"
	"time"

	"github.com/ledgermq/ledgermq/remoting"
)

// SendFunc sends m as Send does and calls f once with what Send would
// have returned, without a goroutine waiting for the answer. It is for a
// caller that keeps many sends in flight and does little with each
// result: a send answered at its first attempt starts no goroutine and
// parks none, and the frames of the sends started together leave in one
// write.
//
// SendFunc returns once the send's first request is queued on its
// connection; it never waits. f runs on the goroutine that ends the
// send: for a send settled by its first attempt, the connection's read
// goroutine (or the goroutine ending the call: its deadline, its
// connection's close, ctx's end), so f must return quickly and must not
// block; it may call SendFunc again, but not Close. A send whose topic
// has no route read yet, whose broker is not connected yet, that is
// retried, or that a trace records (WithTrace) goes on, or is made, on a
// goroutine of its own, as SendAsync's, and f runs there. Retries,
// outcomes and the bound of ctx and the send timeout are Send's.
//
// m, its body included, must not change until f is called. SendFunc
// returns an error, and never calls f, when m is invalid or the producer
// is closed. It takes no WithMaxAsyncInFlight slot: the caller bounds its
// sends in flight. Close waits for the sends in progress and their calls
// of f.
func (p *Producer) SendFunc(ctx context.Context, m *Message, f func(SendResult, error)) error {
	out, err := p.prepare(m)
	if err != nil {
		return err
	}
	if err := p.begin(out.topic); err != nil {
		return err
	}
	out.fn = f
	if p.tracer != nil {
		go func() {
			res, err := p.deliver(ctx, out, kindSync)
			p.finishFunc(out, res, err)
		}()
		return nil
	}
	out.loop.init(p, ctx, out)
	info := p.core.routes.ready(out.topic)
	if info == nil {
		go p.loopFunc(out, false) // reads the route
		return nil
	}
	q, addr, err := p.pick(info, out, nil, nil)
	if err != nil {
		go p.loopFunc(out, false) // waits for a leader, or fails as Send does
		return nil
	}
	out.first = target{q: q, addr: addr, info: info}
	p.attemptFunc(out)
	return nil
}

// attemptFunc makes out's first attempt, to out.first, with
// remoting.Client.InvokeFunc, whose callback settles it (answeredFunc).
// When the call cannot be made so, the attempt is made, and the send goes
// on, on a goroutine: to dial the broker, or to settle an attempt that
// failed before it was written.
func (p *Producer) attemptFunc(out *outgoing) {
	t := out.first
	out.attemptStart = time.Now()
	if errAt(out.loop.ctx, out.attemptStart) != nil {
		go p.loopFunc(out, true) // the attempt fails as Send's would
		return
	}
	sr := out.request(t.q)
	cctx, copts := callContext(out.loop.ctx)
	copts.ExtList = true // read by decodeSendResponse
	err := p.core.rc.InvokeFunc(cctx, t.addr, &sr.cmd, copts, func(resp *remoting.Command, err error) {
		p.answeredFunc(out, resp, err)
	})
	sr.release() // encoded into its frame already
	switch {
	case err == nil:
	case errors.Is(err, remoting.ErrNotConnected):
		go p.loopFunc(out, true) // that attempt dials
	default:
		// Refused before anything was written (the connection closed,
		// the frame too large): the attempt failed as Send's would have.
		go p.answeredFunc(out, nil, err)
	}
}

// answeredFunc settles out's first attempt with what its call ended
// with, and ends the send, or goes on with it on a goroutine of its own
// when it is to be retried.
func (p *Producer) answeredFunc(out *outgoing, resp *remoting.Command, err error) {
	t := out.first
	r := attemptResult{Attempt: Attempt{Queue: t.q, Addr: t.addr, Start: out.attemptStart,
		Latency: time.Since(out.attemptStart)}}
	p.answered(out, &r, resp, err)
	res, done, err := p.settle(out, t.info, &r)
	if done {
		p.finishFunc(out, res, err)
		return
	}
	go p.loopFunc(out, false)
}

// loopFunc runs the rest of out's send, from its first attempt to
// out.first when first is set, else from the resolve of its next, and
// ends it.
func (p *Producer) loopFunc(out *outgoing, first bool) {
	var t *target
	if first {
		t = &out.first
	}
	res, err := p.runLoop(out, kindSync, t)
	p.finishFunc(out, res, err)
}

// finishFunc ends a SendFunc's send with its outcome: the send timeout's
// timer, if one was armed, stops; f gets the outcome; the send leaves the
// producer's count.
func (p *Producer) finishFunc(out *outgoing, res SendResult, err error) {
	out.loop.sctx.stop()
	out.fn(res, err)
	p.sends.leave()
}
