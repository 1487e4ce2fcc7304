package client

import (
	"fmt"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
)

// Consumer defaults, as RocketMQ's push consumer has them unless noted.
const (
	DefaultConsumerGroup = "DEFAULT_CONSUMER"
	// DefaultPullBatchSize is maxMsgNums of every pull.
	DefaultPullBatchSize = 32
	// DefaultLongPollTimeout is how long a broker may hold a pull that
	// finds nothing (suspendTimeoutMillis); the pull's own timeout is
	// this plus pullTimeoutMargin.
	DefaultLongPollTimeout = 20 * time.Second
	// DefaultConsumeGoroutines sizes the push consumer's worker pool.
	DefaultConsumeGoroutines = 20
	// DefaultQueueMaxMessages and DefaultQueueMaxBytes: a queue whose
	// cached, unconsumed messages exceed either stops being pulled until
	// its consumption catches up (pullThresholdForQueue,
	// pullThresholdSizeForQueue).
	DefaultQueueMaxMessages = 1000
	DefaultQueueMaxBytes    = 100 << 20
	// DefaultMaxReconsumeTimes: a message failed this many times goes to
	// the group's %DLQ% topic (the broker decides, from the value the
	// send-back carries).
	DefaultMaxReconsumeTimes = 16
	DefaultHeartbeatInterval = 30 * time.Second
	DefaultRebalanceInterval = 20 * time.Second
	DefaultCommitInterval    = 5 * time.Second
	// DefaultPullErrorBackoff is the wait after a pull answered with an
	// error that a new route does not cure (RocketMQ: 3 s).
	DefaultPullErrorBackoff = 3 * time.Second
	// pullTimeoutMargin is added to the long-poll hold for a pull's
	// timeout (RocketMQ: 20 s hold, 30 s timeout).
	pullTimeoutMargin = 10 * time.Second
	// brokerCallTimeout bounds the short consumer requests (offsets,
	// heartbeat, consumer list, send-back), as RocketMQ's 3 s.
	brokerCallTimeout = 3 * time.Second
	// maxInflatedBody bounds an inflated body (zlib bombs).
	maxInflatedBody = 64 << 20
	// DefaultSuspendCurrentQueueTime is how long an orderly consumer
	// waits before it consumes again a message its handler asked to
	// retry (suspendCurrentQueueTimeMillis, 1 s).
	DefaultSuspendCurrentQueueTime = time.Second
	// DefaultLockRenewInterval is the period an orderly consumer renews
	// its queue locks at (RocketMQ: 20 s; the broker's lease is 60 s).
	DefaultLockRenewInterval = 20 * time.Second
	// lockLocalExpiry: a queue whose lock was last granted longer ago is
	// no longer consumed until a renewal grants it again (RocketMQ's
	// rocketmq.client.rebalance.lockMaxLiveTime, 30 s).
	lockLocalExpiry = 30 * time.Second
	// DefaultMaxTimeConsumeContinuously is how long an orderly consumer's
	// worker keeps one queue before it lets a queue that waits for a
	// worker go first (RocketMQ's rocketmq.client.maxTimeConsumeContinuously,
	// 60 s).
	DefaultMaxTimeConsumeContinuously = 60 * time.Second
	// giveAwayWait bounds how long a rebalance waits for the running
	// handler of an orderly queue it gives away before it leaves the
	// commit and unlock of that queue to a goroutine of their own (Java
	// waits 1 s for the queue's consume lock), so one slow handler does
	// not hold up the rest of the rebalance.
	giveAwayWait = time.Second
)

// ConsumeFromWhere says where a consumer group starts on a queue for
// which it has no committed offset. Note: ledgermq brokers (like Java
// ones) answer offset 0 for a queue whose first message is still stored,
// so a new group reads a young queue from its start whatever this says;
// the setting matters once a queue's head has been deleted.
type ConsumeFromWhere int

const (
	// ConsumeFromLastOffset starts at the queue's end (the default).
	ConsumeFromLastOffset ConsumeFromWhere = iota
	// ConsumeFromFirstOffset starts at the queue's first stored message.
	ConsumeFromFirstOffset
	// ConsumeFromTimestamp starts at the first message stored at or
	// after WithConsumeTimestamp's time (default: 30 minutes ago).
	ConsumeFromTimestamp
)

func (w ConsumeFromWhere) String() string {
	switch w {
	case ConsumeFromLastOffset:
		return "CONSUME_FROM_LAST_OFFSET"
	case ConsumeFromFirstOffset:
		return "CONSUME_FROM_FIRST_OFFSET"
	case ConsumeFromTimestamp:
		return "CONSUME_FROM_TIMESTAMP"
	}
	return fmt.Sprintf("ConsumeFromWhere(%d)", int(w))
}

// MessageModel says how a push consumer group shares messages.
type MessageModel int

const (
	// Clustering: each message goes to one member of the group; the
	// queues are shared out among the members, offsets live on the
	// brokers (the default).
	Clustering MessageModel = iota
	// Broadcasting: every member gets every message; offsets are kept in
	// the consumer's memory, failed messages are not retried.
	Broadcasting
)

func (m MessageModel) String() string {
	if m == Broadcasting {
		return "BROADCASTING"
	}
	return "CLUSTERING"
}

type consumerOptions struct {
	fromWhere         ConsumeFromWhere
	timestamp         time.Time
	model             MessageModel
	allocate          AllocateStrategy
	goroutines        int
	pullBatch         int
	longPoll          time.Duration
	queueMaxMsgs      int
	queueMaxBytes     int
	maxReconsume      int
	retryDelayLevel   int
	heartbeatInterval time.Duration
	rebalanceInterval time.Duration
	commitInterval    time.Duration
	pullErrorBackoff  time.Duration
	instance          string
	orderly           bool
	suspend           time.Duration
	lockRenew         time.Duration
	timeSlice         time.Duration
}

func defaultConsumerOptions() consumerOptions {
	return consumerOptions{
		allocate:          AllocateAveragely,
		goroutines:        DefaultConsumeGoroutines,
		pullBatch:         DefaultPullBatchSize,
		longPoll:          DefaultLongPollTimeout,
		queueMaxMsgs:      DefaultQueueMaxMessages,
		queueMaxBytes:     DefaultQueueMaxBytes,
		maxReconsume:      DefaultMaxReconsumeTimes,
		heartbeatInterval: DefaultHeartbeatInterval,
		rebalanceInterval: DefaultRebalanceInterval,
		commitInterval:    DefaultCommitInterval,
		pullErrorBackoff:  DefaultPullErrorBackoff,
		suspend:           DefaultSuspendCurrentQueueTime,
		lockRenew:         DefaultLockRenewInterval,
		timeSlice:         DefaultMaxTimeConsumeContinuously,
	}
}

// WithConsumeFromWhere sets where a group with no committed offset for a
// queue starts (default ConsumeFromLastOffset; see ConsumeFromWhere).
func WithConsumeFromWhere(w ConsumeFromWhere) Option {
	return func(o *options) { o.consumer.fromWhere = w }
}

// WithConsumeTimestamp sets the time ConsumeFromTimestamp starts from.
func WithConsumeTimestamp(t time.Time) Option { return func(o *options) { o.consumer.timestamp = t } }

// WithMessageModel sets clustering (default) or broadcasting.
func WithMessageModel(m MessageModel) Option { return func(o *options) { o.consumer.model = m } }

// WithAllocateStrategy sets how a clustering group's queues are shared
// out (default AllocateAveragely). Every member of a group must use the
// same strategy, or some queues are consumed twice and others not at all.
func WithAllocateStrategy(s AllocateStrategy) Option {
	return func(o *options) { o.consumer.allocate = s }
}

// WithConsumeGoroutines sizes the push consumer's worker pool (default 20).
func WithConsumeGoroutines(n int) Option { return func(o *options) { o.consumer.goroutines = n } }

// WithPullBatchSize sets how many messages one pull asks for (default 32).
func WithPullBatchSize(n int) Option { return func(o *options) { o.consumer.pullBatch = n } }

// WithLongPollTimeout sets how long a broker may hold a pull that finds
// no message (default 20 s).
func WithLongPollTimeout(d time.Duration) Option { return func(o *options) { o.consumer.longPoll = d } }

// WithQueueLimits sets the flow control of a push consumer: a queue with
// more than maxMessages, or maxBytes of bodies, cached and not yet
// consumed is not pulled until consumption brings it under (defaults
// 1000 and 100 MiB).
func WithQueueLimits(maxMessages, maxBytes int) Option {
	return func(o *options) { o.consumer.queueMaxMsgs, o.consumer.queueMaxBytes = maxMessages, maxBytes }
}

// WithMaxReconsumeTimes sets how often a message may fail before the
// broker moves it to the group's dead-letter topic (default 16).
func WithMaxReconsumeTimes(n int) Option { return func(o *options) { o.consumer.maxReconsume = n } }

// WithRetryDelayLevel sets the delay level a failed message is sent back
// with: 0 (the default) lets the broker choose 3 + reconsumeTimes (10 s,
// 30 s, 1 min, …); n uses level n every time.
func WithRetryDelayLevel(n int) Option { return func(o *options) { o.consumer.retryDelayLevel = n } }

// WithHeartbeatInterval sets the period of the push consumer's HEART_BEAT
// to every broker of its topics (default 30 s; one is also sent on Start).
func WithHeartbeatInterval(d time.Duration) Option {
	return func(o *options) { o.consumer.heartbeatInterval = d }
}

// WithRebalanceInterval sets the period of the push consumer's rebalance
// (default 20 s; it also runs on Start and when a broker says the group's
// members changed).
func WithRebalanceInterval(d time.Duration) Option {
	return func(o *options) { o.consumer.rebalanceInterval = d }
}

// WithCommitInterval sets the period of the push consumer's offset
// commits (default 5 s; Close commits too).
func WithCommitInterval(d time.Duration) Option {
	return func(o *options) { o.consumer.commitInterval = d }
}

// WithPullErrorBackoff sets the wait after a pull answered with an error
// code a route refresh does not cure (default 3 s). Transport errors and
// SERVICE_NOT_AVAILABLE re-read the route and retry at once instead.
func WithPullErrorBackoff(d time.Duration) Option {
	return func(o *options) { o.consumer.pullErrorBackoff = d }
}

// WithInstanceName sets the instance part of the consumer's client id
// ("ip@instance"), the identity a clustering group shares queues by.
// Default: the process id and a per-process counter, so every consumer
// is a member of its own.
func WithInstanceName(name string) Option { return func(o *options) { o.consumer.instance = name } }

// WithConsumeOrderly makes a push consumer orderly (RocketMQ's
// MessageListenerOrderly): the messages of each queue are handled one at
// a time, in offset order; different queues are handled in parallel on
// the worker pool. In clustering mode the consumer locks the queues it is
// allocated on their brokers (LOCK_BATCH_MQ, 41) before it pulls them,
// renews the locks every WithLockRenewInterval, consumes a queue only
// while it holds its lock, and unlocks (UNLOCK_BATCH_MQ, 42) the queues it
// gives away or holds on Close, after committing their offsets. A
// ConsumeRetryLater suspends the queue: the same message is handled again
// after WithSuspendCurrentQueueTime, with ReconsumeTimes one higher, up
// to WithMaxReconsumeTimes times; then it is sent back (36), which lets
// the broker move it to the dead-letter topic, and the queue goes on.
func WithConsumeOrderly(on bool) Option { return func(o *options) { o.consumer.orderly = on } }

// WithSuspendCurrentQueueTime sets how long an orderly consumer waits
// before handling again a message its handler asked to retry (default 1 s).
func WithSuspendCurrentQueueTime(d time.Duration) Option {
	return func(o *options) { o.consumer.suspend = d }
}

// WithLockRenewInterval sets the period an orderly clustering consumer
// renews its queue locks at (default 20 s; the broker's lease is 60 s,
// and a lock not renewed for 30 s stops the queue's consumption locally).
func WithLockRenewInterval(d time.Duration) Option {
	return func(o *options) { o.consumer.lockRenew = d }
}

// WithMaxTimeConsumeContinuously sets how long an orderly consumer's
// worker handles one queue without a break while other queues wait for a
// worker (default 60 s). When it is up, the worker puts the queue back at
// the end of the line (its order is kept: no other worker handles it in
// between) and takes the queue that waited.
func WithMaxTimeConsumeContinuously(d time.Duration) Option {
	return func(o *options) { o.consumer.timeSlice = d }
}

// validateConsumer checks the consumer options after they are applied.
func (o *options) validateConsumer() error {
	c := &o.consumer
	switch {
	case c.fromWhere < ConsumeFromLastOffset || c.fromWhere > ConsumeFromTimestamp:
		return fmt.Errorf("%w: %v", ErrConfig, c.fromWhere)
	case c.model != Clustering && c.model != Broadcasting:
		return fmt.Errorf("%w: message model %d", ErrConfig, int(c.model))
	case c.allocate == nil:
		return fmt.Errorf("%w: no allocate strategy", ErrConfig)
	case c.goroutines <= 0:
		return fmt.Errorf("%w: consume goroutines %d <= 0", ErrConfig, c.goroutines)
	case c.pullBatch <= 0 || c.pullBatch > 1024:
		return fmt.Errorf("%w: pull batch size %d outside [1, 1024]", ErrConfig, c.pullBatch)
	case c.longPoll <= 0:
		return fmt.Errorf("%w: long-poll timeout %v <= 0", ErrConfig, c.longPoll)
	case c.queueMaxMsgs <= 0 || c.queueMaxBytes <= 0:
		return fmt.Errorf("%w: queue limits %d messages, %d bytes", ErrConfig, c.queueMaxMsgs, c.queueMaxBytes)
	case c.maxReconsume < 0:
		return fmt.Errorf("%w: max reconsume times %d < 0", ErrConfig, c.maxReconsume)
	case c.retryDelayLevel < 0:
		return fmt.Errorf("%w: retry delay level %d < 0", ErrConfig, c.retryDelayLevel)
	case c.heartbeatInterval <= 0 || c.rebalanceInterval <= 0 || c.commitInterval <= 0 || c.pullErrorBackoff <= 0 ||
		c.suspend <= 0 || c.lockRenew <= 0 || c.timeSlice <= 0:
		return fmt.Errorf("%w: consumer intervals must be > 0", ErrConfig)
	case protocol.ValidateGroup(o.group) != nil:
		return fmt.Errorf("%w: consumer group: %w", ErrConfig, protocol.ValidateGroup(o.group))
	}
	if c.timestamp.IsZero() {
		c.timestamp = o.now().Add(-30 * time.Minute)
	}
	return nil
}
