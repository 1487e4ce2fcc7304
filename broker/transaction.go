package broker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
	"github.com/ledgermq/ledgermq/store"
)

// Transactional messages (RocketMQ's two-phase commit).
//
// A send with the prepared sysFlag (4) is a half message: the leader parks
// it in halfTopic, queue 0, with its destination in REAL_TOPIC and REAL_QID
// and the transaction bits cleared, so consumers of the real topic do not
// see it; the answer names the real queue, the half queue's offset
// (tranStateTableOffset) and the half's offset msgId (commitLogOffset).
//
// END_TRANSACTION (37) commits or rolls back one half message. Commit
// proposes the real message (REAL_TOPIC and REAL_QID, TRAN_MSG removed,
// sysFlag commit, PREPARED_TRANSACTION_OFFSET the half's commitlog offset)
// and an op record in opTopic in ONE raft entry; rollback proposes the op
// record alone. An op record's body is the half queue offset it settles,
// as Java writes it, and opKeyProperty names the transaction (the half's
// UNIQ_KEY), which every copy of a half message keeps.
//
// Exactly once. The leader keeps the transactions still undecided
// (pending: UNIQ_KEY → the queue offset of its latest half copy), rebuilt
// after a raft barrier whenever its view may be stale: on a new term, and
// after a proposal whose outcome is unknown. A decision is taken only for
// a pending transaction and under its key's lock, and removes it, so a
// second END_TRANSACTION (a check answer racing the producer's own, a
// retry, a duplicate forwarded by a follower) finds it decided and
// changes nothing.
//
// Check-back. Every TransactionCheckInterval the leader reads the half
// queue from the check progress (the consumer offset of txnGroup on
// halfTopic). A half copy that is not its transaction's latest, or whose
// transaction is decided, is passed. One younger than its immunity
// (TransactionTimeout, or CHECK_IMMUNITY_TIME_IN_SECONDS) stops the scan.
// Any other is either expired, when it was born longer ago than the
// CommitLog's retention (the store's FileReservedTime, as Java's check
// skips such a half message): an op record settles it, nothing is
// delivered, it is logged; or discarded, after TransactionCheckMax checks,
// into checkMaxTopic with an op record (kept where an operator can find
// it, logged); or put back at the end of the half queue with
// TRANSACTION_CHECK_TIMES one higher, and the group's producer is asked
// (CHECK_TRANSACTION_STATE, 39, on a producer connection of PGROUP learned
// from heartbeats) about that new copy. Each expiry, put-back or discard moves the
// progress in the same raft entry (ProposeWithOp), so a new leader goes on
// where the last entry left off: no storm of re-checks, nothing forgotten.
// A check counts whether or not a producer of the group was there to ask
// (as in Java): keep TransactionCheckMax × TransactionCheckInterval well
// above the 30 s producer heartbeat, or a new leader, which hears from
// the group's producers only at their next heartbeat, may discard a
// transaction nobody could be asked about.
//
// The op progress (txnGroup's offset on opTopic) moves over the op records
// that settle half offsets below the check progress; the ones above it are
// what a rebuild reads.

const (
	// halfTopic holds half messages (RocketMQ's RMQ_SYS_TRANS_HALF_TOPIC).
	halfTopic = "RMQ_SYS_TRANS_HALF_TOPIC"
	// opTopic holds op records (RMQ_SYS_TRANS_OP_HALF_TOPIC).
	opTopic = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	// checkMaxTopic keeps half messages discarded after too many checks.
	checkMaxTopic = "TRANS_CHECK_MAX_TIME_TOPIC"
	// txnGroup names the check progress in the offsets table (Java's
	// CID_SYS_RMQ_TRANS).
	txnGroup = "CID_SYS_RMQ_TRANS"
	// opTag tags op records (Java's REMOVETAG).
	opTag = "d"
	// opKeyProperty carries the settled transaction's UNIQ_KEY on an op
	// record.
	opKeyProperty = "TRAN_HALF_UNIQ_KEY"
	// txnScanBatch bounds the half copies one check round reads at once.
	txnScanBatch = 64
	// txnKeyStripes is the number of per-key decision locks.
	txnKeyStripes = 64

	// Java's defaults.
	defaultTransactionTimeout       = 6 * time.Second
	defaultTransactionCheckInterval = 30 * time.Second
	defaultTransactionCheckMax      = 15
)

// systemTopics are written by the broker itself; sends to them are refused.
var systemTopics = map[string]bool{scheduleTopic: true, halfTopic: true, opTopic: true, checkMaxTopic: true}

// parkHalf turns a prepared send into its half message: halfTopic queue 0,
// the destination in REAL_TOPIC and REAL_QID, the transaction bits of
// sysFlag cleared (the half itself is an ordinary message of halfTopic).
func (b *Broker) parkHalf(ctx context.Context, h *sendHeader, topic string, queueID int32, props map[string]string) (string, int32, error) {
	if props[message.PropertyProducerGroup] == "" {
		props[message.PropertyProducerGroup] = h.ProducerGroup
	}
	if _, err := b.ensureTopic(ctx, metadata.TopicConfig{TopicName: halfTopic, ReadQueueNums: 1, WriteQueueNums: 1,
		Perm: metadata.PermRead | metadata.PermWrite, TopicFilterType: "SINGLE_TAG"}); err != nil {
		return "", 0, err
	}
	props[message.PropertyRealTopic] = topic
	props[message.PropertyRealQueueID] = strconv.Itoa(int(queueID))
	h.SysFlag &^= message.SysFlagTransactionMask
	return halfTopic, 0, nil
}

// halfStored records a half message the leader just stored as pending.
func (b *Broker) halfStored(key string, queueOffset int64) {
	b.txn.set(key, queueOffset)
}

// ensureTxnView rebuilds the leader's view of the undecided transactions
// when it was built in another term or invalidated (txnview.go): after a
// barrier (every earlier entry applied here), it reads the op records from
// the op progress and the half copies from the check progress.
func (b *Broker) ensureTxnView(ctx context.Context) error {
	return b.txn.ensure(ctx, b.group.Role().Term, b.rebuildTxnView)
}

// rebuildTxnView is the rebuild ensureTxnView and withTxnView run.
func (b *Broker) rebuildTxnView(ctx context.Context) (map[string]int64, error) {
	if err := barrier(ctx, b.group); err != nil {
		return nil, err
	}
	pending, err := b.scanTxns()
	if err == nil {
		b.log.Debug("transaction view rebuilt", "term", b.group.Role().Term, "pending", len(pending))
	}
	return pending, err
}

// withTxnView runs decide on a fresh view that no rebuild replaces until
// it returns (txnview.go): every decision, every half message stored.
func (b *Broker) withTxnView(ctx context.Context, decide func() error) error {
	return b.txn.decide(ctx, func() uint64 { return b.group.Role().Term }, b.rebuildTxnView, decide)
}

// txnProgress is the check progress (half queue) and the op progress.
func (b *Broker) txnProgress() (half, op int64) {
	md := b.group.Metadata()
	half, _ = md.Offset(txnGroup, halfTopic, 0)
	op, _ = md.Offset(txnGroup, opTopic, 0)
	return half, op
}

// scanTxns returns the undecided transactions of the half queue from the
// check progress on.
func (b *Broker) scanTxns() (map[string]int64, error) {
	halfFrom, opFrom := b.txnProgress()
	settledOff := map[int64]bool{}
	settledKey := map[string]bool{}
	err := b.eachRecord(opTopic, opFrom, func(_ int64, m *message.Ext) (bool, error) {
		if off, err := strconv.ParseInt(string(m.Body), 10, 64); err == nil && off >= halfFrom {
			settledOff[off] = true
			if k := m.Properties[opKeyProperty]; k != "" {
				settledKey[k] = true
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	pending := map[string]int64{}
	err = b.eachRecord(halfTopic, halfFrom, func(off int64, m *message.Ext) (bool, error) {
		k := m.UniqKey()
		if settledOff[off] || settledKey[k] {
			delete(pending, k)
			return true, nil
		}
		pending[k] = off
		return true, nil
	})
	return pending, err
}

// eachRecord calls visit for every message of topic's queue 0 from offset
// from (the queue's first kept one if that is gone) until visit says stop
// or the queue ends.
func (b *Broker) eachRecord(topic string, from int64, visit func(off int64, m *message.Ext) (bool, error)) error {
	if _, ok := b.group.Metadata().Topic(topic); !ok {
		return nil
	}
	st := b.group.Store()
	for {
		res, err := st.Get(topic, 0, from, txnScanBatch, store.NewTagFilter("*"))
		if err != nil {
			return err
		}
		switch res.Status {
		case store.Found:
		case store.OffsetTooSmall:
			from = res.NextBeginOffset
			res.Release()
			continue
		default:
			res.Release()
			return nil
		}
		for _, r := range res.Records {
			m, _, err := message.DecodeRecord(r.Bytes)
			if err != nil {
				res.Release()
				return fmt.Errorf("%s offset %d: %w", topic, from, err)
			}
			more, err := visit(from, m)
			if err != nil || !more {
				res.Release()
				return err
			}
			from++
		}
		res.Release()
	}
}

// serveEndTransaction runs on a send-pool worker. The leader decides;
// another node forwards to it. Unknown (0) is not answered, as Java does.
func (b *Broker) serveEndTransaction(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	if !b.group.IsLeader() {
		return b.forwardLeader(ctx, conn, req)
	}
	var h protocol.EndTransactionRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return errorResponse(req, fmt.Errorf("%w: %w", ErrBadRequest, err))
	}
	if h.CommitOrRollback == protocol.TransactionNotType {
		return nil
	}
	if err := b.endTransaction(ctx, &h); err != nil {
		b.log.Info("end transaction refused", "msg", h.MsgID, "offset", h.CommitLogOffset, "check", h.FromTransactionCheck, "error", err)
		return errorResponse(req, err)
	}
	return remoting.NewResponse(req, remoting.Success, "")
}

// endTransaction commits or rolls back the half message h names. A
// transaction already decided is answered success and left as it is.
func (b *Broker) endTransaction(ctx context.Context, h *protocol.EndTransactionRequestHeader) error {
	half, err := b.group.Store().MessageAt(h.CommitLogOffset)
	if err != nil {
		return fmt.Errorf("%w: no half message at commitlog offset %d: %w", ErrBadRequest, h.CommitLogOffset, err)
	}
	switch {
	case half.Topic != halfTopic:
		return fmt.Errorf("%w: commitlog offset %d holds a message of %s, not a half message", ErrBadRequest, h.CommitLogOffset, half.Topic)
	case half.Properties[message.PropertyProducerGroup] != h.ProducerGroup:
		return fmt.Errorf("%w: the producer group wrong: half message of %q, request of %q",
			ErrBadRequest, half.Properties[message.PropertyProducerGroup], h.ProducerGroup)
	case half.QueueOffset != h.TranStateTableOffset:
		return fmt.Errorf("%w: the transaction state table offset wrong: %d, half message at %d",
			ErrBadRequest, h.TranStateTableOffset, half.QueueOffset)
	}
	key := half.UniqKey()
	lock := b.txn.keyLock(key)
	lock.Lock()
	defer lock.Unlock()
	return b.withTxnView(ctx, func() error { return b.decideTxn(ctx, h, half, key) })
}

// decideTxn proposes the decision of h about half, the latest copy of
// transaction key, on a fresh view under key's lock.
func (b *Broker) decideTxn(ctx context.Context, h *protocol.EndTransactionRequestHeader, half *message.Ext, key string) error {
	latest, pending := b.txn.latest(key)
	if !pending {
		return nil // decided before, or discarded
	}
	op := b.opRecord(key, latest)
	msgs := []*message.Ext{op}
	if h.CommitOrRollback == protocol.TransactionCommit {
		real, err := committed(half)
		if err != nil {
			return err
		}
		if _, ok := b.group.Metadata().Topic(real.Topic); !ok {
			return fmt.Errorf("%w: the transaction's topic %s no longer exists", ErrTopicNotExist, real.Topic)
		}
		msgs = []*message.Ext{real, op}
	}
	if err := b.ensureTxnTopics(ctx); err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, proposeTimeout)
	defer cancel()
	if _, err := b.group.Propose(pctx, msgs); err != nil {
		// It may still commit: look again before the next decision.
		b.txn.invalidate()
		return err
	}
	b.txn.done(key)
	return nil
}

// opRecord is the op record settling the half copy at queue offset off of
// transaction key.
func (b *Broker) opRecord(key string, off int64) *message.Ext {
	return &message.Ext{
		Message: message.Message{Topic: opTopic, Body: []byte(strconv.FormatInt(off, 10)),
			Properties: map[string]string{message.PropertyTags: opTag, opKeyProperty: key, message.PropertyCluster: b.cfg.ClusterName}},
		QueueID:       0,
		BornTimestamp: b.cfg.Clock().UnixMilli(),
	}
}

// ensureTxnTopics creates the op topic (and the half topic's siblings).
func (b *Broker) ensureTxnTopics(ctx context.Context) error {
	_, err := b.ensureTopic(ctx, metadata.TopicConfig{TopicName: opTopic, ReadQueueNums: 1, WriteQueueNums: 1,
		Perm: metadata.PermRead | metadata.PermWrite, TopicFilterType: "SINGLE_TAG"})
	return err
}

// committed is the real message of a half: its topic and queue, sysFlag
// commit, TRAN_MSG, REAL_TOPIC and REAL_QID removed, the half's commitlog
// offset as PREPARED_TRANSACTION_OFFSET; body, flags, born time and host,
// UNIQ_KEY and every other property kept.
func committed(half *message.Ext) (*message.Ext, error) {
	real := half.Properties[message.PropertyRealTopic]
	q, err := strconv.ParseInt(half.Properties[message.PropertyRealQueueID], 10, 32)
	if validateTopic(real) != nil || systemTopics[real] || err != nil || q < 0 {
		return nil, fmt.Errorf("%w: half message at %d names no valid destination (%q, %q)", ErrBadRequest,
			half.PhysicalOffset, real, half.Properties[message.PropertyRealQueueID])
	}
	m := &message.Ext{
		Message:                   message.Message{Topic: real, Flag: half.Flag, Body: half.Body},
		QueueID:                   int32(q),
		SysFlag:                   half.SysFlag&^message.SysFlagTransactionMask | message.SysFlagTransactionCommit,
		BornTimestamp:             half.BornTimestamp,
		BornHost:                  half.BornHost,
		ReconsumeTimes:            half.ReconsumeTimes,
		PreparedTransactionOffset: half.PhysicalOffset,
	}
	m.Properties = make(map[string]string, len(half.Properties))
	for k, v := range half.Properties {
		switch k {
		case message.PropertyTransactionPrepared, message.PropertyRealTopic, message.PropertyRealQueueID,
			message.PropertyTransactionCheckTimes:
		default:
			m.Properties[k] = v
		}
	}
	return m, nil
}
