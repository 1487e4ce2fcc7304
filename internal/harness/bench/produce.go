package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/remoting"
)

// Sender is the part of *client.Producer a producer of the run uses.
type Sender interface {
	Send(ctx context.Context, m *client.Message) (client.SendResult, error)
	Close() error
}

// ProduceConfig is one produce run.
type ProduceConfig struct {
	Topic string
	// Producers are separate clients (each its own connections); Inflight
	// the sends each keeps outstanding.
	Producers, Inflight int
	// Size is each body's length in bytes (at least HeaderLen).
	Size int
	// The run ends after Count sends, or Duration, whichever is set (both:
	// the first reached).
	Count    int64
	Duration time.Duration
	// Rate, when > 0, is the open-loop target in sends per second over all
	// producers: send i is due at start + i/Rate and its latency counts
	// from then.
	Rate float64
	// SendTimeout bounds each send (0: the client's default).
	SendTimeout time.Duration
	// NewSender makes producer number i.
	NewSender func(i int) (Sender, error)
	// Report, if set, gets each second's figures, from the reporter
	// goroutine.
	Report func(Interval)
	// Keep records every send for Verify (memory grows with the count):
	// each message then carries KeyOf(RunID, producer, seq) as its KEYS.
	Keep  bool
	RunID string
	// Clock is time.Now unless set (tests).
	Clock func() time.Time
}

// Result is a produce run's summary and, with Keep, every send.
type Result struct {
	Summary Summary
	Sent    []Sent
	// Errors counts the failed and unknown sends by error text (at most
	// maxErrorKinds kinds; the rest under "other").
	Errors map[string]int64
	// Refused counts the sends a broker refused with NO_PERMISSION (its
	// ACL is on and the run's credentials, if any, may not PUB the
	// topic); RefusedRemark is the first refusal's remark.
	Refused       int64
	RefusedRemark string
}

// maxErrorKinds bounds Result.Errors.
const maxErrorKinds = 16

// HeaderLen is the length of the header every body starts with: the
// producer number (uint32), the send's sequence number within the run
// (uint64) and a magic (uint32), big-endian. Consume mode reads it back.
const HeaderLen = 16

// bodyMagic marks a bench body.
const bodyMagic = 0x4C4D5142 // "LMQB"

// EncodeHeader writes the header of send seq of producer p into body.
func EncodeHeader(body []byte, p uint32, seq uint64) {
	binary.BigEndian.PutUint32(body[0:4], p)
	binary.BigEndian.PutUint64(body[4:12], seq)
	binary.BigEndian.PutUint32(body[12:16], bodyMagic)
}

// DecodeHeader reads a bench body's header; ok is false for a body that
// does not carry one.
func DecodeHeader(body []byte) (p uint32, seq uint64, ok bool) {
	if len(body) < HeaderLen || binary.BigEndian.Uint32(body[12:16]) != bodyMagic {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(body[0:4]), binary.BigEndian.Uint64(body[4:12]), true
}

func (c *ProduceConfig) validate() error {
	switch {
	case c.Topic == "":
		return errors.New("bench: no topic")
	case c.Producers < 1 || c.Inflight < 1:
		return fmt.Errorf("bench: producers %d and inflight %d must be at least 1", c.Producers, c.Inflight)
	case c.Size < HeaderLen:
		return fmt.Errorf("bench: size %d: at least %d bytes", c.Size, HeaderLen)
	case c.Count <= 0 && c.Duration <= 0:
		return errors.New("bench: give a count or a duration")
	case c.Rate < 0:
		return fmt.Errorf("bench: rate %v < 0", c.Rate)
	case c.NewSender == nil:
		return errors.New("bench: no sender")
	}
	return nil
}

// Produce runs the load until Count sends were made or Duration passed
// (or ctx ends), waits for the sends in flight and returns the summary.
func Produce(ctx context.Context, cfg ProduceConfig) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	senders := make([]Sender, 0, cfg.Producers)
	defer func() {
		for _, s := range senders {
			_ = s.Close()
		}
	}()
	for i := 0; i < cfg.Producers; i++ {
		s, err := cfg.NewSender(i)
		if err != nil {
			return Result{}, fmt.Errorf("bench: producer %d: %w", i, err)
		}
		senders = append(senders, s)
	}
	start := cfg.Clock()
	rec := NewRecorder(start)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithDeadline(runCtx, start.Add(cfg.Duration))
		defer cancel()
	}
	r := &run{cfg: cfg, start: start, runCtx: runCtx, rec: rec, errs: map[string]int64{}}
	var wg sync.WaitGroup
	for p, s := range senders {
		if fs, ok := s.(FuncSender); ok && cfg.Rate <= 0 {
			r.startSlots(ctx, &wg, uint32(p), fs)
			continue
		}
		for w := 0; w < cfg.Inflight; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.worker(ctx, uint32(p), s)
			}()
		}
	}
	reporterDone := make(chan struct{})
	sendsDone := make(chan struct{})
	go func() {
		defer close(reporterDone)
		report(sendsDone, cfg, rec, start)
	}()
	wg.Wait()
	close(sendsDone)
	<-reporterDone
	return Result{Summary: rec.Finish(cfg.Clock()), Sent: r.kept, Errors: r.errs, Refused: r.refused, RefusedRemark: r.refusedRemark}, nil
}

// run is a produce run's shared state.
type run struct {
	cfg    ProduceConfig
	start  time.Time
	runCtx context.Context // ends when the run is over
	rec    *Recorder
	next   atomic.Int64 // the next send's number, over all producers

	errMu         sync.Mutex
	errs          map[string]int64
	refused       int64
	refusedRemark string

	keptMu sync.Mutex
	kept   []Sent
}

// take numbers the next send of producer p, ready in m (its header, and
// with Keep its key), and returns when it is due; ok is false once the run
// is over.
func (r *run) take(p uint32, m *client.Message) (due time.Time, ok bool) {
	seq := r.next.Add(1) - 1
	if r.cfg.Count > 0 && seq >= r.cfg.Count {
		return time.Time{}, false
	}
	due, ok = dueTime(r.runCtx, r.cfg, r.start, seq)
	if !ok {
		return time.Time{}, false
	}
	EncodeHeader(m.Body, p, uint64(seq))
	if r.cfg.Keep {
		m.Keys = []string{KeyOf(r.cfg.RunID, p, uint64(seq))}
	}
	return due, true
}

// sendCtx is the context of one send under ctx: with the run's own send
// timeout, if it has one.
func (r *run) sendCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.cfg.SendTimeout > 0 {
		return context.WithTimeout(ctx, r.cfg.SendTimeout)
	}
	return ctx, func() {}
}

// settled records a send of m that was due at due and ended at done.
func (r *run) settled(m *client.Message, due, done time.Time, res client.SendResult, err error) {
	o := outcomeOf(err)
	r.rec.Record(due, done, o, r.cfg.Size)
	if err != nil {
		r.errMu.Lock()
		k := err.Error()
		if _, ok := r.errs[k]; !ok && len(r.errs) >= maxErrorKinds {
			k = "other"
		}
		r.errs[k]++
		if remark, ok := refusal(err); ok {
			if r.refused == 0 {
				r.refusedRemark = remark
			}
			r.refused++
		}
		r.errMu.Unlock()
	}
	if r.cfg.Keep {
		r.keptMu.Lock()
		r.kept = append(r.kept, Sent{Key: m.Keys[0], Outcome: o, MaybeDuplicated: res.MaybeDuplicated(),
			Broker: res.Queue.BrokerName, OffsetMsgID: res.OffsetMsgID})
		r.keptMu.Unlock()
	}
}

// worker keeps one send of producer p in flight, one Send after the
// other, until the run is over.
func (r *run) worker(ctx context.Context, p uint32, s Sender) {
	// Each worker's sends derive from a context of its own, so the
	// per-send timeouts do not all register with (and contend for) the
	// run's context.
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	// The client never modifies a message, so one serves every send of
	// this worker.
	m := &client.Message{Topic: r.cfg.Topic, Body: make([]byte, r.cfg.Size)}
	for {
		due, ok := r.take(p, m)
		if !ok {
			return
		}
		sctx, cancel := r.sendCtx(wctx)
		res, err := s.Send(sctx, m)
		cancel()
		r.settled(m, due, r.cfg.Clock(), res, err)
	}
}

// FuncSender is a Sender that can also send without a goroutine waiting
// for each answer (client.Producer.SendFunc): f gets what Send would have
// returned, on the goroutine that ends the send, and must not block. A
// closed-loop run keeps its sends in flight with it.
type FuncSender interface {
	Sender
	SendFunc(ctx context.Context, m *client.Message, f func(client.SendResult, error)) error
}

// slot is one send of a producer kept in flight through SendFunc: each
// send's callback records it and makes the next, until the run is over.
// A slot's fields are its current send's; one is in flight at a time.
type slot struct {
	r      *run
	p      uint32
	s      FuncSender
	ctx    context.Context
	m      *client.Message // the client does not modify it
	due    time.Time
	cancel context.CancelFunc
	done   func(client.SendResult, error) // s.settle, made once
	wg     *sync.WaitGroup
}

// startSlots starts the Inflight slots of producer p, whose sends share
// one context under ctx: a connection watches it once for all of them.
func (r *run) startSlots(ctx context.Context, wg *sync.WaitGroup, p uint32, s FuncSender) {
	pctx, cancel := context.WithCancel(ctx)
	var slots sync.WaitGroup
	slots.Add(r.cfg.Inflight)
	wg.Add(1)
	go func() { // releases the producer's context once its slots are over
		defer wg.Done()
		slots.Wait()
		cancel()
	}()
	for range r.cfg.Inflight {
		sl := &slot{r: r, p: p, s: s, ctx: pctx, wg: &slots,
			m: &client.Message{Topic: r.cfg.Topic, Body: make([]byte, r.cfg.Size)}}
		sl.done = sl.settle
		sl.send()
	}
}

// send makes the slot's next send, or ends the slot once the run is
// over. A send refused at once is recorded as Send's error would be.
func (sl *slot) send() {
	r := sl.r
	for {
		due, ok := r.take(sl.p, sl.m)
		if !ok {
			sl.wg.Done()
			return
		}
		sl.due = due
		var sctx context.Context
		sctx, sl.cancel = r.sendCtx(sl.ctx)
		err := sl.s.SendFunc(sctx, sl.m, sl.done)
		if err == nil {
			return
		}
		sl.cancel()
		r.settled(sl.m, due, r.cfg.Clock(), client.SendResult{}, err)
	}
}

// settle is the callback of the slot's send.
func (sl *slot) settle(res client.SendResult, err error) {
	done := sl.r.cfg.Clock()
	sl.cancel()
	sl.r.settled(sl.m, sl.due, done, res, err)
	sl.send()
}

// refusal reports whether err is a broker's NO_PERMISSION answer, and its
// remark.
func refusal(err error) (string, bool) {
	var be *client.BrokerError
	if errors.As(err, &be) && be.Code == remoting.NoPermission {
		return be.Remark, true
	}
	var ce *remoting.CodeError
	if errors.As(err, &ce) && ce.Code == remoting.NoPermission {
		return ce.Remark, true
	}
	return "", false
}

// dueTime is when send seq should start: now in a closed loop, or
// start + seq/Rate (waiting for it) in an open loop. ok is false once the
// run is over.
func dueTime(ctx context.Context, cfg ProduceConfig, start time.Time, seq int64) (time.Time, bool) {
	if ctx.Err() != nil {
		return time.Time{}, false
	}
	if cfg.Rate <= 0 {
		return cfg.Clock(), true
	}
	due := start.Add(time.Duration(float64(seq) / cfg.Rate * float64(time.Second)))
	if wait := due.Sub(cfg.Clock()); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return time.Time{}, false
		case <-t.C:
		}
	}
	return due, true
}

// outcomeOf classifies a send's error.
func outcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return OK
	case errors.Is(err, client.ErrUnknownOutcome):
		return Unknown
	}
	return Failed
}

// report calls cfg.Report every second until done closes.
func report(done <-chan struct{}, cfg ProduceConfig, rec *Recorder, start time.Time) {
	if cfg.Report == nil {
		<-done
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	last := start
	for {
		select {
		case <-done:
			return
		case <-t.C:
			now := cfg.Clock()
			cfg.Report(rec.TakeInterval(last, now))
			last = now
		}
	}
}
