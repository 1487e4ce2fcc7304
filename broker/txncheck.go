package broker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
)

// newTxnChecker is the transaction check-back: a leaderLoop (Start, Stop)
// that works only while this node is the writable leader and a half
// message was ever stored. Its rounds read and write the broker's
// transaction view (txnState) and ask producers through the client
// registry, so the round stays a broker method.
func (b *Broker) newTxnChecker() *leaderLoop {
	return &leaderLoop{group: b.group, every: b.cfg.TransactionCheckInterval, topic: halfTopic,
		round: func(ctx context.Context) {
			if err := b.checkRound(ctx); err != nil && ctx.Err() == nil {
				b.log.Warn("transaction check round failed; next round retries", "error", err)
			}
		}}
}

// checkRound scans the half queue once, from the check progress to the end
// it had when the round began (copies put back during the round wait for
// the next one).
func (b *Broker) checkRound(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, 2*proposeTimeout)
	defer cancel()
	if err := b.ensureTxnView(ctx); err != nil {
		return err
	}
	from, opFrom := b.txnProgress()
	end, err := b.group.Store().MaxOffset(halfTopic, 0)
	if err != nil {
		return err
	}
	opNext, err := b.opProgress(opFrom, from)
	if err != nil {
		return err
	}
	now := b.cfg.Clock().UnixMilli()
	next := from
	err = b.eachRecord(halfTopic, from, func(off int64, m *message.Ext) (bool, error) {
		if off >= end {
			return false, nil
		}
		key := m.UniqKey()
		if latest, ok := b.txn.latest(key); !ok || latest != off {
			next = off + 1 // decided, or superseded by a later copy
			return true, nil
		}
		if now-m.BornTimestamp < b.immunity(m).Milliseconds() {
			return false, nil
		}
		if err := b.checkHalf(ctx, off, m, opNext); err != nil {
			return false, err
		}
		next = off + 1
		return true, nil
	})
	if err != nil {
		return err
	}
	cur, curOp := b.txnProgress()
	if next > cur || opNext > curOp {
		return b.group.ProposeMetadata(ctx, txnProgressOp(next, opNext))
	}
	return nil
}

// immunity is how long after its birth a half message is left alone: its
// CHECK_IMMUNITY_TIME_IN_SECONDS, or TransactionTimeout.
func (b *Broker) immunity(m *message.Ext) time.Duration {
	if v, ok := m.Properties[message.PropertyCheckImmunityTimeInSeconds]; ok {
		if s, err := strconv.ParseInt(v, 10, 32); err == nil && s > 0 {
			return time.Duration(s) * time.Second
		}
	}
	return b.cfg.TransactionTimeout
}

// opProgress moves the op progress over the op records that settle half
// offsets below halfFrom, a contiguous prefix from opFrom.
func (b *Broker) opProgress(opFrom, halfFrom int64) (int64, error) {
	next := opFrom
	err := b.eachRecord(opTopic, opFrom, func(off int64, m *message.Ext) (bool, error) {
		settled, err := strconv.ParseInt(string(m.Body), 10, 64)
		if err == nil && settled >= halfFrom {
			return false, nil
		}
		next = off + 1
		return true, nil
	})
	return next, err
}

// txnProgressOp moves the check and the op progress.
func txnProgressOp(half, op int64) metadata.Op {
	return metadata.Op{Kind: metadata.OpCommitOffsets, Offsets: []metadata.OffsetCommit{
		{Group: txnGroup, Topic: halfTopic, QueueID: 0, Offset: half},
		{Group: txnGroup, Topic: opTopic, QueueID: 0, Offset: op}}}
}

// checkHalf settles the due half copy at off: discarded after
// TransactionCheckMax checks, else put back with one more check and its
// producer group asked. Either moves the check progress past off in the
// same entry.
func (b *Broker) checkHalf(ctx context.Context, off int64, m *message.Ext, opNext int64) error {
	key := m.UniqKey()
	lock := b.txn.keyLock(key)
	lock.Lock()
	defer lock.Unlock()
	return b.withTxnView(ctx, func() error { return b.settleHalf(ctx, off, m, key, opNext) })
}

// settleHalf is checkHalf's decision, on a fresh view under key's lock.
func (b *Broker) settleHalf(ctx context.Context, off int64, m *message.Ext, key string, opNext int64) error {
	if latest, ok := b.txn.latest(key); !ok || latest != off {
		return nil // decided meanwhile
	}
	times, _ := strconv.Atoi(m.Properties[message.PropertyTransactionCheckTimes])
	progress := txnProgressOp(off+1, opNext)
	pctx, cancel := context.WithTimeout(ctx, proposeTimeout)
	defer cancel()
	if age := time.Duration(b.cfg.Clock().UnixMilli()-m.BornTimestamp) * time.Millisecond; age > b.group.Store().FileReservedTime() {
		// As Java's check skips a half message born longer ago than the
		// CommitLog's retention: it expires undecided, and nothing is
		// delivered. The op record settles it for every later view.
		if err := b.ensureTxnTopics(pctx); err != nil {
			return err
		}
		if _, err := b.group.ProposeWithOp(pctx, []*message.Ext{b.opRecord(key, off)}, progress); err != nil {
			b.txn.invalidate()
			return err
		}
		b.txn.done(key)
		b.log.Warn("undecided transaction expired: born longer ago than the retention time; never delivered", "msg", key,
			"producerGroup", m.Properties[message.PropertyProducerGroup], "topic", m.Properties[message.PropertyRealTopic],
			"age", age.Round(time.Second), "checks", times)
		return nil
	}
	if times >= b.cfg.TransactionCheckMax {
		if err := b.ensureTxnTopics(pctx); err != nil {
			return err
		}
		if _, err := b.ensureTopic(pctx, metadata.TopicConfig{TopicName: checkMaxTopic, ReadQueueNums: 1, WriteQueueNums: 1,
			Perm: metadata.PermRead | metadata.PermWrite, TopicFilterType: "SINGLE_TAG"}); err != nil {
			return err
		}
		kept := copyHalf(m, checkMaxTopic, times)
		if _, err := b.group.ProposeWithOp(pctx, []*message.Ext{kept, b.opRecord(key, off)}, progress); err != nil {
			b.txn.invalidate()
			return err
		}
		b.txn.done(key)
		b.log.Warn("transaction discarded after the maximum of checks; kept in "+checkMaxTopic, "msg", key,
			"producerGroup", m.Properties[message.PropertyProducerGroup], "topic", m.Properties[message.PropertyRealTopic], "checks", times)
		return nil
	}
	again := copyHalf(m, halfTopic, times+1)
	res, err := b.group.ProposeWithOp(pctx, []*message.Ext{again}, progress)
	if err != nil {
		b.txn.invalidate()
		return err
	}
	if len(res) != 1 {
		return fmt.Errorf("broker: %d results for one half message", len(res))
	}
	b.txn.set(key, res[0].QueueOffset)
	b.askProducer(again, res[0].QueueOffset, res[0].PhysicalOffset, res[0].MsgID)
	return nil
}

// copyHalf is a copy of a half message for topic (queue 0) with its check
// count set to times; everything else, born time and UNIQ_KEY included,
// kept.
func copyHalf(m *message.Ext, topic string, times int) *message.Ext {
	c := &message.Ext{
		Message:        message.Message{Topic: topic, Flag: m.Flag, Body: m.Body},
		SysFlag:        m.SysFlag,
		BornTimestamp:  m.BornTimestamp,
		BornHost:       m.BornHost,
		ReconsumeTimes: m.ReconsumeTimes,
	}
	c.Properties = make(map[string]string, len(m.Properties)+1)
	for k, v := range m.Properties {
		c.Properties[k] = v
	}
	c.Properties[message.PropertyTransactionCheckTimes] = strconv.Itoa(times)
	return c
}

// askProducer asks one live producer of the half copy's group about the
// copy stored at (queueOffset, phy), one-way — a remoting producer with
// CHECK_TRANSACTION_STATE, one another front end serves through its
// TxnAsker — taking them in random order until one can be asked: the
// answer comes as an END_TRANSACTION. No producer could be: the next round
// asks again (the copy still counts as checked).
func (b *Broker) askProducer(half *message.Ext, queueOffset, phy int64, offsetMsgID string) {
	group := half.Properties[message.PropertyProducerGroup]
	conns := b.consumers.producerConns(group)
	askers := b.txnAskers.of(group)
	if len(conns)+len(askers) == 0 {
		b.log.Debug("no producer of the group to check a transaction with", "producerGroup", group, "msg", half.UniqKey())
		return
	}
	real := *half
	real.Properties = make(map[string]string, len(half.Properties))
	for k, v := range half.Properties {
		real.Properties[k] = v
	}
	real.Topic = half.Properties[message.PropertyRealTopic]
	if q, err := strconv.ParseInt(half.Properties[message.PropertyRealQueueID], 10, 32); err == nil {
		real.QueueID = int32(q)
	}
	real.QueueOffset, real.PhysicalOffset = queueOffset, phy
	real.StoreTimestamp = b.cfg.Clock().UnixMilli()
	real.StoreHost = b.storeHost()
	rec, err := message.AppendRecord(nil, &real)
	if err != nil {
		b.log.Warn("transaction check not sent: the half message does not encode", "msg", half.UniqKey(), "error", err)
		return
	}
	h := protocol.CheckTransactionStateRequestHeader{TranStateTableOffset: queueOffset, CommitLogOffset: phy,
		MsgID: half.UniqKey(), TransactionID: half.UniqKey(), OffsetMsgID: offsetMsgID, Topic: real.Topic, BrokerName: b.cfg.BrokerName}
	check := TxnCheck{Msg: &real, QueueOffset: queueOffset, CommitLogOffset: phy, OffsetMsgID: offsetMsgID}
	for _, i := range rand.Perm(len(conns) + len(askers)) {
		if i >= len(conns) {
			if askers[i-len(conns)](check) {
				return
			}
			continue
		}
		err := conns[i].Oneway(h.Request(rec))
		if err == nil {
			return
		}
		b.log.Debug("transaction check not sent", "producerGroup", group, "msg", half.UniqKey(), "error", err)
	}
}

// storeHost is the address offset message ids of this node name.
func (b *Broker) storeHost() netip.AddrPort { return b.cfg.StoreHost }
