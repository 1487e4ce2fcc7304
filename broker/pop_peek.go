package broker

// PEEK_MESSAGE (200052) on the remoting port, served by the leader: the
// messages a POP of the group would be handed, changing nothing (no
// receipt, no position moved, nothing invisible), as Java's
// PeekMessageProcessor answers it.
//
// The queue named, or every read queue of the topic (queueId -1) from a
// random one on: first the messages whose invisible time ended and whose
// deliveries are not used up (Java peeks its POP retry topic, where such
// messages wait), then the messages from the group's POP position (where
// a group that never popped starts: its committed offset, else the
// queue's first message), at most maxMsgNums (capped at 32, Java's store
// transfer limit; 0 or less is INVALID_PARAMETER) in all. Neither tags
// nor FIFO order are looked at: the request names no expression, and
// Java's peek ignores order too.
//
// The answer is a pull's: SUCCESS ("FOUND") with the stored records
// concatenated as body, or PULL_NOT_FOUND ("NO_MESSAGE_IN_QUEUE"); its
// header is POP_MESSAGE's with restNum, the messages past the group's
// position summed over the queues looked at (popTime, invisibleTime and
// reviveQid 0, as Java leaves them). The checks before are NOTIFICATION's
// (pop_notify.go).

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
	"github.com/ledgermq/ledgermq/store"
)

// peekMessageRemote serves PEEK_MESSAGE on the leader.
func (b *Broker) peekMessageRemote(_ context.Context, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.PeekMessageRequestHeader
	if err := h.Decode(req.ExtMap()); err != nil {
		return nil, badPopHeader(err)
	}
	if err := b.checkPop(); err != nil {
		return nil, err
	}
	if h.MaxMsgNums <= 0 {
		return nil, fmt.Errorf("%w: maxMsgNums %d", ErrInvalidParameter, h.MaxMsgNums)
	}
	limit := int(min(h.MaxMsgNums, maxRemotePopNums))
	tc, q, refused := b.popLookCheck(req, h.ConsumerGroup, h.Topic, h.QueueID)
	if refused != nil {
		return refused, nil
	}
	queues := []int32{q}
	if q < 0 {
		queues = make([]int32, tc.ReadQueueNums)
		start := rand.Int32N(tc.ReadQueueNums)
		for i := range queues {
			queues[i] = (start + int32(i)) % tc.ReadQueueNums
		}
	}
	group, topic := h.ConsumerGroup, h.Topic
	md, st := b.group.Metadata(), b.group.Store()
	now, maxAttempts := b.nowMs(), b.popMaxAttempts(group)
	var body []byte
	n := 0
	// Those a receive would hand out again first.
	for _, q := range queues {
		if n == limit {
			break
		}
		exp, _ := popExpired(md, group, topic, q, now, md.PopInflight(group, topic, q))
		for _, e := range exp {
			if n == limit {
				break
			}
			if e.Attempt >= maxAttempts {
				continue // for the dead-letter queue, not a consumer
			}
			if rec, ok := b.popRecordAt(topic, q, e.Offset); ok {
				body = append(body, rec...)
				n++
			}
		}
	}
	// Then the new ones, from each queue's position.
	rest := b.popRest(group, topic, queues, protocol.PopInitModeMin)
	for _, q := range queues {
		pos, had := md.PopPosition(group, topic, q)
		if !had {
			pos = b.popStart(group, topic, q, protocol.PopInitModeMin)
		}
		if n == limit {
			continue
		}
		got, err := peekFrom(st, topic, q, pos, limit-n, body)
		if err != nil {
			return nil, err
		}
		body, n = got.body, n+got.n
	}
	rh := protocol.PopMessageResponseHeader{RestNum: rest}
	if n == 0 {
		resp := remoting.NewResponse(req, remoting.PullNotFound, "NO_MESSAGE_IN_QUEUE")
		resp.ExtFields = rh.Encode()
		return resp, nil
	}
	resp := remoting.NewResponse(req, remoting.Success, "FOUND")
	resp.ExtFields, resp.Body = rh.Encode(), body
	return resp, nil
}

// peeked is body with the records peekFrom appended, and how many.
type peeked struct {
	body []byte
	n    int
}

// peekFrom appends to body up to limit stored records of a queue from
// offset pos on (from the queue's first when its head before pos was
// deleted).
func peekFrom(st MessageStore, topic string, q int32, pos int64, limit int, body []byte) (peeked, error) {
	res, err := st.Get(topic, q, pos, limit, nil)
	if err != nil {
		return peeked{body: body}, err
	}
	if res.Status == store.OffsetTooSmall {
		res.Release()
		if res, err = st.Get(topic, q, res.MinOffset, limit, nil); err != nil {
			return peeked{body: body}, err
		}
	}
	defer res.Release()
	out := peeked{body: body}
	if res.Status != store.Found {
		return out, nil
	}
	for _, r := range res.Records {
		out.body = append(out.body, r.Bytes...)
		out.n++
	}
	return out, nil
}

// popRecordAt is a copy of the stored record at a queue offset; false if
// it is gone.
func (b *Broker) popRecordAt(topic string, q int32, offset int64) ([]byte, bool) {
	res, err := b.group.Store().Get(topic, q, offset, 1, nil)
	if err != nil {
		return nil, false
	}
	defer res.Release()
	if res.Status != store.Found || len(res.Records) == 0 || res.Records[0].QueueOffset != offset {
		return nil, false
	}
	return append([]byte(nil), res.Records[0].Bytes...), true
}

// popRest is the restNum of a POP answer: the messages of the queues
// past the group's POP position (where it would start by initMode, for a
// queue it never popped).
func (b *Broker) popRest(group, topic string, queues []int32, initMode int32) int64 {
	md, st := b.group.Metadata(), b.group.Store()
	rest := int64(0)
	for _, q := range queues {
		pos, had := md.PopPosition(group, topic, q)
		if !had {
			pos = b.popStart(group, topic, q, initMode)
		}
		if end, err := st.MaxOffset(topic, q); err == nil {
			rest += max(end-pos, 0)
		}
	}
	return rest
}
