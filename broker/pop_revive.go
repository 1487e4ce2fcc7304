package broker

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
)

// The revive sweep (RocketMQ's PopReviveService): a message whose
// deliveries are used up goes to %DLQ%<group> when its last invisible
// time ends, whether or not a consumer receives again. A leaderLoop owned
// by popService, started and stopped with the broker, runs a round every
// Config.PopReviveInterval on the writable leader of a group at format
// version 4:
//
//	round ─▶ the queues holding due receipts (metadata.PopStats), from
//	         the one after the queue the last round ended on
//	      ─▶ per queue, under the receives' lock of its group and topic:
//	         the due receipts whose attempt is the group's retry max
//	         (metadata.PopDue), at most popReviveBatch per round in all
//	      ─▶ popDeadLetters: each stored in the DLQ, then its receipt
//	         deleted (OpPop), as a receive that finds them does
//
// A dead letter is two raft entries (a POP op does not travel with
// messages: its format version is not the messages-and-op entry's), so a
// leader may stop between them. The copy carries the source record's
// offset message id (popSourceProperty), and before storing one the
// leader looks for a copy of that source in the DLQ by its UNIQ_KEY (the
// index is written at apply, so a new leader past its barrier sees every
// committed copy): a failover in between deletes the receipt without a
// second copy. Each message reaches the DLQ exactly once.

const (
	// defaultPopReviveInterval is Config.PopReviveInterval's default.
	defaultPopReviveInterval = time.Second
	// popReviveBatch bounds the dead letters of one round.
	popReviveBatch = 64
	// popSourceProperty names, on a dead letter's copy, the offset message
	// id of the record it copies.
	popSourceProperty = "ledgermqPopSource"
	// popCopiesLooked bounds the DLQ copies of one UNIQ_KEY looked at.
	popCopiesLooked = 16
)

// newPopReviver is the sweep's loop (not started).
func (b *Broker) newPopReviver(every time.Duration) *leaderLoop {
	if every <= 0 {
		every = defaultPopReviveInterval
	}
	return &leaderLoop{group: b.group, every: every, round: b.popReviveRound}
}

// popReviveRound sends up to popReviveBatch used-up messages to their
// groups' DLQs.
func (b *Broker) popReviveRound(ctx context.Context) {
	defer b.pop.reviveRounds.Add(1)
	md := b.group.Metadata()
	if md.FormatVersion() < popFormatVersion {
		return
	}
	now := b.nowMs()
	var due []metadata.PopQueue
	for _, s := range md.PopStats(now, nil) {
		if s.Due > 0 {
			due = append(due, s.PopQueue)
		}
	}
	if len(due) == 0 {
		return
	}
	// From the queue after the last one served: a queue with more than a
	// round's work does not hold the others back.
	start, found := slices.BinarySearchFunc(due, b.pop.reviveAfter, comparePopQueue)
	if found {
		start++
	}
	budget := popReviveBatch
	for i := 0; i < len(due) && budget > 0 && ctx.Err() == nil; i++ {
		q := due[(start+i)%len(due)]
		budget -= b.popReviveQueue(ctx, q, now, budget)
		b.pop.reviveAfter = q
	}
}

func comparePopQueue(a, b metadata.PopQueue) int {
	return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.QueueID, b.QueueID))
}

// popReviveQueue sends up to limit used-up messages of one queue to the
// DLQ and returns how many it looked at.
func (b *Broker) popReviveQueue(ctx context.Context, q metadata.PopQueue, now int64, limit int) int {
	unlock := b.pop.lock(q.Group, q.Topic)
	defer unlock()
	due := b.group.Metadata().PopDue(q.Group, q.Topic, q.QueueID, now, b.popMaxAttempts(q.Group), limit)
	dead := make([]deadLetter, 0, len(due))
	for _, r := range due {
		// A message gone from the store (retention) has its receipt
		// deleted, nothing stored (msg nil).
		m, _ := b.popRead(q.Topic, q.QueueID, r.Offset)
		dead = append(dead, deadLetter{queueID: q.QueueID, receipt: r, msg: m})
	}
	if len(dead) > 0 {
		b.popDeadLetters(ctx, q.Group, q.Topic, dead)
	}
	return len(due)
}

// popStoreDeadLetter stores m's copy in the group's DLQ unless a copy of
// the same record is there already (stored by a leader that stopped
// before it deleted the receipt).
func (b *Broker) popStoreDeadLetter(ctx context.Context, group string, m *message.Ext, attempts int32) error {
	src := m.OffsetMsgID()
	if b.popDeadLettered(group, m.UniqKey(), src) {
		return nil
	}
	return b.storeDeadLetter(ctx, group, m, attempts, src)
}

// popDeadLettered reports whether the group's DLQ holds a copy of the
// record src (an offset message id) whose UNIQ_KEY is key.
func (b *Broker) popDeadLettered(group, key, src string) bool {
	if key == "" {
		return false
	}
	copies, err := b.group.Store().QueryByKey(protocol.DLQTopic(group), key, popCopiesLooked, 0, math.MaxInt64)
	if err != nil {
		return false
	}
	for _, c := range copies {
		if c.Properties[popSourceProperty] == src {
			return true
		}
	}
	return false
}
