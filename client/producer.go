package client

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// retryTopicPrefix starts the retry topics of consumer groups.
const retryTopicPrefix = "%RETRY%"

// Producer sends messages to the broker groups that serve their topics,
// re-reading a topic's route at once when a send to it fails (see the
// package documentation for the send path and its outcomes). All methods
// are safe for concurrent use.
type Producer struct {
	opts  options
	core  *core
	async chan struct{} // one token per SendAsync in progress

	mu     sync.Mutex
	closed bool
	sends  sendGate // sends in progress, sync and async

	replies replies // request-reply (request.go)
	tracer  *tracer // WithTrace (trace.go); nil: no traces
}

// NewProducer returns a producer configured by opts; WithNameServers is
// required. It dials nothing until the first send, and starts the
// background route refresh, which Close stops.
func NewProducer(opts ...Option) (*Producer, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	p := &Producer{async: make(chan struct{}, o.maxAsync), replies: replies{waiting: map[string]chan *MessageExt{}}}
	p.sends.drained = make(chan struct{})
	// Replies to this producer's requests come as broker requests; other
	// broker requests go to the handler the options set (a transaction
	// producer's check-backs).
	inner := o.onRequest
	o.onRequest = remoting.HandlerFunc(func(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
		if req.Code == remoting.PushReplyMessageToClient {
			return p.serveReply(ctx, conn, req)
		}
		if inner != nil {
			return inner.Serve(ctx, conn, req)
		}
		return nil
	})
	p.opts, p.core = o, newCore(o)
	if o.traceTopic != "" {
		t, err := newTracer(o)
		if err != nil {
			p.core.close()
			return nil, err
		}
		p.tracer = t
	}
	return p, nil
}

// Send sends m and waits for the broker's answer, retrying (WithRetries)
// after a retryable failure, each time on a route read again from the
// name servers. The error, when there is one, is a *SendError that
// matches ErrSendFailed (certainly not stored) or ErrUnknownOutcome (may
// have been stored); a SendResult whose MaybeDuplicated is true was
// stored after an earlier attempt whose outcome is unknown, which no
// duplicate window of the broker covered. ctx and the
// send timeout bound the whole send.
func (p *Producer) Send(ctx context.Context, m *Message) (SendResult, error) {
	out, err := p.prepare(m)
	if err != nil {
		return SendResult{}, err
	}
	if err := p.begin(out.topic); err != nil {
		return SendResult{}, err
	}
	defer p.sends.leave()
	return p.deliver(ctx, out, kindSync)
}

// SendAsync sends m in the background and calls cb once with what Send
// would have returned, on a goroutine of its own; retries and outcomes
// are Send's. It returns an error, and never calls cb, when m is invalid,
// the producer is closed, or ctx ends while it waits for one of the
// WithMaxAsyncInFlight slots. ctx governs the whole send, so it must not
// be cancelled before cb runs. cb must not call Close.
func (p *Producer) SendAsync(ctx context.Context, m *Message, cb func(SendResult, error)) error {
	out, err := p.prepare(m)
	if err != nil {
		return err
	}
	if p.isClosed() {
		return failedError(out.topic, ErrClosed)
	}
	select {
	case p.async <- struct{}{}:
	case <-ctx.Done():
		return failedError(out.topic, fmt.Errorf("client: waiting for an async send slot: %w", ctx.Err()))
	}
	if err := p.begin(out.topic); err != nil {
		<-p.async
		return err
	}
	go func() {
		defer p.sends.leave()
		out.start = time.Now() // not while it waited for its slot
		res, err := p.deliver(ctx, out, kindSync)
		<-p.async
		if cb != nil {
			cb(res, err)
		}
	}()
	return nil
}

// SendOneWay writes m to a broker without waiting for an answer. A nil
// error means the request was handed to a connection: whether it was
// stored is unknown by nature. It is retried only when it could not be
// written (a dial failure; with WithRetryAfterUnknown, also a connection
// lost while writing). Errors are Send's.
func (p *Producer) SendOneWay(ctx context.Context, m *Message) error {
	out, err := p.prepare(m)
	if err != nil {
		return err
	}
	if err := p.begin(out.topic); err != nil {
		return err
	}
	defer p.sends.leave()
	_, err = p.deliver(ctx, out, kindOneway)
	return err
}

// SendBatch sends msgs as one SEND_BATCH_MESSAGE: all to one queue, stored
// together or not at all. They must share a topic and have no DelayLevel;
// the queue is chosen as for msgs[0] (its ShardingKey, if any). Bodies
// are not compressed. Retries and outcomes are Send's; the result has one
// MsgIDs and OffsetMsgIDs item per message, in order.
func (p *Producer) SendBatch(ctx context.Context, msgs []*Message) (SendResult, error) {
	out, err := p.prepareBatch(msgs)
	if err != nil {
		return SendResult{}, err
	}
	if err := p.begin(out.topic); err != nil {
		return SendResult{}, err
	}
	defer p.sends.leave()
	return p.deliver(ctx, out, kindSync)
}

// Close stops new sends (they fail with ErrClosed), waits for the sends
// in progress (each bounded by its context and the send timeout), then
// stops the route refresh and closes every connection. Every goroutine the
// producer started has ended when it returns. Closing twice is a no-op.
func (p *Producer) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.sends.close()
	p.replies.mu.Lock()
	hb := p.replies.hb
	p.replies.mu.Unlock()
	if hb != nil {
		hb.close()
	}
	if p.tracer != nil {
		p.tracer.close()
	}
	p.core.close()
	return nil
}

// begin registers a send, or refuses it after Close.
func (p *Producer) begin(topic string) error {
	if !p.sends.enter() {
		return failedError(topic, ErrClosed)
	}
	return nil
}

func (p *Producer) isClosed() bool { return p.sends.isClosed() }

// sendGate counts the sends in progress and refuses new ones once closed,
// with one atomic add on the way in and one on the way out: no lock that
// every send of the producer would take.
type sendGate struct {
	n       atomic.Int64  // sends in progress, plus gateClosed once closed
	drained chan struct{} // closed once the gate is closed and empty
	once    sync.Once     // closes drained
}

// gateClosed, added to sendGate.n when the gate closes, is far above any
// number of sends in progress.
const gateClosed = int64(1) << 48

// enter registers a send; false when the gate is closed.
func (g *sendGate) enter() bool {
	if g.n.Add(1) >= gateClosed {
		g.leave()
		return false
	}
	return true
}

// leave ends a send that entered.
func (g *sendGate) leave() {
	if g.n.Add(-1) == gateClosed {
		g.once.Do(func() { close(g.drained) })
	}
}

// close refuses every later send and waits for those in progress. It is
// called once.
func (g *sendGate) close() {
	if g.n.Add(gateClosed) == gateClosed {
		g.once.Do(func() { close(g.drained) })
	}
	<-g.drained
}

func (g *sendGate) isClosed() bool { return g.n.Load() >= gateClosed }

// failedError is the error of a send refused before any attempt.
func failedError(topic string, err error) error {
	return &SendError{Topic: topic, Outcome: OutcomeFailed, Err: err}
}

// sendKind says how an attempt waits for the broker.
type sendKind int

const (
	kindSync   sendKind = iota // wait for the answer
	kindOneway                 // write and return
)

// outgoing is a send ready for the wire, but for its queue.
type outgoing struct {
	topic   string
	header  protocol.SendMessageRequestHeader // QueueID and BrokerName set per attempt
	body    []byte
	batch   bool
	reply   bool      // a reply (MSG_TYPE reply): SEND_REPLY_MESSAGE
	ids     []string  // the UNIQ_KEYs, one per message
	msg     *Message  // what a selector sees (a batch's first message)
	ordered bool      // the queue comes from a selector
	id      [1]string // ids' backing array for a single message
	offID   [1]string // the offset message id's of a single message's result
	// start is when the send began, which its timeout counts from: the
	// clock reading its header's born timestamp took, or, for SendAsync,
	// when its goroutine took it up.
	start time.Time
	// sctx is the send's context (withSendTimeout) and loop its attempts'
	// state, in the allocation every send makes anyway. deliver runs once
	// per outgoing.
	sctx sendContext
	loop sendLoop
	// fn receives the outcome of a SendFunc, whose first attempt went to
	// first at attemptStart (sendfunc.go).
	fn           func(SendResult, error)
	first        target
	attemptStart time.Time
}

// half reports whether out is a transaction's half message.
func (out *outgoing) half() bool {
	return protocol.TransactionType(out.header.SysFlag) == protocol.TransactionPrepared
}

// newHeader is the send header of topic with what every send shares,
// born now.
func (p *Producer) newHeader(topic string, now time.Time) protocol.SendMessageRequestHeader {
	return protocol.SendMessageRequestHeader{
		ProducerGroup:         p.opts.group,
		Topic:                 topic,
		DefaultTopic:          protocol.DefaultTopic,
		DefaultTopicQueueNums: protocol.DefaultTopicQueueNums,
		BornTimestamp:         now.UnixMilli(),
	}
}

// prepare validates m and encodes it: properties with a fresh UNIQ_KEY,
// the body compressed when it is large.
func (p *Producer) prepare(m *Message) (*outgoing, error) { return p.prepareWith(m, nil) }

// prepareWith is prepare with extra properties set over m's.
func (p *Producer) prepareWith(m *Message, extra map[string]string) (*outgoing, error) {
	if m == nil {
		return nil, failedError("", fmt.Errorf("%w: nil message", ErrInvalidMessage))
	}
	if err := p.checkBody(m); err != nil {
		return nil, failedError(m.Topic, err)
	}
	ok := false
	uniq := p.core.ids.Next()
	reply := false
	now := time.Now()
	h := p.newHeader(m.Topic, now)
	h.Flag = m.Flag
	if len(extra) == 0 {
		h.Properties, ok = m.systemProperties(uniq)
	}
	if !ok {
		props, err := m.properties(uniq, extra)
		if err != nil {
			return nil, failedError(m.Topic, err)
		}
		h.Properties = string(message.EncodeProperties(props))
		uniq = props[message.PropertyUniqKey]
		reply = props[message.PropertyMessageType] == protocol.ReplyMessageType
	}
	body := m.Body
	if p.opts.compressThreshold > 0 && len(body) >= p.opts.compressThreshold {
		if z, err := compress(body, p.opts.compressLevel); err == nil {
			body = z
			h.SysFlag |= message.SysFlagCompressed
		}
	}
	out := &outgoing{
		topic:   m.Topic,
		header:  h,
		body:    body,
		msg:     m,
		reply:   reply,
		ordered: p.opts.selector != nil || m.ShardingKey != "",
		id:      [1]string{uniq},
		start:   now,
	}
	out.ids = out.id[:]
	return out, nil
}

// prepareBatch validates msgs as one batch and encodes its body.
func (p *Producer) prepareBatch(msgs []*Message) (*outgoing, error) {
	if len(msgs) == 0 || msgs[0] == nil {
		return nil, failedError("", fmt.Errorf("%w: empty batch", ErrInvalidMessage))
	}
	topic := msgs[0].Topic
	if strings.HasPrefix(topic, retryTopicPrefix) {
		return nil, failedError(topic, fmt.Errorf("%w: a batch cannot go to retry topic %s", ErrInvalidMessage, topic))
	}
	items := make([]batchItem, len(msgs))
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		switch {
		case m == nil:
			return nil, failedError(topic, fmt.Errorf("%w: batch message %d is nil", ErrInvalidMessage, i))
		case m.Topic != topic:
			return nil, failedError(topic, fmt.Errorf("%w: batch message %d is for topic %s, the batch for %s", ErrInvalidMessage, i, m.Topic, topic))
		case m.DelayLevel != 0:
			return nil, failedError(topic, fmt.Errorf("%w: batch message %d is delayed; send delayed messages one by one", ErrInvalidMessage, i))
		}
		if err := p.checkBody(m); err != nil {
			return nil, failedError(topic, fmt.Errorf("batch message %d: %w", i, err))
		}
		props, err := m.properties(p.core.ids.Next(), nil)
		if err != nil {
			return nil, failedError(topic, fmt.Errorf("batch message %d: %w", i, err))
		}
		items[i] = batchItem{flag: m.Flag, body: m.Body, props: message.EncodeProperties(props)}
		ids[i] = props[message.PropertyUniqKey]
	}
	if n := batchSize(items); n > p.opts.maxMessageSize {
		return nil, failedError(topic, fmt.Errorf("%w: batch of %d bytes is larger than %d", ErrInvalidMessage, n, p.opts.maxMessageSize))
	}
	now := time.Now()
	h := p.newHeader(topic, now)
	h.Batch = true
	return &outgoing{
		start:   now,
		topic:   topic,
		header:  h,
		body:    encodeBatch(items),
		batch:   true,
		ids:     ids,
		msg:     msgs[0],
		ordered: p.opts.selector != nil || msgs[0].ShardingKey != "",
	}, nil
}

// checkBody checks m's topic and body size.
func (p *Producer) checkBody(m *Message) error {
	if err := validateTopic(m.Topic); err != nil {
		return err
	}
	switch {
	case len(m.Body) == 0:
		return fmt.Errorf("%w: empty body", ErrInvalidMessage)
	case len(m.Body) > p.opts.maxMessageSize:
		return fmt.Errorf("%w: body of %d bytes is larger than %d", ErrInvalidMessage, len(m.Body), p.opts.maxMessageSize)
	}
	return nil
}
