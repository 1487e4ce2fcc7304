package client

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// Transactional messages (RocketMQ's two-phase commit). SendInTransaction
// stores the message as a half message, invisible to consumers, then runs
// the local transaction and tells the broker its outcome with
// END_TRANSACTION (37): commit makes the message visible on its topic,
// rollback discards it. When the outcome is unknown, or the
// END_TRANSACTION is lost, the broker's leader later asks a producer of
// the group with CHECK_TRANSACTION_STATE (39); the producer calls the
// listener's CheckLocalTransaction and answers with a new END_TRANSACTION
// to the broker that asked. Any producer of the group can answer, so the
// check must be answerable from the application's own records, not from
// this process's memory.

// LocalTransactionState is the outcome of a local transaction.
type LocalTransactionState int

const (
	// TransactionUnknown leaves the decision to a later check-back.
	TransactionUnknown LocalTransactionState = iota
	// TransactionCommit makes the message visible to consumers.
	TransactionCommit
	// TransactionRollback discards the message.
	TransactionRollback
)

func (s LocalTransactionState) String() string {
	switch s {
	case TransactionCommit:
		return "commit"
	case TransactionRollback:
		return "rollback"
	default:
		return "unknown"
	}
}

// code is the state's commitOrRollback value.
func (s LocalTransactionState) code() int32 {
	switch s {
	case TransactionCommit:
		return protocol.TransactionCommit
	case TransactionRollback:
		return protocol.TransactionRollback
	default:
		return protocol.TransactionNotType
	}
}

// TransactionListener runs a transactional producer's local transactions
// and answers the brokers' check-backs. Both methods may be called
// concurrently; a panic counts as TransactionUnknown.
type TransactionListener interface {
	// ExecuteLocalTransaction runs the local transaction of m, whose half
	// message the broker has stored, and returns its outcome.
	ExecuteLocalTransaction(ctx context.Context, m *Message) LocalTransactionState
	// CheckLocalTransaction returns the outcome of the local transaction
	// of m, a half message still undecided (m.MsgID is the UNIQ_KEY
	// SendInTransaction returned as MsgID).
	CheckLocalTransaction(ctx context.Context, m *MessageExt) LocalTransactionState
}

// TransactionResult is what SendInTransaction did: the half message's
// send, the local transaction's outcome, and whether the broker was told.
type TransactionResult struct {
	// SendResult is the half message's: MsgID (its UNIQ_KEY, the id the
	// committed message keeps), OffsetMsgID, Queue (the queue it will be
	// delivered to when committed) and QueueOffset (in the half queue).
	SendResult
	// State is what ExecuteLocalTransaction returned.
	State LocalTransactionState
	// EndErr is non-nil when the END_TRANSACTION carrying State could not
	// be delivered (the broker then asks CheckLocalTransaction later). It
	// is always nil for TransactionUnknown, which the broker does not
	// answer.
	EndErr error
}

// TransactionProducer is a Producer that also sends transactional
// messages. Its plain sends are the Producer's.
type TransactionProducer struct {
	*Producer
	listener TransactionListener
	hb       *producerHeartbeat
}

// NewTransactionProducer returns a producer whose local transactions and
// check-backs run on l. WithGroup names the producer group the brokers
// check back with (the same for every process of the application).
func NewTransactionProducer(l TransactionListener, opts ...Option) (*TransactionProducer, error) {
	if l == nil {
		return nil, fmt.Errorf("%w: nil transaction listener", ErrConfig)
	}
	tp := &TransactionProducer{listener: l}
	opts = append(slices.Clip(opts), func(o *options) {
		o.onRequest = remoting.HandlerFunc(tp.serveCheck)
	})
	p, err := NewProducer(opts...)
	if err != nil {
		return nil, err
	}
	tp.Producer = p
	tp.hb = newProducerHeartbeat(p)
	return tp, nil
}

// Close stops the heartbeats, then closes the Producer.
func (tp *TransactionProducer) Close() error {
	tp.hb.close()
	return tp.Producer.Close()
}

// SendInTransaction stores m as a half message (retries and outcomes as
// Send's), runs the listener's ExecuteLocalTransaction once it is stored,
// and sends the outcome to the broker group that stored it. A send that
// fails runs no local transaction and returns the send's error; one of
// unknown outcome may have stored a half message, which the broker will
// check back (the listener should then answer rollback, as its local
// transaction never ran). m must not have a DelayLevel.
func (tp *TransactionProducer) SendInTransaction(ctx context.Context, m *Message) (TransactionResult, error) {
	if m != nil && m.DelayLevel != 0 {
		return TransactionResult{}, failedError(m.Topic, fmt.Errorf("%w: a transactional message cannot be delayed", ErrInvalidMessage))
	}
	out, err := tp.prepareWith(m, map[string]string{
		message.PropertyTransactionPrepared: "true",
		message.PropertyProducerGroup:       tp.opts.group,
	})
	if err != nil {
		return TransactionResult{}, err
	}
	out.header.SysFlag |= protocol.TransactionPrepared
	if err := tp.begin(out.topic); err != nil {
		return TransactionResult{}, err
	}
	defer tp.sends.leave()
	res, err := tp.deliver(ctx, out, kindSync)
	if err != nil {
		return TransactionResult{SendResult: res}, err
	}
	// The leader that stored the half message learns the group's
	// producers before it may need to check back.
	tp.hb.ensure(ctx, res.Addr)
	state := tp.executeLocal(ctx, m)
	tr := TransactionResult{SendResult: res, State: state}
	tr.EndErr = tp.endTransaction(ctx, res, state)
	if tr.EndErr != nil {
		tp.opts.logger.Warn("transaction outcome not delivered; the broker will check back", "msg", res.MsgID,
			"state", state, "error", tr.EndErr)
	}
	return tr, nil
}

// executeLocal runs the local transaction, a panic counting as unknown.
func (tp *TransactionProducer) executeLocal(ctx context.Context, m *Message) (state LocalTransactionState) {
	defer func() {
		if r := recover(); r != nil {
			tp.opts.logger.Error("local transaction panicked; outcome unknown", "panic", r)
			state = TransactionUnknown
		}
	}()
	return tp.listener.ExecuteLocalTransaction(ctx, m)
}

// endTransaction tells the leader of the group that stored res the
// outcome. Commit and rollback wait for the answer and go again (to the
// group's current leader: the offsets are the same on every replica) while
// no node answers or the one asked is not the leader; the broker applies
// an outcome once, so a repeat changes nothing. Unknown is written and
// not waited for.
func (tp *TransactionProducer) endTransaction(ctx context.Context, res SendResult, state LocalTransactionState) error {
	_, off, err := message.ParseOffsetMsgID(res.OffsetMsgID)
	if err != nil {
		return fmt.Errorf("client: offset msgId %q of the half message: %w", res.OffsetMsgID, err)
	}
	h := protocol.EndTransactionRequestHeader{
		ProducerGroup:        tp.opts.group,
		TranStateTableOffset: res.QueueOffset,
		CommitLogOffset:      off,
		CommitOrRollback:     state.code(),
		MsgID:                res.MsgID,
		TransactionID:        res.TransactionID,
		BrokerName:           res.Queue.BrokerName,
	}
	ctx, cancel := context.WithTimeout(ctx, tp.opts.sendTimeout)
	defer cancel()
	if state == TransactionUnknown {
		addr := res.Addr
		if info, err := tp.core.routes.get(ctx, res.Queue.Topic); err == nil && info.leaders[res.Queue.BrokerName] != "" {
			addr = info.leaders[res.Queue.BrokerName]
		}
		_ = tp.core.rc.InvokeOneway(ctx, addr, h.Request(""))
		return nil
	}
	bo := backoff{next: firstBackoff}
	var last error
	for attempt := 0; ; attempt++ {
		info, err := tp.core.routes.get(ctx, res.Queue.Topic)
		if attempt > 0 {
			info, err = tp.core.routes.refresh(ctx, res.Queue.Topic)
		}
		addr := ""
		if err == nil {
			addr = info.leaders[res.Queue.BrokerName]
		}
		if addr == "" && attempt == 0 {
			addr = res.Addr
		}
		if addr != "" {
			var resp *remoting.Command
			resp, err = tp.core.rc.Invoke(ctx, addr, h.Request(""))
			switch {
			case err == nil && resp.Code == remoting.Success:
				return nil
			case err == nil && resp.Code != remoting.ServiceNotAvailable && resp.Code != remoting.SystemBusy:
				// The broker refused it (no such half message, or a
				// different group): going again will not help.
				return &BrokerError{Code: resp.Code, Remark: resp.Remark, Addr: addr}
			case err == nil:
				err = &BrokerError{Code: resp.Code, Remark: resp.Remark, Addr: addr}
			}
		} else if err == nil {
			err = fmt.Errorf("client: broker group %s has no leader", res.Queue.BrokerName)
		}
		last = err
		if werr := bo.wait(ctx); werr != nil {
			return fmt.Errorf("%w (last: %w)", werr, last)
		}
	}
}

// serveCheck answers a CHECK_TRANSACTION_STATE: it asks the listener and
// sends the outcome, as a new END_TRANSACTION, to the broker that asked.
// The check itself gets no answer frame.
func (tp *TransactionProducer) serveCheck(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	if req.Code != remoting.CheckTransactionState {
		return nil
	}
	var h protocol.CheckTransactionStateRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		tp.opts.logger.Warn("transaction check with a bad header ignored", "error", err)
		return nil
	}
	e, _, err := message.DecodeRecord(req.Body)
	if err != nil {
		tp.opts.logger.Warn("transaction check with a bad message ignored", "error", err)
		return nil
	}
	if g := e.Properties[message.PropertyProducerGroup]; g != tp.opts.group {
		tp.opts.logger.Warn("transaction check for another producer group ignored", "group", g, "mine", tp.opts.group)
		return nil
	}
	m := &MessageExt{Ext: *e, Queue: Queue{Topic: e.Topic, BrokerName: h.BrokerName, QueueID: e.QueueID}, MsgID: e.MsgID()}
	state := tp.checkLocal(ctx, m)
	if state == TransactionUnknown {
		return nil
	}
	transactionID := h.TransactionID
	if transactionID == "" {
		transactionID = m.MsgID
	}
	end := protocol.EndTransactionRequestHeader{
		ProducerGroup:        tp.opts.group,
		TranStateTableOffset: h.TranStateTableOffset,
		CommitLogOffset:      h.CommitLogOffset,
		CommitOrRollback:     state.code(),
		FromTransactionCheck: true,
		MsgID:                m.MsgID,
		TransactionID:        transactionID,
	}
	addr := conn.RemoteAddr().String()
	ictx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
	defer cancel()
	resp, err := tp.core.rc.Invoke(ictx, addr, end.Request(""))
	if err == nil && resp.Code != remoting.Success {
		err = &BrokerError{Code: resp.Code, Remark: resp.Remark, Addr: addr}
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		tp.opts.logger.Info("check answer not delivered; the broker will ask again", "msg", m.MsgID, "error", err)
	}
	return nil
}

// checkLocal asks the listener, a panic counting as unknown.
func (tp *TransactionProducer) checkLocal(ctx context.Context, m *MessageExt) (state LocalTransactionState) {
	defer func() {
		if r := recover(); r != nil {
			tp.opts.logger.Error("transaction check panicked; outcome unknown", "panic", r)
			state = TransactionUnknown
		}
	}()
	return tp.listener.CheckLocalTransaction(ctx, m)
}
