package client

import (
	"context"
	"fmt"
	"time"

	"github.com/ledgermq/ledgermq/remoting"
)

// localRetryDelay is how long a failed message whose send-back failed too
// waits before it is consumed again locally (RocketMQ: 5 s).
const localRetryDelay = time.Second

// pullLoop is the goroutine of one queue held: it resolves where to
// start, then long-polls the queue and hands what arrives to the
// workers, pausing while the queue is over its flow-control limits.
func (c *PushConsumer) pullLoop(pq *processQueue) {
	defer c.loops.Done()
	defer close(pq.done)
	co := c.opts.consumer
	off, ok := c.startPosition(pq)
	if !ok {
		return
	}
	pq.setNext(off)
	params := pullParams{sub: pq.sub.sel, tags: pq.sub.sel.tags()}
	if pq.sub.retry {
		params = pullParams{sub: Selector{Expression: "*"}}
	}
	for pq.ctx.Err() == nil {
		if pq.orderly && !c.waitLock(pq) {
			return
		}
		if pq.full(co.queueMaxMsgs, co.queueMaxBytes) {
			// Flow control: wait until a message of the queue is consumed.
			select {
			case <-pq.space:
				continue
			case <-pq.ctx.Done():
				return
			}
		}
		if co.model == Clustering {
			params.commitOffset = pq.commitOffset()
		}
		res, err := c.pull(pq.ctx, pq.q, off, params)
		if err != nil {
			if pq.ctx.Err() != nil {
				return
			}
			c.opts.logger.Debug("pull failed; backing off", "queue", pq.q, "error", err)
			if !c.sleep(pq.ctx, co.pullErrorBackoff) {
				return
			}
			continue
		}
		switch res.code {
		case remoting.Success:
			pq.add(res.msgs, res.next)
			if pq.orderly {
				c.scheduleOrderly(pq)
				break
			}
			for _, m := range res.msgs {
				select {
				case c.work <- consumeTask{pq: pq, msg: m}:
				case <-pq.ctx.Done():
					return
				}
			}
		case remoting.PullOffsetMoved:
			c.opts.logger.Info("pull offset moved", "queue", pq.q, "from", off, "to", res.next)
			pq.setNext(res.next)
		default:
			pq.setNext(res.next)
		}
		off = res.next
	}
}

// startPosition is where pq's pulls start: the committed offset, else
// ConsumeFromWhere's (clustering), or the kept one, else
// ConsumeFromWhere's (broadcasting). It retries until it gets one or the
// queue is dropped.
func (c *PushConsumer) startPosition(pq *processQueue) (int64, bool) {
	for {
		var off int64
		var err error
		if c.opts.consumer.model == Broadcasting {
			c.mu.Lock()
			kept, ok := c.local[pq.q]
			c.mu.Unlock()
			if ok {
				return kept, true
			}
			off, err = c.startOffset(pq.ctx, pq.q)
		} else {
			off, err = c.resumeOffset(pq.ctx, pq.q)
		}
		if err == nil {
			return off, true
		}
		if pq.ctx.Err() != nil {
			return 0, false
		}
		c.opts.logger.Debug("no start offset yet", "queue", pq.q, "error", err)
		if !c.sleep(pq.ctx, c.opts.consumer.pullErrorBackoff) {
			return 0, false
		}
	}
}

// sleep waits d or until ctx ends; false if ctx ended.
func (c *PushConsumer) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// worker consumes messages until Close closes the work channel. Once the
// consumer is closing, or a message's queue was given away, the messages
// still queued are skipped: not consumed, not committed, so they come
// again (to whoever holds the queue).
func (c *PushConsumer) worker() {
	defer c.workers.Done()
	for t := range c.work {
		next := []consumeTask{t}
		for len(next) > 0 {
			t := next[0]
			next = next[1:]
			if c.ctx.Err() != nil || t.pq.isDropped() {
				continue
			}
			if t.msg == nil {
				next = append(next, c.consumeOrderly(t.pq)...)
				continue
			}
			c.consume(t)
		}
	}
}

// consume runs the handler on t's message and settles it: consumed, sent
// back for a retry, or (when the send-back fails) consumed again locally
// after localRetryDelay.
func (c *PushConsumer) consume(t consumeTask) {
	res := c.handle(t)
	if res == ConsumeSuccess {
		t.pq.consumed(t.msg.QueueOffset)
		return
	}
	if c.opts.consumer.model == Broadcasting {
		c.opts.logger.Warn("broadcast message not consumed; dropped", "queue", t.pq.q, "msg", t.msg.MsgID)
		t.pq.consumed(t.msg.QueueOffset)
		return
	}
	err := c.sendBack(c.ctx, t.msg)
	if err == nil {
		t.pq.consumed(t.msg.QueueOffset)
		c.ensureRetryQueue()
		return
	}
	if c.ctx.Err() != nil {
		return
	}
	c.opts.logger.Warn("send-back failed; consuming again locally", "msg", t.msg.MsgID, "error", err)
	t.msg.ReconsumeTimes++
	c.workers.Add(1)
	go func() {
		defer c.workers.Done()
		if c.sleep(c.ctx, localRetryDelay) && !t.pq.isDropped() {
			c.consume(t)
		}
	}()
}

// handle calls the handler, a panic counting as ConsumeRetryLater.
func (c *PushConsumer) handle(t consumeTask) (res ConsumeResult) {
	begin := time.Now()
	defer func() {
		if r := recover(); r != nil {
			c.opts.logger.Error("message handler panicked", "msg", t.msg.MsgID, "panic", fmt.Sprint(r))
			res = ConsumeRetryLater
		}
		if c.tracer != nil {
			for _, e := range subEvents(c.opts.group, c.core.ids.Next(), t.msg, res, begin, time.Since(begin)) {
				c.tracer.add(e)
			}
		}
	}()
	return c.handlerFor(t.pq, t.msg)(c.ctx, t.msg)
}

// ensureRetryQueue asks for a rebalance when the group's retry topic has
// no queue held yet (it is created with the first heartbeat or
// send-back), so that retried messages flow without waiting for the
// next periodic rebalance.
func (c *PushConsumer) ensureRetryQueue() {
	rt := retryTopicPrefix + c.opts.group
	c.mu.Lock()
	held := false
	for q := range c.pqs {
		if q.Topic == rt {
			held = true
			break
		}
	}
	c.mu.Unlock()
	if !held {
		select {
		case c.rebalanceC <- struct{}{}:
		default:
		}
	}
}
