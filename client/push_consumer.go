package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/remoting"
)

// ConsumeResult is what a MessageHandler says of a message.
type ConsumeResult int

const (
	// ConsumeSuccess: consumed; its offset may be committed.
	ConsumeSuccess ConsumeResult = iota
	// ConsumeRetryLater: not consumed. In clustering mode the message is
	// sent back to the broker and comes again through the group's
	// %RETRY% topic after its delay level, with ReconsumeTimes one
	// higher, until the broker moves it to the dead-letter topic. In
	// broadcasting mode it is dropped (as RocketMQ does).
	ConsumeRetryLater
)

// MessageHandler consumes one message. It runs on the consumer's worker
// pool, concurrently with other messages (of the same queue too, unless
// the consumer is orderly: WithConsumeOrderly), and must be safe for that. ctx ends when the consumer closes. A panic is
// recovered and counts as ConsumeRetryLater.
type MessageHandler func(ctx context.Context, msg *MessageExt) ConsumeResult

// subscription is one topic a push consumer reads, and its handler.
type subscription struct {
	topic   string
	sel     Selector
	handler MessageHandler
	retry   bool // the group's %RETRY% topic, subscribed automatically
}

// PushConsumer is a member of a consumer group that calls a handler for
// every message of the topics it subscribes to (RocketMQ's
// DefaultMQPushConsumer, concurrent consumption).
//
// In clustering mode (the default) the group's members share the queues
// of every topic: each rebalance (on Start, every WithRebalanceInterval,
// and at once when a broker says the members changed) reads the members
// from a broker (38) and takes this member's share (WithAllocateStrategy).
// Offsets are committed to the brokers every WithCommitInterval and on
// Close: per queue, the lowest offset not yet consumed, so a restart never
// skips a message (it may redeliver some). In broadcasting mode every
// member takes every queue and keeps its offsets in memory.
//
// Each queue held has a process queue and a pull loop that long-polls
// it; a queue with more than WithQueueLimits cached is not pulled until
// its consumption catches up. Messages go to a pool of
// WithConsumeGoroutines workers.
//
// Goroutines, all ended when Close returns: the heartbeat, rebalance and
// commit loops; one pull loop per queue held; the workers; one
// goroutine per message waiting to be consumed again after its send-back
// failed; and the core's (route refresh, remoting).
type PushConsumer struct {
	*consumerBase
	tracer  *tracer // WithTrace (trace.go); nil: no traces
	ctx     context.Context
	cancel  context.CancelFunc
	loops   sync.WaitGroup // heartbeat, rebalance, commit, pull loops
	workers sync.WaitGroup // workers and local retries
	work    chan consumeTask
	// workMu guards sends of workers on work against its close (yieldOrderly).
	workMu     sync.RWMutex
	workClosed bool
	rebalanceC chan struct{}
	subVersion int64

	mu       sync.Mutex
	started  bool
	closed   bool
	closing  bool
	subs     map[string]*subscription
	pqs      map[Queue]*processQueue
	local    map[Queue]int64 // broadcasting: the offsets, kept in memory
	lastDone map[Queue]int64 // clustering: the offsets last committed
}

// consumeTask is one message for the workers, or (msg nil) an orderly
// queue whose messages the worker handles in turn.
type consumeTask struct {
	pq  *processQueue
	msg *MessageExt
}

// NewPushConsumer returns a push consumer of group (WithGroup; default
// DEFAULT_CONSUMER). Subscribe, then Start.
func NewPushConsumer(opts ...Option) (*PushConsumer, error) {
	rebalanceC := make(chan struct{}, 1)
	opts = append(slices.Clip(opts), func(o *options) {
		o.onRequest = remoting.HandlerFunc(func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
			if req.Code == remoting.NotifyConsumerIdsChanged {
				select {
				case rebalanceC <- struct{}{}:
				default:
				}
			}
			return nil
		})
	})
	o, err := consumerOptionsFrom(opts)
	if err != nil {
		return nil, err
	}
	var tr *tracer
	if o.traceTopic != "" {
		if tr, err = newTracer(o); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &PushConsumer{
		consumerBase: newConsumerBase(o),
		tracer:       tr,
		ctx:          ctx,
		cancel:       cancel,
		work:         make(chan consumeTask, o.consumer.goroutines),
		rebalanceC:   rebalanceC,
		subVersion:   time.Now().UnixNano(),
		subs:         map[string]*subscription{},
		pqs:          map[Queue]*processQueue{},
		local:        map[Queue]int64{},
		lastDone:     map[Queue]int64{},
	}, nil
}

// Subscribe makes the consumer read topic's messages that sel matches
// and hand them to h. It must be called before Start. In clustering mode
// the group's retry topic is subscribed too; a retried message goes to
// the handler of its original topic.
func (c *PushConsumer) Subscribe(topic string, sel Selector, h MessageHandler) error {
	if err := validateTopic(topic); err != nil {
		return fmt.Errorf("client: subscribe: %w", err)
	}
	if h == nil {
		return fmt.Errorf("%w: subscribe %s with a nil handler", ErrConfig, topic)
	}
	if sel.Type != TAG && sel.Type != SQL92 {
		return fmt.Errorf("%w: selector type %d", ErrConfig, int(sel.Type))
	}
	if sel.Type == SQL92 && sel.expression() == "" {
		return fmt.Errorf("%w: empty SQL92 expression", ErrConfig)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started || c.closed {
		return fmt.Errorf("%w: subscribe after Start", ErrConfig)
	}
	c.subs[topic] = &subscription{topic: topic, sel: sel, handler: h}
	if c.opts.consumer.model == Clustering {
		rt := retryTopicPrefix + c.opts.group
		c.subs[rt] = &subscription{topic: rt, handler: h, retry: true}
	}
	return nil
}

// subscriptions returns the subscriptions sorted by topic.
func (c *PushConsumer) subscriptions() []*subscription {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Collect(maps.Values(c.subs))
	slices.SortFunc(out, func(a, b *subscription) int { return compareQueues(Queue{Topic: a.topic}, Queue{Topic: b.topic}) })
	return out
}

// handlerFor returns the handler of a message: its topic's (the original
// one for a retried message), else the retry subscription's.
func (c *PushConsumer) handlerFor(pq *processQueue, m *MessageExt) MessageHandler {
	if pq.sub.retry {
		c.mu.Lock()
		s := c.subs[m.Topic]
		c.mu.Unlock()
		if s != nil {
			return s.handler
		}
	}
	return pq.sub.handler
}

// Start reads the routes of the subscribed topics (an error if one has
// none; the retry topic may be missing, the broker creates it), sends
// the first heartbeat, runs the first rebalance and starts the loops.
func (c *PushConsumer) Start() error {
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return ErrClosed
	case c.started:
		c.mu.Unlock()
		return fmt.Errorf("%w: started twice", ErrConfig)
	case len(c.subs) == 0:
		c.mu.Unlock()
		return fmt.Errorf("%w: no subscription", ErrConfig)
	}
	c.started = true
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.ctx, 2*brokerCallTimeout)
	defer cancel()
	for _, s := range c.subscriptions() {
		if _, err := c.refreshRoute(ctx, s.topic); err != nil && !s.retry {
			return fmt.Errorf("client: start: %w", err)
		}
	}
	if c.heartbeat(ctx) == 0 {
		c.opts.logger.Warn("no broker accepted the first heartbeat")
	}
	for range c.opts.consumer.goroutines {
		c.workers.Add(1)
		go c.worker()
	}
	c.rebalance(c.ctx)
	if c.needLocks() {
		c.loops.Add(1)
		go c.every(c.opts.consumer.lockRenew, nil, func() { c.renewLocks(c.ctx) })
	}
	c.loops.Add(3)
	go c.every(c.opts.consumer.heartbeatInterval, nil, func() { c.heartbeat(c.ctx) })
	go c.every(c.opts.consumer.rebalanceInterval, c.rebalanceC, func() { c.rebalance(c.ctx) })
	go c.every(c.opts.consumer.commitInterval, nil, func() { c.commitAll(c.ctx) })
	return nil
}

// every runs f every d, and whenever now fires, until Close.
func (c *PushConsumer) every(d time.Duration, now <-chan struct{}, f func()) {
	defer c.loops.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		case <-now:
		}
		f()
	}
}

// Assignment returns the queues the consumer holds whose starting offset
// is known (it is pulling them), sorted.
func (c *PushConsumer) Assignment() []Queue {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Queue
	for q, pq := range c.pqs {
		if pq.position() >= 0 {
			out = append(out, q)
		}
	}
	sortQueues(out)
	return out
}

// ClientID is the consumer's identity in its group ("ip@instance").
func (c *PushConsumer) ClientID() string { return c.clientID }

// rebalance computes this member's queues of every subscribed topic and
// starts or stops their pull loops. A topic whose route or member list
// cannot be read keeps its queues until the next round.
func (c *PushConsumer) rebalance(ctx context.Context) {
	for _, s := range c.subscriptions() {
		if ctx.Err() != nil {
			return
		}
		rctx, cancel := context.WithTimeout(ctx, 2*brokerCallTimeout)
		mine, err := c.allocate(rctx, s)
		cancel()
		if err != nil {
			c.opts.logger.Debug("rebalance skipped a topic", "topic", s.topic, "error", err)
			continue
		}
		c.update(ctx, s, mine)
	}
}

// allocate returns this member's share of s's queues.
func (c *PushConsumer) allocate(ctx context.Context, s *subscription) ([]Queue, error) {
	r, err := c.refreshRoute(ctx, s.topic)
	if err != nil {
		return nil, err
	}
	if c.opts.consumer.model == Broadcasting {
		return r.queues, nil
	}
	ids, err := c.consumerList(ctx, r)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(ids, c.clientID) {
		// The broker has not seen our heartbeat (yet, or since it became
		// the leader): say hello rather than drop every queue.
		c.heartbeat(ctx)
		return nil, fmt.Errorf("client: %s is not among the members %v of %s", c.clientID, ids, c.opts.group)
	}
	return c.opts.consumer.allocate(c.clientID, slices.Clone(r.queues), ids), nil
}

// update makes mine the queues of s.topic the consumer holds: pull loops
// start for the new ones; the ones given away stop and have their
// offsets committed. An orderly clustering member locks mine first: a
// new queue not granted is not taken (the next round tries again), a
// kept one not granted stops being consumed until a renewal grants it;
// the queues given away are unlocked once their handler has returned
// and their offsets are committed.
func (c *PushConsumer) update(ctx context.Context, s *subscription, mine []Queue) {
	keep := map[Queue]bool{}
	for _, q := range mine {
		keep[q] = true
	}
	var granted map[Queue]bool
	if c.needLocks() && len(mine) > 0 {
		granted = c.lockQueues(ctx, mine)
	}
	lockedUntil := c.opts.now().Add(lockLocalExpiry)
	var gone, kept []*processQueue
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	for q, pq := range c.pqs {
		if q.Topic == s.topic && !keep[q] {
			delete(c.pqs, q)
			pq.drop()
			gone = append(gone, pq)
		}
	}
	for _, q := range mine {
		if held := c.pqs[q]; held != nil {
			kept = append(kept, held)
			continue
		}
		var pq *processQueue
		switch {
		case c.needLocks() && !granted[q]:
			c.opts.logger.Debug("queue not locked; not taken this round", "queue", q)
			continue
		case c.opts.consumer.orderly:
			until := lockedUntil
			if !c.needLocks() {
				until = time.Unix(1<<62, 0) // broadcasting: no locks
			}
			pq = newOrderlyQueue(c.ctx, q, s, until)
		default:
			pq = newProcessQueue(c.ctx, q, s)
		}
		c.pqs[q] = pq
		c.loops.Add(1)
		go c.pullLoop(pq)
	}
	c.mu.Unlock()
	if granted != nil {
		c.applyLocks(kept, granted)
	}
	var unlock []Queue
	deadline := time.Now().Add(giveAwayWait)
	for _, pq := range gone {
		<-pq.done
		if pq.orderly {
			// The handler of the queue's current message, if any, returns
			// before the offset is committed and the lock released; one
			// that takes longer is left to a goroutine of its own.
			if !pq.waitHandler(max(0, time.Until(deadline))) {
				c.opts.logger.Info("queue given away; released when its handler returns", "queue", pq.q)
				c.loops.Add(1)
				go c.releaseGivenAway(pq)
				continue
			}
			if c.needLocks() {
				unlock = append(unlock, pq.q)
			}
		}
		c.opts.logger.Info("queue given away", "queue", pq.q)
		c.commitQueue(c.ctx, pq)
	}
	if c.needLocks() && len(unlock) > 0 {
		c.unlockQueues(c.ctx, unlock)
	}
}

// commitQueue commits pq's offset (clustering) or keeps it (broadcasting).
func (c *PushConsumer) commitQueue(ctx context.Context, pq *processQueue) {
	off := pq.commitOffset()
	if off < 0 {
		return
	}
	if c.opts.consumer.model == Broadcasting {
		c.mu.Lock()
		c.local[pq.q] = off
		c.mu.Unlock()
		return
	}
	if err := c.commitOffset(ctx, pq.q, off); err != nil {
		c.opts.logger.Debug("offset commit failed", "queue", pq.q, "offset", off, "error", err)
		return
	}
	c.mu.Lock()
	c.lastDone[pq.q] = off
	c.mu.Unlock()
}

// commitAll commits the offset of every queue held. Unchanged offsets are
// committed again: a commit a dying leader had not yet replicated is
// stored by the next.
func (c *PushConsumer) commitAll(ctx context.Context) {
	c.mu.Lock()
	pqs := slices.Collect(maps.Values(c.pqs))
	c.mu.Unlock()
	for _, pq := range pqs {
		c.commitQueue(ctx, pq)
	}
}

// Close stops the loops and pulls, waits for the handlers running (the
// messages not yet handed to one stay uncommitted and come again),
// commits the offsets, tells the brokers the member left, and closes the
// connections. Closing twice is a no-op.
func (c *PushConsumer) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed, c.closing = true, true
	started := c.started
	pqs := slices.Collect(maps.Values(c.pqs))
	c.mu.Unlock()
	c.cancel()
	c.loops.Wait()
	c.workMu.Lock()
	c.workClosed = true
	close(c.work)
	c.workMu.Unlock()
	c.workers.Wait()
	if started {
		ctx, cancel := context.WithTimeout(context.Background(), 2*brokerCallTimeout)
		defer cancel()
		if c.opts.consumer.model == Clustering {
			var errs []error
			for _, pq := range pqs {
				if off := pq.commitOffset(); off >= 0 {
					if err := c.commitOffset(ctx, pq.q, off); err != nil {
						errs = append(errs, err)
					}
				}
			}
			if err := errors.Join(errs...); err != nil {
				c.opts.logger.Warn("offsets not committed on close", "error", err)
			}
			if c.needLocks() && len(pqs) > 0 {
				qs := make([]Queue, 0, len(pqs))
				for _, pq := range pqs {
					qs = append(qs, pq.q)
				}
				c.unlockQueues(ctx, qs)
			}
		}
		c.unregister(ctx)
	}
	if c.tracer != nil {
		c.tracer.close()
	}
	c.core.close()
	return nil
}
