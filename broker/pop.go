package broker

// POP consumption: the broker hands out messages, and a message handed
// out is invisible to the group until it is acknowledged or its invisible
// time ends (RocketMQ 5's POP; the gRPC port's SimpleConsumer).
//
// State (metadata/pop.go), replicated through raft like the consumer
// offsets: per group, topic and queue, the POP position (the next queue
// offset to hand out) and a receipt per message in flight (its offset,
// invisible-until time, delivery attempt and epoch). Every change is an
// OpPop the leader proposes; it names what the leader saw (the position a
// move starts from, the epoch a receipt replaces), so a change that lost
// a race is skipped on every replica alike, and a failover keeps whatever
// was committed: receipts not acknowledged are delivered again by the new
// leader once their time ends, acknowledged ones are gone.
//
//	PopMessages  ─▶ expired receipts of the topic's queues: again, with
//	                attempt+1 and epoch+1 (past the group's retry max:
//	                to %DLQ%<group>, as CONSUMER_SEND_MSG_BACK does);
//	                then new messages from each queue's position, each a
//	                receipt (attempt 1, epoch 1); one OpPop for it all
//	AckPopped    ─▶ the receipt is deleted (if the handle's epoch is its)
//	ChangeInvisible ▶ the receipt gets a new time and epoch: a new handle
//	revive sweep ─▶ on the leader, every PopReviveInterval: expired receipts
//	                past the retry max to %DLQ%<group> without a receive
//	                (pop_revive.go)
//
// The leader serves POP; a follower answers ErrNoLeader. The group's
// format version must be 4 (dledger's popVersion) before any of it:
// below, every POP request is refused with ErrPopUnsupported.
//
// Batching: the changes of one request are one change per queue, and
// concurrent requests share raft entries (popBatcher: whoever finds no
// proposal under way proposes everything pending, the others wait for it),
// so a receive of 32 messages or 100 acks at once costs one raft round.
//
// Receives of one group and topic are serialized on the leader (a stripe
// of popLocks), so two consumers of a group never get the same message
// while it is in flight. Each queue holds at most Config.PopMaxInflight
// receipts per group (default 4096): a queue at the cap hands out nothing
// new until some are acknowledged or expire, which bounds the state (and
// the snapshot) to groups × topics × queues × cap receipts.
//
// Long polling: a receive that finds nothing waits, up to its wait time,
// for a message stored in the topic (OnDispatch) or an acknowledgement, or
// for the earliest receipt of its queues to expire; then tries again. It
// never sleeps in a loop, and ends when the broker closes.

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ledgermq/ledgermq/metadata"
)

// Sentinel errors of POP consumption.
var (
	// ErrInvalidReceipt: a receipt handle that does not decode, names
	// another broker group, group or topic, or a receipt no longer held
	// (acknowledged, or the message delivered again since).
	ErrInvalidReceipt = errors.New("broker: invalid receipt handle")
	// ErrPopUnsupported: the group's format version does not carry POP
	// state yet (some member runs an older binary).
	ErrPopUnsupported = errors.New("broker: POP consumption needs the group at format version 4")
)

const (
	// popFormatVersion is the group format version that carries POP ops
	// (dledger's popVersion).
	popFormatVersion = 4
	// defaultPopMaxInflight is Config.PopMaxInflight's default.
	defaultPopMaxInflight = 4096
	// maxPopBatch bounds the messages of one receive.
	maxPopBatch = 64
	// popLockStripes is the number of locks receives are serialized on.
	popLockStripes = 64
	// popRecheck is the least a long poll waits before it looks again.
	popRecheck = 50 * time.Millisecond
)

// MinInvisible and MaxInvisible bound the invisible duration of a
// receive (a new invisible time may be 0: visible at once).
const (
	MinInvisible = 100 * time.Millisecond
	MaxInvisible = 12 * time.Hour
)

// popService is the leader's POP bookkeeping: the locks receives take,
// the batcher of their changes, the long-poll waiters and the revive
// sweep. Its one goroutine is the sweep's (Start, Stop); receives wait on
// their own.
type popService struct {
	maxInflight int
	seed        maphash.Seed
	locks       [popLockStripes]sync.Mutex
	batch       popBatcher
	rr          atomic.Uint32 // where the next receive starts among the queues

	// revive is the sweep of used-up messages (pop_revive.go); reviveAfter
	// the queue its last round ended on (its goroutine's alone).
	revive       *leaderLoop
	reviveAfter  metadata.PopQueue
	reviveRounds atomic.Uint64 // rounds ended (tests wait on it)
	// deadLetterHook, when set (tests), runs after a dead letter is
	// stored, before its receipt is deleted; true stops there.
	deadLetterHook atomic.Pointer[func(context.Context) bool]

	waiting atomic.Int64 // receives waiting now (a lock-free fast path for notify)
	wmu     sync.Mutex
	watches map[string]*popWatch // by topic

	// polls counts the receives waiting, for POLLING_INFO; notifying the
	// NOTIFICATION requests waiting (pop_notify.go).
	polls     popPolls
	notifying popNotifying
}

// popWatch wakes the receives waiting on a topic: ch is closed (and the
// watch forgotten) on the next message or acknowledgement.
type popWatch struct {
	ch chan struct{}
	n  int
}

func newPopService(maxInflight int, propose func(context.Context, metadata.Op) error) *popService {
	if maxInflight <= 0 {
		maxInflight = defaultPopMaxInflight
	}
	return &popService{maxInflight: maxInflight, seed: maphash.MakeSeed(), batch: popBatcher{propose: propose},
		watches: map[string]*popWatch{}}
}

// lock serializes the receives of a group and topic.
func (p *popService) lock(group, topic string) func() {
	m := &p.locks[maphash.String(p.seed, group+"@"+topic)%popLockStripes]
	m.Lock()
	return m.Unlock
}

// watch registers a waiter of topic; done must be called after.
func (p *popService) watch(topic string) (ch <-chan struct{}, done func()) {
	p.waiting.Add(1)
	p.wmu.Lock()
	w := p.watches[topic]
	if w == nil {
		w = &popWatch{ch: make(chan struct{})}
		p.watches[topic] = w
	}
	w.n++
	p.wmu.Unlock()
	return w.ch, func() {
		p.wmu.Lock()
		w.n--
		if w.n == 0 && p.watches[topic] == w {
			delete(p.watches, topic)
		}
		p.wmu.Unlock()
		p.waiting.Add(-1)
	}
}

// notify wakes the receives waiting on topic.
func (p *popService) notify(topic string) {
	if p.waiting.Load() == 0 {
		return
	}
	p.wmu.Lock()
	if w := p.watches[topic]; w != nil {
		close(w.ch)
		delete(p.watches, topic)
	}
	p.wmu.Unlock()
}

// popBatcher proposes POP changes, many requests' to one raft entry: a
// caller that finds no proposal under way proposes what is pending, its
// own and what arrives meanwhile, until nothing is; the others wait for
// the entry that carries theirs. No goroutine of its own.
type popBatcher struct {
	propose func(context.Context, metadata.Op) error

	mu      sync.Mutex
	busy    bool
	pending []popBatchItem
}

type popBatchItem struct {
	changes []metadata.PopChange
	done    chan error
}

// submit has changes applied (or refused) through raft and returns once
// this node has applied the entry that carries them. A context that ends
// first leaves the outcome unknown.
func (pb *popBatcher) submit(ctx context.Context, changes []metadata.PopChange) error {
	if len(changes) == 0 {
		return nil
	}
	if len(changes) > metadata.MaxPopChanges {
		return fmt.Errorf("%w: %d POP changes in one request", ErrInvalidParameter, len(changes))
	}
	it := popBatchItem{changes: changes, done: make(chan error, 1)}
	pb.mu.Lock()
	pb.pending = append(pb.pending, it)
	if pb.busy {
		pb.mu.Unlock()
		select {
		case err := <-it.done:
			return err
		case <-ctx.Done():
			return fmt.Errorf("broker: POP change outcome unknown: %w", ctx.Err())
		}
	}
	pb.busy = true
	for len(pb.pending) > 0 {
		var items []popBatchItem
		var op metadata.Op
		receipts := 0
		for len(pb.pending) > 0 {
			next := pb.pending[0]
			n := 0
			for _, c := range next.changes {
				n += len(c.Put) + len(c.Del)
			}
			if len(items) > 0 && (len(op.Pop)+len(next.changes) > metadata.MaxPopChanges || receipts+n > metadata.MaxPopReceipts) {
				break
			}
			items = append(items, next)
			op.Pop = append(op.Pop, next.changes...)
			receipts += n
			pb.pending = pb.pending[1:]
		}
		pb.mu.Unlock()
		op.Kind = metadata.OpPop
		// Not the caller's context: the entry carries other requests too.
		pctx, cancel := context.WithTimeout(context.Background(), proposeTimeout)
		err := pb.propose(pctx, op)
		cancel()
		for _, w := range items {
			w.done <- err
		}
		pb.mu.Lock()
	}
	pb.busy = false
	pb.mu.Unlock()
	return <-it.done
}

// checkPop says whether this node serves POP now: the writable leader of
// a group at format version 4.
func (b *Broker) checkPop() error {
	if v := b.group.Metadata().FormatVersion(); v < popFormatVersion {
		return fmt.Errorf("%w (it is at %d until every member runs a binary that supports it)", ErrPopUnsupported, v)
	}
	if !b.group.IsLeader() {
		return fmt.Errorf("%w: POP is served by the group's leader (%s)", ErrNoLeader, b.group.Role().LeaderID)
	}
	return nil
}

// popMaxAttempts is how many deliveries a group's message gets before it
// goes to the dead-letter queue: the group's retry max (default 16).
func (b *Broker) popMaxAttempts(group string) int32 { return b.maxReconsumeTimes(group, 0) }

// PopMaxAttempts is popMaxAttempts for the other front ends (the
// subscription settings the gRPC port answers).
func (b *Broker) PopMaxAttempts(group string) int32 { return b.popMaxAttempts(group) }

// PopOrderly reports whether group is a FIFO group (its config's
// consumeMessageOrderly): POP hands out each queue's messages in order, the
// next ones only once those in flight are acknowledged.
func (b *Broker) PopOrderly(group string) bool {
	g, ok := b.group.Metadata().Group(group)
	return ok && g.ConsumeMessageOrderly
}

// nowMs is the broker clock's time in Unix ms.
func (b *Broker) nowMs() int64 { return b.cfg.Clock().UnixMilli() }
