package client

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// Orderly consumption (WithConsumeOrderly). A clustering member locks the
// queues it is allocated on their groups' leaders (LOCK_BATCH_MQ, 41, one
// batch per broker group) and creates a queue's process queue only once
// the lock is granted; the lock renewal (every WithLockRenewInterval, and
// every rebalance for the queues it keeps) grants it again or says it was
// lost. Each process queue keeps its messages in offset order and is
// consumed by at most one worker at a time: the pull loop, or a renewal
// that grants a lost lock again, hands the queue (a consumeTask without a
// message) to the pool when it has messages and no worker owns it; that
// worker handles them one after another until none is left, the queue is
// dropped, or its lock lapses (not granted at the last renewal, or not
// granted for lockLocalExpiry), or it has had the queue for
// WithMaxTimeConsumeContinuously while another queue waits for a worker
// (then the queue goes to the back of the line). A queue given away is
// committed and unlocked once its running handler returns: the rebalance
// waits giveAwayWait for it, then leaves that queue to a goroutine of its
// own and goes on. Broadcasting members take no locks.

// needLocks reports whether the consumer locks its queues.
func (c *PushConsumer) needLocks() bool {
	return c.opts.consumer.orderly && c.opts.consumer.model == Clustering
}

// byBroker groups qs by broker group, in a stable order.
func byBroker(qs []Queue) [][]Queue {
	groups := map[string][]Queue{}
	for _, q := range qs {
		groups[q.BrokerName] = append(groups[q.BrokerName], q)
	}
	names := slices.Sorted(maps.Keys(groups))
	out := make([][]Queue, 0, len(names))
	for _, n := range names {
		out = append(out, groups[n])
	}
	return out
}

func (c *PushConsumer) lockRequest(code int32, qs []Queue) func() *remoting.Command {
	body := protocol.LockBatchBody{ConsumerGroup: c.opts.group, ClientID: c.clientID, MQSet: make([]protocol.MessageQueue, 0, len(qs))}
	for _, q := range qs {
		body.MQSet = append(body.MQSet, protocol.MessageQueue(q))
	}
	b, _ := body.Encode() // cannot fail: strings and numbers only
	return func() *remoting.Command { return remoting.NewRequest(code, nil, b) }
}

// lockQueues asks the leaders to lock qs for this member and returns the
// queues granted. A group that does not answer grants nothing.
func (c *PushConsumer) lockQueues(ctx context.Context, qs []Queue) map[Queue]bool {
	granted := map[Queue]bool{}
	for _, batch := range byBroker(qs) {
		if err := c.lockBatch(ctx, batch, granted); err != nil {
			c.opts.logger.Debug("queue lock failed", "broker", batch[0].BrokerName, "error", err)
		}
	}
	return granted
}

func (c *PushConsumer) lockBatch(ctx context.Context, batch []Queue, granted map[Queue]bool) error {
	ctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
	defer cancel()
	resp, addr, err := c.call(ctx, batch[0], false, c.lockRequest(remoting.LockBatchMQ, batch))
	if err != nil {
		return err
	}
	if resp.Code != remoting.Success {
		return &BrokerError{Code: resp.Code, Remark: resp.Remark, Addr: addr}
	}
	res, err := protocol.DecodeLockBatchResult(resp.Body)
	if err != nil {
		return fmt.Errorf("client: lock answer from %s: %w", addr, err)
	}
	for _, mq := range res.LockOKMQSet {
		granted[Queue(mq)] = true
	}
	return nil
}

// unlockQueues releases qs, best effort (the leases expire anyway).
func (c *PushConsumer) unlockQueues(ctx context.Context, qs []Queue) {
	for _, batch := range byBroker(qs) {
		uctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
		resp, _, err := c.call(uctx, batch[0], false, c.lockRequest(remoting.UnlockBatchMQ, batch))
		cancel()
		if err != nil || resp.Code != remoting.Success {
			c.opts.logger.Debug("queue unlock failed", "broker", batch[0].BrokerName, "error", err, "resp", resp)
		}
	}
}

// applyLocks records the lock answer for pqs and hands the queues that
// are locked and have messages waiting to the workers.
func (c *PushConsumer) applyLocks(pqs []*processQueue, granted map[Queue]bool) {
	now := c.opts.now()
	for _, pq := range pqs {
		if !granted[pq.q] {
			if pq.locked(now) {
				c.opts.logger.Info("queue lock lost", "queue", pq.q)
			}
			pq.setLocked(time.Time{})
			continue
		}
		pq.setLocked(now.Add(lockLocalExpiry))
		c.scheduleOrderly(pq)
	}
}

// renewLocks locks every queue held again (the renewal loop).
func (c *PushConsumer) renewLocks(ctx context.Context) {
	c.mu.Lock()
	pqs := slices.Collect(maps.Values(c.pqs))
	c.mu.Unlock()
	qs := make([]Queue, 0, len(pqs))
	for _, pq := range pqs {
		qs = append(qs, pq.q)
	}
	if len(qs) == 0 {
		return
	}
	c.applyLocks(pqs, c.lockQueues(ctx, qs))
}

// scheduleOrderly hands pq to a worker if it needs one.
func (c *PushConsumer) scheduleOrderly(pq *processQueue) {
	if !pq.schedule(c.opts.now()) {
		return
	}
	select {
	case c.work <- consumeTask{pq: pq}:
	case <-c.ctx.Done():
	}
}

// waitLock waits until pq's lock counts; false if the queue is dropped.
func (c *PushConsumer) waitLock(pq *processQueue) bool {
	for !pq.locked(c.opts.now()) {
		select {
		case <-pq.relock:
		case <-pq.ctx.Done():
			return false
		}
	}
	return true
}

// consumeOrderly is a worker owning pq: it handles the queue's messages
// one at a time, in offset order, until it has none, the queue is
// dropped or its lock lapses, or its time slice is up while another
// queue waits for a worker. It returns the tasks the worker runs next
// (see yieldOrderly).
func (c *PushConsumer) consumeOrderly(pq *processQueue) []consumeTask {
	start := c.opts.now()
	for {
		pq.beginHandler()
		m := pq.nextOrderly(c.opts.now())
		if m == nil {
			pq.endHandler()
			return nil
		}
		c.consumeInOrder(pq, m)
		pq.endHandler()
		if c.opts.now().Sub(start) >= c.opts.consumer.timeSlice {
			if next, yielded := c.yieldOrderly(pq); yielded {
				return next
			}
		}
	}
}

// yieldOrderly lets a task waiting in the work queue go before pq, whose
// worker's time slice is up, and reports whether it did. pq goes to the
// end of the work queue, still scheduled: its ownership passes with the
// task, so no other worker handles it in between and its order holds.
// When the work queue is full (the usual case: something waits), the
// worker takes the first waiting task itself and queues pq in its place;
// if another sender fills that place first, the worker runs the task it
// took and then pq again. A work queue being closed keeps pq with its
// worker.
func (c *PushConsumer) yieldOrderly(pq *processQueue) ([]consumeTask, bool) {
	if len(c.work) == 0 {
		return nil, false
	}
	c.workMu.RLock()
	defer c.workMu.RUnlock()
	if c.workClosed {
		return nil, false
	}
	mine := consumeTask{pq: pq}
	select {
	case c.work <- mine:
		return nil, true
	default:
	}
	var other consumeTask
	select {
	case other = <-c.work:
	default:
		return nil, false
	}
	select {
	case c.work <- mine:
		return []consumeTask{other}, true
	default:
		return []consumeTask{other, mine}, true
	}
}

// releaseGivenAway commits and unlocks orderly queues given away whose
// handler was still running when the rebalance stopped waiting for it,
// once that handler returns. It runs on a goroutine of its own, one of
// the consumer's loops; the broker's lease bounds how long the queue
// stays locked if the handler never returns.
func (c *PushConsumer) releaseGivenAway(pq *processQueue) {
	defer c.loops.Done()
	pq.waitHandler(-1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*brokerCallTimeout)
	defer cancel()
	c.opts.logger.Info("queue given away after its handler returned", "queue", pq.q)
	c.commitQueue(ctx, pq)
	if c.needLocks() {
		c.unlockQueues(ctx, []Queue{pq.q})
	}
}

// consumeInOrder handles m until it is consumed, or the queue is dropped
// or loses its lock (m stays first, for whoever consumes the queue next).
// A ConsumeRetryLater suspends the queue for WithSuspendCurrentQueueTime
// and handles m again, up to WithMaxReconsumeTimes times; then m is sent
// back (clustering; the queue stays suspended while the send-back fails)
// or dropped (broadcasting).
func (c *PushConsumer) consumeInOrder(pq *processQueue, m *MessageExt) {
	co := c.opts.consumer
	for {
		if c.handle(consumeTask{pq: pq, msg: m}) == ConsumeSuccess {
			pq.consumed(m.QueueOffset)
			return
		}
		if int(m.ReconsumeTimes) >= co.maxReconsume {
			if co.model == Broadcasting {
				c.opts.logger.Warn("broadcast message not consumed; dropped", "queue", pq.q, "msg", m.MsgID)
				pq.consumed(m.QueueOffset)
				return
			}
			err := c.sendBackLevel(c.ctx, m, -1)
			if err == nil {
				pq.consumed(m.QueueOffset)
				c.ensureRetryQueue()
				return
			}
			c.opts.logger.Warn("send-back failed; suspending the queue", "queue", pq.q, "msg", m.MsgID, "error", err)
		} else {
			m.ReconsumeTimes++
		}
		if !c.sleep(pq.ctx, co.suspend) || pq.isDropped() || !pq.locked(c.opts.now()) {
			return
		}
	}
}
