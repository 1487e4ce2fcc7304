package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/store"
)

// Delayed messages (a DELAY property, the clients' WithDelayTimeLevel, and
// the retries of failed consumption, which the client sends with DELAY =
// 3 + reconsumeTimes).
//
// At send the leader parks a delayed message in SCHEDULE_TOPIC_XXXX, queue
// level-1, with its destination in REAL_TOPIC and REAL_QID, as RocketMQ
// does; consumers of the real topic do not see it. The scheduler, a
// goroutine of the leader, reads each level's queue in order from the
// level's progress offset, and once a message's store time plus the level's
// delay has passed, proposes its copy on the real topic and queue (DELAY
// removed, UNIQ_KEY and everything else kept) together with the new progress
// offset in ONE raft entry (dledger.ProposeWithOp). Deliveries and progress
// therefore move together on every replica: a new leader continues exactly
// where the last entry left off, so a failover neither repeats nor loses a
// delivery (docs/invariants.md I5). Progress is stored as the consumer offsets of
// the reserved group scheduleGroup on SCHEDULE_TOPIC_XXXX.

const (
	// scheduleTopic holds parked delayed messages, one queue per level.
	scheduleTopic = "SCHEDULE_TOPIC_XXXX"
	// scheduleGroup names the scheduler's progress in the offsets table.
	scheduleGroup = "%LEDGERMQ_DELAY_SCHEDULER%"
	// scheduleBatch bounds the deliveries of one level in one entry.
	scheduleBatch = 32
	// scheduleTick is the scheduler's polling period.
	scheduleTick = 100 * time.Millisecond
)

// DefaultDelayLevels is RocketMQ's messageDelayLevel table.
const DefaultDelayLevels = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

// ParseDelayLevels parses a messageDelayLevel value: durations separated by
// spaces, each a positive integer with a unit s, m, h or d (Go durations
// such as 500ms are accepted too).
func ParseDelayLevels(s string) ([]time.Duration, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 || len(fields) > 64 {
		return nil, fmt.Errorf("%w: messageDelayLevel %q: want 1 to 64 levels", ErrInvalidParameter, s)
	}
	out := make([]time.Duration, len(fields))
	for i, f := range fields {
		d, err := time.ParseDuration(f)
		if err != nil && strings.HasSuffix(f, "d") {
			var n int64
			if n, err = strconv.ParseInt(strings.TrimSuffix(f, "d"), 10, 32); err == nil {
				d = time.Duration(n) * 24 * time.Hour
			}
		}
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%w: messageDelayLevel %q: level %d %q", ErrInvalidParameter, s, i+1, f)
		}
		out[i] = d
	}
	return out, nil
}

// delayLevelOf returns the message's delay level, clamped to the table, or
// 0 when it is not delayed. Transaction half and rollback messages are
// never delayed (RocketMQ delays only plain and committed messages).
func (b *Broker) delayLevelOf(props map[string]string, sysFlag int32) int {
	v, ok := props[message.PropertyDelayLevel]
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0
	}
	if t := message.TransactionType(sysFlag); t != 0 && t != message.SysFlagTransactionCommit {
		return 0
	}
	return min(n, len(b.cfg.DelayLevels))
}

// park turns a delayed send into its parked form: the schedule topic's
// queue level-1, with the destination in REAL_TOPIC and REAL_QID. It
// refuses a destination unpark would not deliver, so that a message is
// never acknowledged and then dropped when due.
func (b *Broker) park(ctx context.Context, level int, topic string, queueID int32, props map[string]string) (string, int32, error) {
	if err := validateTopic(topic); err != nil {
		return "", 0, fmt.Errorf("delaying a message: %w", err)
	}
	if topic == scheduleTopic || queueID < 0 {
		return "", 0, fmt.Errorf("%w: cannot delay a message for %s queue %d", ErrInvalidParameter, topic, queueID)
	}
	n := int32(len(b.cfg.DelayLevels))
	if _, err := b.createTopic(ctx, metadata.TopicConfig{TopicName: scheduleTopic, ReadQueueNums: n, WriteQueueNums: n,
		Perm: metadata.PermRead | metadata.PermWrite, TopicFilterType: "SINGLE_TAG"}); err != nil {
		return "", 0, err
	}
	props[message.PropertyRealTopic] = topic
	props[message.PropertyRealQueueID] = strconv.Itoa(int(queueID))
	return scheduleTopic, int32(level - 1), nil
}

// delayScheduler delivers parked messages when due. Its goroutine (a
// leaderLoop, Start and Stop) works only while this node is the writable
// leader and the schedule topic exists.
type delayScheduler struct {
	leaderLoop
	group  delayGroup
	log    hclog.Logger
	levels []time.Duration // Config.DelayLevels
	clock  func() time.Time
	// unsettled: a delivery failed, perhaps with an unknown outcome (its
	// entry may still commit). Progress read before that entry applies
	// would deliver its messages again, so deliveries wait for a raft
	// barrier, after which every earlier entry has been applied here.
	// Touched only by the loop's goroutine.
	unsettled bool
}

// delayGroup is what the scheduler uses of the raft group.
type delayGroup interface {
	groupView
	ProposeWithOp(ctx context.Context, msgs []*message.Ext, op metadata.Op) ([]store.PutResult, error)
}

func newDelayScheduler(g delayGroup, log hclog.Logger, levels []time.Duration, clock func() time.Time) *delayScheduler {
	d := &delayScheduler{group: g, log: log, levels: levels, clock: clock}
	d.leaderLoop = leaderLoop{group: g, every: scheduleTick, topic: scheduleTopic, round: d.round}
	return d
}

// round delivers what is due on every level, a batch at a time.
func (d *delayScheduler) round(ctx context.Context) {
	if d.unsettled {
		if err := barrier(ctx, d.group); err != nil {
			return
		}
		d.unsettled = false
	}
	for level := range d.levels {
		for ctx.Err() == nil {
			n, err := d.deliverDue(ctx, int32(level))
			if err != nil {
				d.log.Warn("delayed delivery failed; retrying", "level", level+1, "error", err)
				d.unsettled = true
				return
			}
			if n < scheduleBatch {
				break
			}
		}
	}
}

// deliverDue delivers up to scheduleBatch due messages of one level's queue
// and returns how many it delivered.
func (d *delayScheduler) deliverDue(ctx context.Context, queueID int32) (int, error) {
	md := d.group.Metadata()
	from, _ := md.Offset(scheduleGroup, scheduleTopic, queueID)
	st := d.group.Store()
	res, err := st.Get(scheduleTopic, queueID, from, scheduleBatch, store.NewTagFilter("*"))
	if err != nil {
		return 0, err
	}
	defer res.Release()
	next := from
	switch res.Status {
	case store.Found:
	case store.OffsetTooSmall:
		// Retention removed parked messages never delivered: skip to the
		// first one kept, recording the jump like a delivery.
		next = res.NextBeginOffset
		d.log.Warn("parked delayed messages expired before delivery", "level", queueID+1, "from", from, "to", next)
		return 0, d.commitDelivery(ctx, queueID, nil, next)
	default:
		return 0, nil
	}
	delay := d.levels[queueID].Milliseconds()
	now := d.clock().UnixMilli()
	var out []*message.Ext
	for _, r := range res.Records {
		m, _, err := message.DecodeRecord(r.Bytes)
		if err != nil {
			return 0, fmt.Errorf("parked message at %s-%d offset %d: %w", scheduleTopic, queueID, next, err)
		}
		if m.StoreTimestamp+delay > now {
			break
		}
		if dm, ok := unpark(m); ok {
			out = append(out, dm)
		} else {
			d.log.Warn("parked message without a destination dropped", "level", queueID+1, "offset", next)
		}
		next++
	}
	if next == from {
		return 0, nil
	}
	return int(next - from), d.commitDelivery(ctx, queueID, out, next)
}

// commitDelivery proposes the delivered messages and the level's new
// progress offset in one entry.
func (d *delayScheduler) commitDelivery(ctx context.Context, queueID int32, msgs []*message.Ext, next int64) error {
	pctx, cancel := context.WithTimeout(ctx, proposeTimeout)
	defer cancel()
	op := metadata.Op{Kind: metadata.OpCommitOffsets, Offsets: []metadata.OffsetCommit{
		{Group: scheduleGroup, Topic: scheduleTopic, QueueID: queueID, Offset: next}}}
	_, err := d.group.ProposeWithOp(pctx, msgs, op)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// unpark is the delivered copy of a parked message: its real topic and
// queue, without DELAY; body, flags, born time and host, reconsume times
// and every other property (UNIQ_KEY, REAL_TOPIC, REAL_QID) kept. ok is
// false for a record that names no valid destination (sends to the
// schedule topic itself are refused, so only damage makes one).
func unpark(m *message.Ext) (*message.Ext, bool) {
	real := m.Properties[message.PropertyRealTopic]
	q, err := strconv.Atoi(m.Properties[message.PropertyRealQueueID])
	if validateTopic(real) != nil || real == scheduleTopic || err != nil || q < 0 || q > math.MaxInt32 {
		return nil, false
	}
	d := &message.Ext{
		Message:                   message.Message{Topic: real, Flag: m.Flag, Body: m.Body},
		SysFlag:                   m.SysFlag,
		BornTimestamp:             m.BornTimestamp,
		BornHost:                  m.BornHost,
		ReconsumeTimes:            m.ReconsumeTimes,
		PreparedTransactionOffset: m.PreparedTransactionOffset,
	}
	d.Properties = make(map[string]string, len(m.Properties))
	for k, v := range m.Properties {
		if k != message.PropertyDelayLevel {
			d.Properties[k] = v
		}
	}
	d.QueueID = int32(q)
	return d, true
}
