package broker

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ledgermq/ledgermq/internal/canary"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
)

// popReceiptOf decodes handle and checks it names this broker group, the
// request's group and topic, and a receipt held with its epoch.
func (b *Broker) popReceiptOf(group, topic, handle string) (ReceiptHandle, metadata.PopReceipt, error) {
	h, err := DecodeReceiptHandle(handle)
	if err != nil {
		return h, metadata.PopReceipt{}, err
	}
	if h.BrokerName != b.cfg.BrokerName || h.Group != group || h.Topic != topic {
		return h, metadata.PopReceipt{}, fmt.Errorf("%w: the handle is of %s/%s/%s, not %s/%s/%s", ErrInvalidReceipt,
			h.BrokerName, h.Group, h.Topic, b.cfg.BrokerName, group, topic)
	}
	r, ok := b.group.Metadata().PopReceipt(h.Group, h.Topic, h.QueueID, h.Offset)
	if !ok || r.Epoch != h.Epoch {
		return h, r, fmt.Errorf("%w: the message at %s/%d/%d is not held by this handle (acknowledged, or delivered again since)",
			ErrInvalidReceipt, h.Topic, h.QueueID, h.Offset)
	}
	return h, r, nil
}

// AckPopped acknowledges the messages of the handles (of one group and
// topic), all in one raft entry. The answer has one error per handle, nil
// for those acknowledged; the error is for the request as a whole.
func (b *Broker) AckPopped(ctx context.Context, group, topic string, handles []string) ([]error, error) {
	acks := make([]popAck, len(handles))
	for i, h := range handles {
		acks[i] = popAck{group: group, topic: topic, handle: h}
	}
	return b.ackPopped(ctx, acks)
}

// popAck is a receipt to acknowledge: the group and topic it is of, and
// its handle.
type popAck struct {
	group, topic, handle string
}

// ackPopped is AckPopped for receipts of any groups and topics (a
// BATCH_ACK_MESSAGE), all in one raft entry.
func (b *Broker) ackPopped(ctx context.Context, acks []popAck) ([]error, error) {
	if err := b.checkPop(); err != nil {
		return nil, err
	}
	errs := make([]error, len(acks))
	changes := map[metadata.PopQueue]*metadata.PopChange{}
	type held struct {
		h ReceiptHandle
		i int
	}
	var acked []held
	topics := map[string]bool{}
	for i, a := range acks {
		h, _, err := b.popReceiptOf(a.group, a.topic, a.handle)
		if err != nil {
			errs[i] = err
			continue
		}
		k := metadata.PopQueue{Group: a.group, Topic: a.topic, QueueID: h.QueueID}
		c := changes[k]
		if c == nil {
			c = &metadata.PopChange{Group: a.group, Topic: a.topic, QueueID: h.QueueID}
			changes[k] = c
		}
		c.Del = append(c.Del, metadata.PopDel{Offset: h.Offset, Epoch: h.Epoch})
		acked = append(acked, held{h, i})
		topics[a.topic] = true
	}
	if canary.Built && canary.PopAckInMemory() { // a jepsenbroken build only (internal/canary)
		for _, a := range acked {
			canary.NotePopAck(popCanaryKey(a.h.Group, a.h.Topic, a.h.QueueID, a.h.Offset, a.h.Epoch))
		}
		for t := range topics {
			b.pop.notify(t)
		}
		return errs, nil
	}
	list := make([]metadata.PopChange, 0, len(changes))
	for _, c := range changes {
		list = append(list, *c)
	}
	if err := b.pop.batch.submit(ctx, list); err != nil {
		return nil, err
	}
	md := b.group.Metadata()
	for _, a := range acked {
		// Gone, or held by a later delivery: acknowledged only if this
		// entry removed it (a redelivery that won the race keeps it).
		if r, ok := md.PopReceipt(a.h.Group, a.h.Topic, a.h.QueueID, a.h.Offset); ok && r.Epoch >= a.h.Epoch {
			errs[a.i] = fmt.Errorf("%w: the message was delivered again meanwhile", ErrInvalidReceipt)
		}
	}
	for t := range topics {
		b.pop.notify(t)
	}
	return errs, nil
}

// ChangeInvisible makes the message of handle invisible for d from now
// and answers its new handle (the old one is stale from then on).
func (b *Broker) ChangeInvisible(ctx context.Context, group, topic, handle string, d time.Duration) (string, error) {
	h, _, err := b.changeInvisible(ctx, group, topic, handle, d)
	if err != nil {
		return "", err
	}
	return h.Encode(), nil
}

// changeInvisible is ChangeInvisible, answering the new handle decoded and
// the receipt's new invisible-until time (Unix ms).
func (b *Broker) changeInvisible(ctx context.Context, group, topic, handle string, d time.Duration) (ReceiptHandle, int64, error) {
	if err := b.checkPop(); err != nil {
		return ReceiptHandle{}, 0, err
	}
	if d < 0 || d > MaxInvisible {
		return ReceiptHandle{}, 0, fmt.Errorf("%w: invisible duration %v is not within [0, %v]", ErrInvalidParameter, d, MaxInvisible)
	}
	h, r, err := b.popReceiptOf(group, topic, handle)
	if err != nil {
		return ReceiptHandle{}, 0, err
	}
	nr := metadata.PopReceipt{Offset: r.Offset, Until: b.nowMs() + d.Milliseconds(), Attempt: r.Attempt, Epoch: r.Epoch + 1}
	c := metadata.PopChange{Group: group, Topic: topic, QueueID: h.QueueID, Put: []metadata.PopReceipt{nr}}
	if err := b.pop.batch.submit(ctx, []metadata.PopChange{c}); err != nil {
		return ReceiptHandle{}, 0, err
	}
	if got, ok := b.group.Metadata().PopReceipt(group, topic, h.QueueID, h.Offset); !ok || got != nr {
		return ReceiptHandle{}, 0, fmt.Errorf("%w: the message was acknowledged or delivered again meanwhile", ErrInvalidReceipt)
	}
	b.pop.notify(topic)
	h.Epoch = nr.Epoch
	return h, nr.Until, nil
}

// PopToDeadLetter sends the message of handle to the group's dead-letter
// queue at once (the client gave up on it) and forgets its receipt.
func (b *Broker) PopToDeadLetter(ctx context.Context, group, topic, handle string) error {
	if err := b.checkPop(); err != nil {
		return err
	}
	h, r, err := b.popReceiptOf(group, topic, handle)
	if err != nil {
		return err
	}
	m, ok := b.popRead(topic, h.QueueID, h.Offset)
	if !ok {
		return fmt.Errorf("%w: the message at %s/%d/%d is gone", ErrNotFound, topic, h.QueueID, h.Offset)
	}
	if err := b.popStoreDeadLetter(ctx, group, m, r.Attempt); err != nil {
		return err
	}
	c := metadata.PopChange{Group: group, Topic: topic, QueueID: h.QueueID, Del: []metadata.PopDel{{Offset: r.Offset, Epoch: r.Epoch}}}
	return b.pop.batch.submit(ctx, []metadata.PopChange{c})
}

// deadLetter is a message whose deliveries are used up.
type deadLetter struct {
	queueID int32
	receipt metadata.PopReceipt
	msg     *message.Ext
}

// popDeadLetters stores each message in the group's DLQ (once:
// popStoreDeadLetter), then forgets its receipt; a deadLetter without a
// message (gone from the store) only has its receipt forgotten. A failure
// leaves the receipt: the next receive or revive round tries again.
func (b *Broker) popDeadLetters(ctx context.Context, group, topic string, dead []deadLetter) {
	var list []metadata.PopChange
	for _, d := range dead {
		if d.msg != nil {
			if err := b.popStoreDeadLetter(ctx, group, d.msg, d.receipt.Attempt); err != nil {
				b.log.Warn("a POP message could not go to the dead-letter queue; retried later",
					"group", group, "topic", topic, "queue", d.queueID, "offset", d.receipt.Offset, "error", err)
				continue
			}
			if hook := b.pop.deadLetterHook.Load(); hook != nil && (*hook)(ctx) {
				return // a test's leader that stops between the two entries
			}
		}
		list = append(list, metadata.PopChange{Group: group, Topic: topic, QueueID: d.queueID,
			Del: []metadata.PopDel{{Offset: d.receipt.Offset, Epoch: d.receipt.Epoch}}})
	}
	if err := b.pop.batch.submit(ctx, list); err != nil {
		b.log.Warn("POP receipts of dead letters not removed; retried later", "group", group, "topic", topic, "error", err)
	}
}

// storeDeadLetter stores a copy of m in %DLQ%<group> queue 0, as
// CONSUMER_SEND_MSG_BACK does once the retries are used up: the original
// topic in RETRY_TOPIC, its id in ORIGIN_MESSAGE_ID, UNIQ_KEY kept, the
// deliveries so far (less the first) as reconsume times, and src (the
// record's offset message id) in popSourceProperty.
func (b *Broker) storeDeadLetter(ctx context.Context, group string, m *message.Ext, attempts int32, src string) error {
	tc, err := b.createTopic(ctx, metadata.TopicConfig{TopicName: protocol.DLQTopic(group), ReadQueueNums: 1, WriteQueueNums: 1,
		Perm: metadata.PermRead | metadata.PermWrite})
	if err != nil {
		return err
	}
	c := &message.Ext{
		Message:        message.Message{Topic: tc.TopicName, Flag: m.Flag, Body: m.Body, Properties: make(map[string]string, len(m.Properties)+2)},
		SysFlag:        m.SysFlag,
		BornTimestamp:  m.BornTimestamp,
		BornHost:       m.BornHost,
		ReconsumeTimes: max(attempts-1, 0),
	}
	for k, v := range m.Properties {
		c.Properties[k] = v
	}
	delete(c.Properties, message.PropertyDelayLevel)
	if c.Properties[message.PropertyRetryTopic] == "" {
		c.Properties[message.PropertyRetryTopic] = m.Topic
	}
	if c.Properties[message.PropertyOriginMessageID] == "" {
		c.Properties[message.PropertyOriginMessageID] = m.MsgID()
	}
	c.Properties[popSourceProperty] = src
	pctx, cancel := context.WithTimeout(ctx, proposeTimeout)
	defer cancel()
	if _, err := b.group.Propose(pctx, []*message.Ext{c}); err != nil {
		return fmt.Errorf("broker: storing a dead letter of %s: %w", group, err)
	}
	b.log.Debug("POP message to the dead-letter queue", "group", group, "topic", m.Topic, "queue", m.QueueID, "offset", m.QueueOffset)
	return nil
}

// popCanaryKey names a receipt for the pop-ack-in-memory broken build.
func popCanaryKey(group, topic string, q int32, offset, epoch int64) string {
	return fmt.Sprint(group, "/", topic, "/", q, "/", offset, "/", epoch)
}

// popExpired is md.PopExpired; in a jepsenbroken build with
// pop-ack-in-memory, without the receipts this process acknowledged in
// memory (internal/canary).
func popExpired(md *metadata.State, group, topic string, q int32, now int64, limit int) ([]metadata.PopReceipt, int64) {
	if !canary.Built || !canary.PopAckInMemory() {
		return md.PopExpired(group, topic, q, now, limit)
	}
	exp, next := md.PopExpired(group, topic, q, now, math.MaxInt)
	exp = slices.DeleteFunc(exp, func(r metadata.PopReceipt) bool {
		return canary.PopAcked(popCanaryKey(group, topic, q, r.Offset, r.Epoch))
	})
	// Those left out wait for a later receive (a long poll may not be
	// woken for them: a broken build's detail).
	return exp[:min(len(exp), limit)], next
}
