package broker

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
	"github.com/ledgermq/ledgermq/timerwheel"
)

// The pending-work listings (4011, 4012): the leader answers, followers
// forward (handlers.go).

// listPendingTimers serves 4011: the count of timers not yet delivered and
// the first limit of them in delivery order.
func (b *Broker) listPendingTimers(_ context.Context, req *remoting.Command) (*remoting.Command, error) {
	h, err := protocol.DecodePendingListHeader(req.ExtFields)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	view, err := b.timers.pending(h.Limit)
	if err != nil {
		return nil, err
	}
	view.MaxDelayMs = b.cfg.TimerMaxDelay.Milliseconds()
	return bodyAnswer(req, view.Encode)
}

// bodyAnswer is a leader handler's answer with the body encode returns.
func bodyAnswer(req *remoting.Command, encode func() ([]byte, error)) (*remoting.Command, error) {
	body, err := encode()
	if err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = body
	return resp, nil
}

// pending lists the undelivered timers: the count from the replicated
// progress, the items from the index (the late records past the enqueue
// cursor first, then the wheel from the delivery cursor), read from the
// store.
func (s *timerService) pending(limit int) (protocol.PendingTimers, error) {
	st := s.g.Store()
	p := readTimerProgress(s.g.Metadata())
	parked, _ := st.MaxOffset(timerTopic, 0)
	out := protocol.PendingTimers{Count: max(parked-p.Done, 0), Timers: []protocol.PendingTimer{}}
	end := s.wheel.Len()
	var cands []timerwheel.Timer
	if err := s.wheel.Range(p.Q, min(end, p.Q+timerLateScan), func(t timerwheel.Timer) bool {
		if !t.Gone && t.Key().Less(p.R) {
			cands = append(cands, t)
		}
		return true
	}); err != nil {
		return out, err
	}
	ahead, err := s.wheel.Scan(p.R, math.MaxInt64, end, limit)
	if err != nil {
		return out, err
	}
	cands = append(cands, ahead...)
	sort.Slice(cands, func(i, j int) bool { return cands[i].Key().Less(cands[j].Key()) })
	cands = cands[:min(len(cands), limit)]
	for _, t := range cands {
		m, err := st.MessageAt(t.Phy)
		if err != nil {
			continue
		}
		q, _ := strconv.ParseInt(m.Properties[message.PropertyRealQueueID], 10, 32)
		out.Timers = append(out.Timers, protocol.PendingTimer{Topic: m.Properties[message.PropertyRealTopic], QueueID: int32(q),
			DueMs: t.Due, BornMs: m.BornTimestamp, MsgID: m.UniqKey(), ParkedOffset: t.Q})
	}
	if len(cands) > 0 {
		out.NextDueMs = cands[0].Due
	}
	return out, nil
}

// listPendingTransactions serves 4012: the leader's undecided
// transactions, oldest half copy first, with their age, check count and
// producer group.
func (b *Broker) listPendingTransactions(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	h, err := protocol.DecodePendingListHeader(req.ExtFields)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	out := protocol.PendingTransactions{Transactions: []protocol.PendingTransaction{}}
	if _, ok := b.group.Metadata().Topic(halfTopic); ok {
		if err := b.ensureTxnView(ctx); err != nil {
			return nil, err
		}
	}
	b.txn.mu.Lock()
	offs := make([]int64, 0, len(b.txn.pending))
	for _, off := range b.txn.pending {
		offs = append(offs, off)
	}
	b.txn.mu.Unlock()
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	out.Count = int64(len(offs))
	now := b.cfg.Clock().UnixMilli()
	st := b.group.Store()
	for _, off := range offs[:min(len(offs), h.Limit)] {
		res, err := st.Get(halfTopic, 0, off, 1, nil)
		if err != nil {
			return nil, err
		}
		if len(res.Records) == 1 {
			if m, _, err := message.DecodeRecord(res.Records[0].Bytes); err == nil {
				checks, _ := strconv.Atoi(m.Properties[message.PropertyTransactionCheckTimes])
				out.Transactions = append(out.Transactions, protocol.PendingTransaction{MsgID: m.UniqKey(),
					ProducerGroup: m.Properties[message.PropertyProducerGroup], Topic: m.Properties[message.PropertyRealTopic],
					AgeMs: now - m.BornTimestamp, BornMs: m.BornTimestamp, CheckTimes: checks, HalfOffset: off})
			}
		}
		res.Release()
	}
	return bodyAnswer(req, out.Encode)
}
