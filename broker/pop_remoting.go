package broker

// POP consumption on the remoting port: POP_MESSAGE (200050), ACK_MESSAGE
// (200051) and CHANGE_MESSAGE_INVISIBLETIME (200053), served by the
// leader on the same replicated POP state as the gRPC port (pop.go): a
// message acknowledged here is acknowledged for the gRPC consumers of the
// group too, and the other way round. The other POP codes are served on
// the same state: PEEK_MESSAGE (pop_peek.go), NOTIFICATION and
// POLLING_INFO (pop_notify.go), BATCH_ACK_MESSAGE (pop_batchack.go).
//
// A remoting POP consumer does not hold our receipt handle: it rebuilds
// Java's ExtraInfo ("startOffset popTime invisibleTime reviveQid retry
// brokerName queueId offset") from the answer's header and sends that
// back. Every message one receive hands out shares its invisible-until
// time, so the answer's popTime + invisibleTime is each receipt's Until,
// and a receipt is named by its group, topic, queue, offset and that
// time: a redelivery or a new invisible time changes Until (by at least
// MinInvisible, or to a new time from now), so the ExtraInfo of an
// earlier delivery no longer names the receipt and is refused with
// NO_MESSAGE. The leader maps a named receipt to its handle (with the
// receipt's epoch) and acknowledges or changes it as the gRPC port does;
// a change that lost a race to another is skipped in raft as there.
//
// Limits: maxMsgNums 1–32 (Java's), invisibleTime within [MinInvisible,
// MaxInvisible], pollTime capped at maxPullHold like a pull's hold.
// POP_MESSAGE waits on a pool of its own (poolPop), so long polls never
// hold the workers of pulls, acks or sends. A group starts in a queue it
// never popped from at its committed offset, else by the header's
// initMode (popStart: MIN, 0, the queue's first message; MAX, 1, Java's
// consumers' default, its last message unless the queue is young).
// restNum is what is left past the group's POP position in the queue
// (every readable queue for -1) once the receive is applied.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

const (
	// maxRemotePopNums is Java's cap on POP_MESSAGE's maxMsgNums.
	maxRemotePopNums = 32
	// popOrderReviveQid is the reviveQid Java gives a FIFO pop's receipts
	// (KeyBuilder.POP_ORDER_REVIVE_QUEUE); clients read it as "orderly".
	popOrderReviveQid = 999
)

// remotePollTime is a POP_MESSAGE's or NOTIFICATION's long poll: its
// pollTime, capped at maxPullHold; 0 when absent, negative or not a
// number.
func remotePollTime(req *remoting.Command) time.Duration {
	v, _ := req.Ext("pollTime")
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms <= 0 {
		return 0
	}
	return min(time.Duration(min(ms, maxPullHold.Milliseconds()))*time.Millisecond, maxPullHold)
}

// forwardWait is how much longer than forwardTimeout a relay of req may
// take: a POP_MESSAGE's or NOTIFICATION's long poll.
func forwardWait(req *remoting.Command) time.Duration {
	if req.Code == remoting.PopMessage || req.Code == remoting.Notification {
		return remotePollTime(req)
	}
	return 0
}

// badPopHeader wraps a header decoding error as an invalid parameter.
func badPopHeader(err error) error { return fmt.Errorf("%w: %w", ErrInvalidParameter, err) }

// popMessageRemote serves POP_MESSAGE on the leader.
func (b *Broker) popMessageRemote(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.PopMessageRequestHeader
	if err := h.Decode(req.ExtMap()); err != nil {
		return nil, badPopHeader(err)
	}
	if h.MaxMsgNums <= 0 || h.MaxMsgNums > maxRemotePopNums {
		return nil, fmt.Errorf("%w: maxMsgNums %d is not within [1, %d]", ErrInvalidParameter, h.MaxMsgNums, maxRemotePopNums)
	}
	invisible := time.Duration(min(max(h.InvisibleTime, 0), MaxInvisible.Milliseconds()+1)) * time.Millisecond
	r := PopRequest{Group: h.ConsumerGroup, Topic: h.Topic, Expression: h.Exp, ExpressionType: h.ExpType,
		Max: int(h.MaxMsgNums), Invisible: invisible, Wait: remotePollTime(req),
		OneQueue: h.QueueID >= 0, QueueID: h.QueueID, InitMode: h.InitMode}
	if r.Expression == "" {
		r.Expression = "*"
	}
	popped, err := b.PopMessages(ctx, r)
	if err != nil {
		return nil, err
	}
	rh := protocol.PopMessageResponseHeader{PopTime: b.nowMs(), InvisibleTime: invisible.Milliseconds()}
	if tc, ok := b.group.Metadata().Topic(h.Topic); ok {
		queues := []int32{h.QueueID}
		if h.QueueID < 0 {
			queues = make([]int32, tc.ReadQueueNums)
			for i := range queues {
				queues[i] = int32(i)
			}
		}
		rh.RestNum = b.popRest(h.ConsumerGroup, h.Topic, queues, h.InitMode)
	}
	if h.Order {
		rh.ReviveQid = popOrderReviveQid
	}
	if len(popped) == 0 {
		resp := remoting.NewResponse(req, remoting.PollingTimeout, "NO_MESSAGE_IN_QUEUE")
		resp.ExtFields = rh.Encode()
		return resp, nil
	}
	// One receive's receipts share Until: popTime + invisibleTime is it.
	rh.PopTime = popped[0].Until.UnixMilli() - rh.InvisibleTime
	body, err := popInfo(&rh, popped, h.Order)
	if err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(req, remoting.Success, "FOUND")
	resp.ExtFields, resp.Body = rh.Encode(), body
	return resp, nil
}

// popInfo encodes the messages of a receive as a pull's body (each with
// its delivery attempt less one as its reconsume times) and fills in the
// header's per-queue info, in the body's order.
func popInfo(rh *protocol.PopMessageResponseHeader, popped []Popped, order bool) ([]byte, error) {
	var body []byte
	type queueInfo struct {
		start   int64
		offsets string
		count   int32
	}
	infos := map[int32]*queueInfo{}
	var queues []int32
	for _, p := range popped {
		m := *p.Msg
		m.ReconsumeTimes = max(p.Attempt-1, 0)
		var err error
		if body, err = message.AppendRecord(body, &m); err != nil {
			return nil, fmt.Errorf("broker: encoding a popped message: %w", err)
		}
		qi := infos[m.QueueID]
		if qi == nil {
			qi = &queueInfo{start: m.QueueOffset}
			infos[m.QueueID] = qi
			queues = append(queues, m.QueueID)
		} else {
			qi.offsets += ","
		}
		qi.start = min(qi.start, m.QueueOffset)
		qi.offsets += strconv.FormatInt(m.QueueOffset, 10)
		qi.count = max(qi.count, m.ReconsumeTimes)
	}
	var start, offsets, counts []protocol.PopQueueInfo
	for _, q := range queues {
		qi := infos[q]
		start = append(start, protocol.PopQueueInfo{Retry: protocol.PopRetryNormal, QueueID: q, Value: strconv.FormatInt(qi.start, 10)})
		offsets = append(offsets, protocol.PopQueueInfo{Retry: protocol.PopRetryNormal, QueueID: q, Value: qi.offsets})
		counts = append(counts, protocol.PopQueueInfo{Retry: protocol.PopRetryNormal, QueueID: q, Value: strconv.FormatInt(int64(qi.count), 10)})
	}
	rh.StartOffsetInfo, rh.MsgOffsetInfo = protocol.JoinPopQueueInfo(start), protocol.JoinPopQueueInfo(offsets)
	if order {
		rh.OrderCountInfo = protocol.JoinPopQueueInfo(counts)
	}
	return body, nil
}

// remoteReceipt is the receipt handle of the message an ACK_MESSAGE or
// CHANGE_MESSAGE_INVISIBLETIME names, and the request's ExtraInfo; an
// ExtraInfo that does not name a receipt held is ErrInvalidReceipt.
func (b *Broker) remoteReceipt(h protocol.AckMessageRequestHeader) (string, protocol.ExtraInfo, error) {
	x, err := protocol.ParseExtraInfo(h.ExtraInfo)
	if err != nil {
		return "", x, badPopHeader(err)
	}
	if x.BrokerName != b.cfg.BrokerName {
		return "", x, fmt.Errorf("%w: the receipt is of broker %s, not %s", ErrInvalidReceipt, x.BrokerName, b.cfg.BrokerName)
	}
	r, ok := b.group.Metadata().PopReceipt(h.ConsumerGroup, h.Topic, h.QueueID, h.Offset)
	if !ok || r.Until != x.PopTime+x.InvisibleTime {
		return "", x, fmt.Errorf("%w: the message at %s/%d/%d is not held by this receipt (acknowledged, or delivered again since)",
			ErrInvalidReceipt, h.Topic, h.QueueID, h.Offset)
	}
	rh := ReceiptHandle{BrokerName: b.cfg.BrokerName, Group: h.ConsumerGroup, Topic: h.Topic, QueueID: h.QueueID, Offset: h.Offset, Epoch: r.Epoch}
	return rh.Encode(), x, nil
}

// popReceiptResponse answers a receipt that names no message held
// NO_MESSAGE, as Java answers an ack of an offset it does not hold; other
// errors go through responseFor.
func popReceiptResponse(req *remoting.Command, err error) *remoting.Command {
	if errors.Is(err, ErrInvalidReceipt) {
		return remoting.NewResponse(req, remoting.NoMessage, err.Error())
	}
	return errorResponse(req, err)
}

// ackMessageRemote serves ACK_MESSAGE on the leader.
func (b *Broker) ackMessageRemote(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.AckMessageRequestHeader
	if err := h.Decode(req.ExtMap()); err != nil {
		return nil, badPopHeader(err)
	}
	if err := b.checkPop(); err != nil {
		return nil, err
	}
	handle, _, err := b.remoteReceipt(h)
	if err != nil {
		return popReceiptResponse(req, err), nil
	}
	errs, err := b.AckPopped(ctx, h.ConsumerGroup, h.Topic, []string{handle})
	if err == nil {
		err = errs[0]
	}
	if err != nil {
		return popReceiptResponse(req, err), nil
	}
	return remoting.NewResponse(req, remoting.Success, ""), nil
}

// changeInvisibleRemote serves CHANGE_MESSAGE_INVISIBLETIME on the leader:
// the answer's popTime + invisibleTime is the receipt's new Until, from
// which the client builds the message's new ExtraInfo.
func (b *Broker) changeInvisibleRemote(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ChangeInvisibleTimeRequestHeader
	if err := h.Decode(req.ExtMap()); err != nil {
		return nil, badPopHeader(err)
	}
	if err := b.checkPop(); err != nil {
		return nil, err
	}
	handle, x, err := b.remoteReceipt(h.AckMessageRequestHeader)
	if err != nil {
		return popReceiptResponse(req, err), nil
	}
	d := time.Duration(min(max(h.InvisibleTime, -1), MaxInvisible.Milliseconds()+1)) * time.Millisecond
	_, until, err := b.changeInvisible(ctx, h.ConsumerGroup, h.Topic, handle, d)
	if err != nil {
		return popReceiptResponse(req, err), nil
	}
	rh := protocol.ChangeInvisibleTimeResponseHeader{PopTime: until - d.Milliseconds(), InvisibleTime: d.Milliseconds(), ReviveQid: x.ReviveQid}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.ExtFields = rh.Encode()
	return resp, nil
}
