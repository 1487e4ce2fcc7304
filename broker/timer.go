package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/store"
	"github.com/ledgermq/ledgermq/timerwheel"
)

// Timer messages (RocketMQ 5's TIMER_DELIVER_MS, TIMER_DELAY_SEC,
// TIMER_DELAY_MS; the Go client's WithDelayTimestamp): any delay up to
// Config.TimerMaxDelay.
//
// At send the leader turns the request into a due time (absolute for
// TIMER_DELIVER_MS, relative to its clock for the other two), refuses one
// beyond the maximum (MESSAGE_ILLEGAL, as Java's WHEEL_TIMER_MSG_ILLEGAL),
// stores one already due at once (as Java), and otherwise parks the
// message in timerTopic queue 0 with REAL_TOPIC, REAL_QID and TIMER_OUT_MS
// = the due time. A DELAY level wins over timer properties, which are then
// dropped (as Java); a message carrying TIMER_OUT_MS (a delivered copy
// sent again) is not a timer. Batches and transaction half messages with
// timer properties are refused (MESSAGE_ILLEGAL) rather than delivered
// early.
//
// Every replica indexes the parked queue into a timerwheel.Wheel as it
// applies it (timer_index.go); the leader's scheduler (timer_sched.go)
// delivers from it. Progress is replicated as consumer offsets of
// timerGroup on timerTopic, moved in the same raft entry as the deliveries
// (dledger.ProposeWithOp), so a failover neither repeats nor loses one:
//
//	queue  meaning
//	-----  -----------------------------------------------------------
//	0      Q: parked offsets below Q have been considered
//	1      R.Due ┐ the delivery cursor: delivered = {q < Q, (due, q) < R}
//	2      R.Q   ┘
//	3      D: how many parked messages were delivered (or dropped)

const (
	// timerTopic holds parked timer messages (RocketMQ's
	// rmq_sys_wheel_timer), one queue.
	timerTopic = "rmq_sys_wheel_timer"
	// timerGroup names the timer scheduler's progress in the offsets
	// table.
	timerGroup = "%LEDGERMQ_TIMER_SCHEDULER%"
	// propertyTimerOutMS is the due time of a parked timer message, kept
	// on the delivered copy (RocketMQ's TIMER_OUT_MS).
	propertyTimerOutMS = "TIMER_OUT_MS"
	// DefaultTimerMaxDelay is RocketMQ's timerMaxDelaySec (3 days).
	DefaultTimerMaxDelay = 3 * 24 * time.Hour
)

// Progress slots (queue ids of timerGroup on timerTopic).
const (
	timerEnqueued int32 = iota
	timerCursorDue
	timerCursorQ
	timerDelivered
)

func init() { systemTopics[timerTopic] = true }

// timerRaft is what the timer service needs of the raft group: the
// writable-leader test, the replicated metadata (its progress), the store
// (the parked queue), the one-entry proposal of deliveries with their
// progress, and a barrier after an unknown outcome.
type timerRaft interface {
	IsLeader() bool
	Metadata() *metadata.State
	Store() MessageStore
	ProposeWithOp(ctx context.Context, msgs []*message.Ext, op metadata.Op) ([]store.PutResult, error)
	Barrier(ctx context.Context) error
}

// timerReplica is the group as the timer service sees it: a barrier that
// fails is the broker's ErrNoLeader.
type timerReplica struct{ Replica }

func (g timerReplica) Barrier(ctx context.Context) error {
	if err := g.Replica.Barrier(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrNoLeader, err)
	}
	return nil
}

// timerProgress is the replicated progress (see the table above).
type timerProgress struct {
	Q      int64
	R      timerwheel.Key
	Done   int64
	loaded bool
}

func readTimerProgress(md *metadata.State) timerProgress {
	get := func(q int32) int64 {
		v, _ := md.Offset(timerGroup, timerTopic, q)
		return v
	}
	return timerProgress{Q: get(timerEnqueued), R: timerwheel.Key{Due: get(timerCursorDue), Q: get(timerCursorQ)}, Done: get(timerDelivered), loaded: true}
}

func (p timerProgress) op() metadata.Op {
	return metadata.Op{Kind: metadata.OpCommitOffsets, Offsets: []metadata.OffsetCommit{
		{Group: timerGroup, Topic: timerTopic, QueueID: timerEnqueued, Offset: p.Q},
		{Group: timerGroup, Topic: timerTopic, QueueID: timerCursorDue, Offset: p.R.Due},
		{Group: timerGroup, Topic: timerTopic, QueueID: timerCursorQ, Offset: p.R.Q},
		{Group: timerGroup, Topic: timerTopic, QueueID: timerDelivered, Offset: p.Done},
	}}
}

// timerConfig is what the service takes from the broker's Config.
type timerConfig struct {
	Dir      string
	MaxDelay time.Duration
	Clock    func() time.Time
	Logger   hclog.Logger
	// SegmentRecords sizes the wheel's files (0: the wheel's default).
	SegmentRecords int64
}

// timerService owns the timer index and the scheduler: two goroutines,
// started by start and stopped by stop (which also closes the wheel).
type timerService struct {
	cfg   timerConfig
	log   hclog.Logger
	g     timerRaft
	wheel *timerwheel.Wheel

	indexWake chan struct{}
	schedWake chan struct{}
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	stopOnce  sync.Once
	stopErr   error
	// behindSince: since when the scheduler has found the index behind
	// the parked queue (zero: it is not); the scheduler's goroutine only.
	behindSince time.Time
	// mu is held by a scheduler round and by a recall (recall.go): no
	// delivery is decided while a recall is being recorded. lastDrop is
	// when the scheduler last dropped recalls (under mu).
	mu       sync.Mutex
	lastDrop time.Time
}

// timerDir is where a node keeps its timer index: beside the store.
func timerDir(cfg Config, st MessageStore) string {
	if cfg.TimerDir != "" {
		return cfg.TimerDir
	}
	return filepath.Join(filepath.Dir(st.Dir()), "timerwheel")
}

// newTimerService opens the wheel and checks it against the parked queue.
func newTimerService(cfg timerConfig, g timerRaft) (*timerService, error) {
	w, err := timerwheel.Open(timerwheel.Config{Dir: cfg.Dir, SegmentRecords: cfg.SegmentRecords, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("broker: timer index: %w", err)
	}
	s := &timerService{cfg: cfg, log: cfg.Logger, g: g, wheel: w,
		indexWake: make(chan struct{}, 1), schedWake: make(chan struct{}, 1)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.checkIndex(); err != nil {
		_ = w.Close()
		return nil, err
	}
	return s, nil
}

func (s *timerService) start() {
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.indexLoop(s.ctx)
	}()
	go func() {
		defer s.wg.Done()
		s.scheduleLoop(s.ctx)
	}()
}

// stop ends both goroutines and closes the wheel (its checkpoint then
// covers everything indexed). Safe to call more than once.
func (s *timerService) stop() error {
	s.stopOnce.Do(func() {
		s.cancel()
		s.wg.Wait()
		s.stopErr = s.wheel.Close()
	})
	return s.stopErr
}

// notify is the store's dispatch hook for the parked queue: index it now.
func (s *timerService) notify() { poke(s.indexWake) }

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// timerDue reads the timer properties of a send: ok is false when the
// message is not a timer (none, a DELAY level, a copy already delivered,
// or a due time already passed: it is stored at once). A value that does
// not parse, or a due time beyond the maximum, is ErrMessageIllegal.
func (b *Broker) timerDue(props map[string]string) (due int64, ok bool, err error) {
	deliver, hasDeliver := props[message.PropertyTimerDeliverMS]
	sec, hasSec := props[message.PropertyTimerDelaySec]
	ms, hasMS := props[message.PropertyTimerDelayMS]
	if !hasDeliver && !hasSec && !hasMS {
		return 0, false, nil
	}
	if _, out := props[propertyTimerOutMS]; out {
		return 0, false, nil
	}
	if v, lvl := props[message.PropertyDelayLevel]; lvl {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
			delete(props, message.PropertyTimerDeliverMS)
			delete(props, message.PropertyTimerDelaySec)
			delete(props, message.PropertyTimerDelayMS)
			return 0, false, nil
		}
	}
	now := b.cfg.Clock().UnixMilli()
	parse := func(k, v string, unit int64) (int64, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n > (math.MaxInt64-now)/unit || n < -(now/unit) {
			return 0, fmt.Errorf("%w: timer message illegal: %s=%q", ErrMessageIllegal, k, v)
		}
		return n * unit, nil
	}
	switch {
	case hasSec:
		d, err := parse(message.PropertyTimerDelaySec, sec, 1000)
		if err != nil {
			return 0, false, err
		}
		due = now + d
	case hasMS:
		d, err := parse(message.PropertyTimerDelayMS, ms, 1)
		if err != nil {
			return 0, false, err
		}
		due = now + d
	default:
		n, err := strconv.ParseInt(strings.TrimSpace(deliver), 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("%w: timer message illegal: %s=%q", ErrMessageIllegal, message.PropertyTimerDeliverMS, deliver)
		}
		due = n
	}
	if due <= now {
		return 0, false, nil
	}
	if maxMs := b.cfg.TimerMaxDelay.Milliseconds(); due-now > maxMs {
		return 0, false, fmt.Errorf("%w: timer message illegal, the delay time should not be bigger than the max delay %dms", ErrMessageIllegal, maxMs)
	}
	return due, true, nil
}

// parkTimer turns a timer send into its parked form: timerTopic queue 0,
// the destination in REAL_TOPIC and REAL_QID, the due time in
// TIMER_OUT_MS.
func (b *Broker) parkTimer(ctx context.Context, due int64, topic string, queueID int32, props map[string]string) (string, int32, error) {
	if err := validateTopic(topic); err != nil {
		return "", 0, fmt.Errorf("timing a message: %w", err)
	}
	if systemTopics[topic] || queueID < 0 {
		return "", 0, fmt.Errorf("%w: cannot time a message for %s queue %d", ErrInvalidParameter, topic, queueID)
	}
	if _, err := b.createTopic(ctx, metadata.TopicConfig{TopicName: timerTopic, ReadQueueNums: 1, WriteQueueNums: 1,
		Perm: metadata.PermRead | metadata.PermWrite, TopicFilterType: "SINGLE_TAG"}); err != nil {
		return "", 0, err
	}
	props[message.PropertyRealTopic] = topic
	props[message.PropertyRealQueueID] = strconv.Itoa(int(queueID))
	props[propertyTimerOutMS] = strconv.FormatInt(due, 10)
	return timerTopic, 0, nil
}

// unparkTimer is the delivered copy of a parked timer message: its real
// topic and queue, the timer properties removed, TIMER_OUT_MS (its due
// time) and everything else kept. ok is false for a record that names no
// valid destination.
func unparkTimer(m *message.Ext) (*message.Ext, bool) {
	d, ok := unpark(m)
	if !ok || systemTopics[d.Topic] {
		return nil, false
	}
	delete(d.Properties, message.PropertyTimerDeliverMS)
	delete(d.Properties, message.PropertyTimerDelaySec)
	delete(d.Properties, message.PropertyTimerDelayMS)
	return d, true
}

// dueOfParked is the due time a parked record carries; ok is false when
// it carries none that is valid (the record is then indexed as Gone).
func dueOfParked(props map[string]string) (int64, bool) {
	v, err := strconv.ParseInt(props[propertyTimerOutMS], 10, 64)
	return v, err == nil && v > 0
}

// errTimerIndexBehind: the local index has not reached the replicated
// progress yet (a node that just became leader catching up).
var errTimerIndexBehind = errors.New("broker: timer index behind the progress")
