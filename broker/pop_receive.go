package broker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/store"
)

// PopRequest asks for messages of a topic for a consumer group.
type PopRequest struct {
	Group, Topic string
	// Expression and ExpressionType filter the messages ("" and "TAG": a
	// tag expression, "*" for all; "SQL92").
	Expression, ExpressionType string
	// Max is the most messages to hand out (capped at 64).
	Max int
	// Invisible is how long a message handed out stays invisible.
	Invisible time.Duration
	// Wait is how long to wait for a message when none is ready (long
	// polling); 0 answers at once.
	Wait time.Duration
	// OneQueue restricts the receive to queue QueueID (a remoting
	// POP_MESSAGE naming a queue); otherwise every readable queue.
	OneQueue bool
	QueueID  int32
	// InitMode is where the group starts in a queue it never popped from
	// and has no committed offset of (popStart): protocol.PopInitModeMin
	// (the zero value), the queue's first message; PopInitModeMax, its
	// last, unless the queue is young (popFirstInMemory).
	InitMode int32
}

// Popped is a message handed out: the message (its QueueID and
// QueueOffset are its place), the handle to acknowledge it with, its
// delivery attempt (1 for the first) and until when it is invisible.
type Popped struct {
	Msg     *message.Ext
	Handle  string
	Attempt int32
	Until   time.Time
}

// popCandidate is a message a receive is about to hand out.
type popCandidate struct {
	msg *message.Ext
	r   metadata.PopReceipt
}

// PopMessages hands out up to r.Max messages of the topic to the group,
// waiting up to r.Wait for one when none is ready. An empty answer with
// no error means none came in time.
func (b *Broker) PopMessages(ctx context.Context, r PopRequest) ([]Popped, error) {
	if err := validateGroup(r.Group); err != nil {
		return nil, err
	}
	if r.Max <= 0 {
		return nil, fmt.Errorf("%w: batch size %d", ErrInvalidParameter, r.Max)
	}
	r.Max = min(r.Max, maxPopBatch)
	if r.Invisible < MinInvisible || r.Invisible > MaxInvisible {
		return nil, fmt.Errorf("%w: invisible duration %v is not within [%v, %v]", ErrInvalidParameter, r.Invisible, MinInvisible, MaxInvisible)
	}
	f, err := newMsgFilter(r.Expression, r.ExpressionType, !b.cfg.DisablePropertyFilter)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(max(r.Wait, 0))
	for {
		if err := b.checkPop(); err != nil {
			return nil, err
		}
		// Watch before looking, so a message stored in between wakes us.
		wake, done := b.pop.watch(r.Topic)
		out, next, err := b.popOnce(ctx, r, f)
		if err != nil || len(out) > 0 {
			done()
			return out, err
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			done()
			return nil, nil
		}
		if next > 0 {
			// A receipt due already (one whose dead letter could not be
			// stored, or one that expired while we looked) is looked at
			// again after popRecheck, not in a busy loop.
			wait = min(wait, max(time.Duration(next-b.nowMs())*time.Millisecond, popRecheck))
		}
		held := b.pop.polls.hold(r.Topic, r.Group, r.pollQueue())
		over := b.popWait(ctx, wake, wait)
		held()
		done()
		if over {
			return nil, nil
		}
	}
}

// popOnce looks once: expired receipts first, then new messages, across
// the topic's readable queues from a rotating start. It returns what it
// handed out and the earliest time (Unix ms) a receipt of the queues
// expires, 0 if none is in flight.
func (b *Broker) popOnce(ctx context.Context, r PopRequest, f msgFilter) ([]Popped, int64, error) {
	tc, ok := b.group.Metadata().Topic(r.Topic)
	if !ok {
		return nil, 0, fmt.Errorf("%w: %s", ErrTopicNotExist, r.Topic)
	}
	if tc.Perm&metadata.PermRead == 0 || tc.ReadQueueNums <= 0 {
		return nil, 0, fmt.Errorf("%w: topic %s is not readable", ErrNoPermission, r.Topic)
	}
	began := time.Now()
	unlock := b.pop.lock(r.Group, r.Topic)
	defer unlock()

	md, st := b.group.Metadata(), b.group.Store()
	now := b.nowMs()
	until := now + r.Invisible.Milliseconds()
	maxAttempts := b.popMaxAttempts(r.Group)
	orderly := b.PopOrderly(r.Group)
	// The queues looked at are (start+i) % total for i below n.
	total := tc.ReadQueueNums
	n, start := total, int32(b.pop.rr.Add(1)%uint32(total))
	if r.OneQueue {
		if r.QueueID < 0 || r.QueueID >= total {
			return nil, 0, fmt.Errorf("%w: queue %d of topic %s (it has %d)", ErrInvalidParameter, r.QueueID, r.Topic, total)
		}
		start, n = r.QueueID, 1
	}
	changes := map[int32]*metadata.PopChange{}
	change := func(q int32) *metadata.PopChange {
		c := changes[q]
		if c == nil {
			c = &metadata.PopChange{Group: r.Group, Topic: r.Topic, QueueID: q}
			changes[q] = c
		}
		return c
	}
	var cands []popCandidate
	var dead []deadLetter
	next := int64(0)
	need := func() int { return r.Max - len(cands) }

	// Messages whose invisible time ended: again, or to the DLQ. A FIFO
	// group's queue hands them out again only once every message it has
	// in flight is due, in queue order, and nothing new meanwhile.
	blocked := map[int32]bool{}
	for i := range n {
		q := (start + i) % total
		limit := max(need(), 0)
		inflight := 0
		if orderly {
			if inflight = md.PopInflight(r.Group, r.Topic, q); inflight > 0 {
				blocked[q], limit = true, inflight
			}
		}
		exp, nx := popExpired(md, r.Group, r.Topic, q, now, limit)
		if nx > 0 && (next == 0 || nx < next) {
			next = nx
		}
		if orderly {
			if len(exp) < inflight {
				continue // some still invisible: the queue waits for them
			}
			slices.SortFunc(exp, func(a, b metadata.PopReceipt) int { return cmp.Compare(a.Offset, b.Offset) })
			exp = exp[:min(len(exp), max(need(), 0))]
		}
		for _, e := range exp {
			m, ok := b.popRead(r.Topic, q, e.Offset)
			switch {
			case !ok:
				// Gone from the store (retention): nothing to deliver.
				change(q).Del = append(change(q).Del, metadata.PopDel{Offset: e.Offset, Epoch: e.Epoch})
			case e.Attempt >= maxAttempts:
				dead = append(dead, deadLetter{queueID: q, receipt: e, msg: m})
			default:
				nr := metadata.PopReceipt{Offset: e.Offset, Until: until, Attempt: e.Attempt + 1, Epoch: e.Epoch + 1}
				change(q).Put = append(change(q).Put, nr)
				cands = append(cands, popCandidate{msg: m, r: nr})
			}
		}
	}

	// New messages from each queue's position (a FIFO group's only from a
	// queue with nothing in flight).
	for i := int32(0); i < n && need() > 0; i++ {
		q := (start + i) % total
		if blocked[q] {
			continue
		}
		room := b.pop.maxInflight - md.PopInflight(r.Group, r.Topic, q) - len(change(q).Put)
		if room <= 0 {
			continue
		}
		got, err := b.popTake(st, r, f, q, min(need(), room), until, change(q))
		if err != nil {
			return nil, 0, err
		}
		cands = append(cands, got...)
	}

	var list []metadata.PopChange
	for _, c := range changes {
		if c.Move || len(c.Put) > 0 || len(c.Del) > 0 {
			list = append(list, *c)
		}
	}
	if err := b.pop.batch.submit(ctx, list); err != nil {
		return nil, 0, err
	}
	out := make([]Popped, 0, len(cands))
	size := 0
	for _, c := range cands {
		// Only what the entry applied as decided: a change that lost a
		// race (a failover in between) was skipped.
		if got, ok := md.PopReceipt(r.Group, r.Topic, c.msg.QueueID, c.r.Offset); !ok || got != c.r {
			continue
		}
		h := ReceiptHandle{BrokerName: b.cfg.BrokerName, Group: r.Group, Topic: r.Topic, QueueID: c.msg.QueueID, Offset: c.r.Offset, Epoch: c.r.Epoch}
		out = append(out, Popped{Msg: c.msg, Handle: h.Encode(), Attempt: c.r.Attempt, Until: time.UnixMilli(c.r.Until)})
		size += len(c.msg.Body)
		if next == 0 || c.r.Until < next {
			next = c.r.Until
		}
	}
	if len(out) > 0 {
		b.obs.Served(r.Topic, r.Group, len(out), size, time.Since(began))
		b.stats.served(b.cfg.ClusterName, r.Topic, r.Group, len(out), size)
	}
	if len(dead) > 0 {
		b.popDeadLetters(ctx, r.Group, r.Topic, dead)
	}
	return out, next, nil
}

// popTake reads up to max new messages of queue q from the group's
// position, records their receipts and the move in c, and returns them.
func (b *Broker) popTake(st MessageStore, r PopRequest, f msgFilter, q int32, limit int, until int64, c *metadata.PopChange) ([]popCandidate, error) {
	from, had := b.group.Metadata().PopPosition(r.Group, r.Topic, q)
	if !had {
		from = b.popStart(r.Group, r.Topic, q, r.InitMode)
	}
	pos := from
	res, err := st.Get(r.Topic, q, pos, limit, f.tags)
	if err != nil {
		return nil, err
	}
	if res.Status == store.OffsetTooSmall {
		// The head of the queue was deleted: go on from its new start.
		res.Release()
		pos = res.MinOffset
		if res, err = st.Get(r.Topic, q, pos, limit, f.tags); err != nil {
			return nil, err
		}
	}
	defer res.Release()
	switch res.Status {
	case store.Found, store.NoMatchedMessage, store.OffsetFoundNull:
	default:
		return nil, nil
	}
	var out []popCandidate
	for _, rec := range res.Records {
		if !f.match(rec.Bytes) {
			continue
		}
		v, err := message.ParseView(rec.Bytes)
		if err != nil {
			continue
		}
		m, err := v.Decode()
		if err != nil {
			continue
		}
		nr := metadata.PopReceipt{Offset: rec.QueueOffset, Until: until, Attempt: 1, Epoch: 1}
		c.Put = append(c.Put, nr)
		out = append(out, popCandidate{msg: m, r: nr})
	}
	// The move starts where the state is (a new group's start is taken
	// as the leader computed it), so every replica hands out from the
	// same place.
	if to := max(res.NextBeginOffset, pos); to != from || !had {
		c.Move, c.From, c.To = true, from, to
	}
	return out, nil
}

// popInitRecent is how young the first message of a queue must be for a
// PopInitModeMax receive to start there (popFirstInMemory).
const popInitRecent = 10 * time.Minute

// popStart is where a group that never popped from a queue starts: its
// committed consumer offset, else by initMode, as Java's
// PopMessageProcessor.getInitOffset: PopInitModeMin (and any retry
// topic) the queue's first message; PopInitModeMax the queue's last
// message (maxOffset-1, not before 0), unless the queue still holds its
// very first message (min offset 0) and that message is "in memory"
// (popFirstInMemory): then 0, so that a new topic's first messages reach
// a group that started receiving just after they were sent.
//
// Only the leader computes it, on a receive; the receive's OpPop records
// the position it started from (popTake: the move with From = To = the
// start), so every replica, and a later leader, takes the group on from
// where this leader put it. A receive that finds the queue empty records
// nothing, and the next one decides again.
func (b *Broker) popStart(group, topic string, q int32, initMode int32) int64 {
	if off, ok := b.group.Metadata().Offset(group, topic, q); ok {
		return off
	}
	if initMode != protocol.PopInitModeMax || strings.HasPrefix(topic, protocol.RetryTopicPrefix) {
		return b.queueMin(topic, q)
	}
	st := b.group.Store()
	maxOff, err := st.MaxOffset(topic, q)
	if err != nil || maxOff <= 0 {
		return 0
	}
	if minOff, err := st.MinOffset(topic, q); err == nil && minOff <= 0 && b.popFirstInMemory(topic, q) {
		return 0
	}
	return maxOff - 1
}

// popFirstInMemory is Java's checkInMemByConsumeOffset(topic, queue, 0,
// 1), made deterministic: Java asks whether the first message's bytes are
// still in the page cache, which no replica can answer as another would
// (and a new leader's cache differs from the old one's). What the page
// cache holds is, on a broker taking writes, the last minutes of the
// CommitLog; so the message at offset 0 counts as in memory when it was
// stored less than popInitRecent before now by the leader's clock
// (Config.Clock) and its own store timestamp, the same bytes on every
// replica. The leader alone asks it, and replicates its answer as the
// start it records (popStart).
func (b *Broker) popFirstInMemory(topic string, q int32) bool {
	rec, ok := b.popRecordAt(topic, q, 0)
	if !ok {
		return false
	}
	v, err := message.ParseView(rec)
	if err != nil {
		return false
	}
	return b.nowMs()-v.StoreTimestamp() < popInitRecent.Milliseconds()
}

// popRead reads the message at a queue offset, false if it is gone.
func (b *Broker) popRead(topic string, q int32, offset int64) (*message.Ext, bool) {
	rec, ok := b.popRecordAt(topic, q, offset)
	if !ok {
		return nil, false
	}
	v, err := message.ParseView(rec)
	if err != nil {
		return nil, false
	}
	m, err := v.Decode()
	if err != nil {
		return nil, false
	}
	return m, true
}

// popWait waits for wake, for wait to pass, or for ctx or the broker to
// end; it reports whether one of those ended.
func (b *Broker) popWait(ctx context.Context, wake <-chan struct{}, wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-wake:
	case <-t.C:
	case <-ctx.Done():
	case <-b.ctx.Done():
	}
	return ctx.Err() != nil || b.ctx.Err() != nil
}
