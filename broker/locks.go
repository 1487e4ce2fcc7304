package broker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// Queue locks for orderly consumers (LOCK_BATCH_MQ 41, UNLOCK_BATCH_MQ 42).
//
// An orderly consumer asks the leader to lock the queues its rebalance gave
// it and consumes a queue only while it holds the lock, so one queue is
// consumed by one client at a time even while a rebalance moves it. A lock
// is a lease: granted when the queue is free, already held by the same
// client, or its holder has not renewed it for LockLease; the client renews
// every 20 s. Locks live in the leader's memory only, as in RocketMQ: after
// a failover the new leader starts empty and clients lock again on their
// next renewal, which the client's own 30 s local expiry covers. The table
// remembers the raft term its leases were granted in and forgets them all
// when asked in another term, so a node that loses and regains leadership
// never honours leases from its earlier reign. A
// follower forwards both requests to the leader, so a client with a stale
// route still gets the leader's answer.
//
// The table is bounded, because any client can ask (I7): a lock is granted
// only for a queue that exists here (this broker's name, a topic of the
// replicated metadata, a queue id below the topic's queue count; others
// are left out of the answer, as a queue another client holds is), group
// and client ids are length-checked, a group holds at most
// MaxLocksPerGroup leases and the table MaxLocks, and a sweeper drops
// expired leases every lockSweepInterval, so an abandoned lease does not
// outlive its lease by more than that.

// LockLease is how long a queue lock lasts without renewal (RocketMQ's
// rocketmq.broker.rebalance.lockMaxLiveTime default).
const LockLease = 60 * time.Second

// Bounds of the lock table. A lease costs about 150 bytes, so the whole
// table stays under about 20 MiB; a group rarely consumes more than a few
// thousand queues of one broker.
const (
	// MaxLocksPerGroup bounds the leases of one consumer group.
	MaxLocksPerGroup = 16384
	// MaxLocks bounds the leases of all groups.
	MaxLocks = 131072
	// maxLockGroupLen bounds a consumer group name in 41 and 42
	// (RocketMQ's limit for group names).
	maxLockGroupLen = 255
	// maxLockClientIDLen bounds a client id in 41 and 42.
	maxLockClientIDLen = 1024
	// lockSweepInterval is the period of the expired-lease sweep.
	lockSweepInterval = 10 * time.Second
	// lockCapLogEvery is the least interval between two log lines about
	// locks refused for the caps.
	lockCapLogEvery = time.Minute
)

// mqJSON is a MessageQueue as the clients write it.
type mqJSON = protocol.MessageQueue

// queueLock is one held lease.
type queueLock struct {
	clientID string
	renewed  time.Time
}

// lockTable holds the leases of every group. Safe for concurrent use. Its
// sweeper runs between Start and Stop.
type lockTable struct {
	lifecycle
	now      func() time.Time
	lease    time.Duration
	perGroup int // MaxLocksPerGroup
	total    int // MaxLocks

	mu      sync.Mutex
	term    uint64 // raft term the leases were granted in
	groups  map[string]map[mqJSON]queueLock
	count   int       // leases in groups
	capped  uint64    // grants refused for the caps
	lastLog time.Time // of the caps' log line
}

func newLockTable(now func() time.Time, lease time.Duration) *lockTable {
	return &lockTable{now: now, lease: lease, perGroup: MaxLocksPerGroup, total: MaxLocks,
		groups: map[string]map[mqJSON]queueLock{}}
}

// Start runs the sweeper every interval until Stop. Starting a running
// table does nothing.
func (t *lockTable) Start(interval time.Duration) {
	t.run(func(ctx context.Context) {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				t.sweep()
			case <-ctx.Done():
				return
			}
		}
	})
}

// Stop ends the sweeper and waits for it. Stopping a table that is not
// running does nothing.
func (t *lockTable) Stop() { t.halt() }

// sweep drops every expired lease and every group left without one.
func (t *lockTable) sweep() {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for group, held := range t.groups {
		t.dropExpiredLocked(held, now)
		if len(held) == 0 {
			delete(t.groups, group)
		}
	}
}

// dropExpiredLocked drops the expired leases of one group.
func (t *lockTable) dropExpiredLocked(held map[mqJSON]queueLock, now time.Time) {
	for mq, l := range held {
		if now.Sub(l.renewed) >= t.lease {
			delete(held, mq)
			t.count--
		}
	}
}

// atTermLocked drops every lease granted in a term other than term.
func (t *lockTable) atTermLocked(term uint64) {
	if term != t.term {
		t.term = term
		t.groups = map[string]map[mqJSON]queueLock{}
		t.count = 0
	}
}

// lock grants clientID every queue of mqs that is free, already its own or
// expired, renews those, and returns the granted ones in request order.
// term is the leader's current raft term; mqs are queues that exist.
// Expired leases of the group are dropped on the way. A new lease beyond
// the per-group or the total cap is not granted; capped is how many were
// refused so.
func (t *lockTable) lock(term uint64, group, clientID string, mqs []mqJSON) (granted []mqJSON, capped int) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.atTermLocked(term)
	held := t.groups[group]
	if held == nil {
		held = map[mqJSON]queueLock{}
	} else {
		t.dropExpiredLocked(held, now)
	}
	granted = make([]mqJSON, 0, len(mqs))
	for _, mq := range mqs {
		l, ok := held[mq]
		if ok && l.clientID != clientID {
			continue
		}
		if !ok {
			if len(held) >= t.perGroup || t.count >= t.total {
				capped++
				continue
			}
			t.count++
		}
		held[mq] = queueLock{clientID: clientID, renewed: now}
		granted = append(granted, mq)
	}
	if len(held) > 0 {
		t.groups[group] = held
	} else {
		delete(t.groups, group)
	}
	t.capped += uint64(capped)
	return granted, capped
}

// unlock releases the queues of mqs that clientID holds; others' leases
// stay.
func (t *lockTable) unlock(term uint64, group, clientID string, mqs []mqJSON) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.atTermLocked(term)
	held := t.groups[group]
	for _, mq := range mqs {
		if l, ok := held[mq]; ok && l.clientID == clientID {
			delete(held, mq)
			t.count--
		}
	}
	if len(held) == 0 {
		delete(t.groups, group)
	}
}

// holder returns who holds mq of group, for tests and diagnostics.
func (t *lockTable) holder(group string, mq mqJSON) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l, ok := t.groups[group][mq]
	if !ok || t.now().Sub(l.renewed) >= t.lease {
		return "", false
	}
	return l.clientID, true
}

// size returns the leases held (expired ones not yet swept included) and
// the groups holding them.
func (t *lockTable) size() (leases, groups int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.count, len(t.groups)
}

// shouldLogCap reports whether a refusal for the caps should be logged
// now: at most once per lockCapLogEvery.
func (t *lockTable) shouldLogCap() bool {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.lastLog.IsZero() && now.Sub(t.lastLog) < lockCapLogEvery {
		return false
	}
	t.lastLog = now
	return true
}

// lockableQueues returns the queues of mqs that exist on broker
// brokerName: a topic topic finds, a queue id in [0, max(read, write)
// queue count). Their topic and broker strings are the broker's own, so
// the table keeps no string of the request but the client id and group.
func lockableQueues(mqs []mqJSON, brokerName string, topic func(string) (metadata.TopicConfig, bool)) []mqJSON {
	out := make([]mqJSON, 0, len(mqs))
	for _, mq := range mqs {
		if mq.BrokerName != brokerName || mq.QueueID < 0 {
			continue
		}
		tc, ok := topic(mq.Topic)
		if !ok || mq.QueueID >= max(tc.ReadQueueNums, tc.WriteQueueNums) {
			continue
		}
		out = append(out, mqJSON{Topic: tc.TopicName, BrokerName: brokerName, QueueID: mq.QueueID})
	}
	return out
}

// parseLockBody decodes and checks the body of 41 or 42.
func parseLockBody(body []byte) (*protocol.LockBatchBody, error) {
	req, err := protocol.DecodeLockBatchBody(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if req.ConsumerGroup == "" || req.ClientID == "" {
		return req, fmt.Errorf("%w: lock body without consumerGroup or clientId", ErrBadRequest)
	}
	if len(req.ConsumerGroup) > maxLockGroupLen || len(req.ClientID) > maxLockClientIDLen {
		return req, fmt.Errorf("%w: lock body: consumerGroup of %d bytes or clientId of %d bytes exceeds %d or %d",
			ErrInvalidParameter, len(req.ConsumerGroup), len(req.ClientID), maxLockGroupLen, maxLockClientIDLen)
	}
	return req, nil
}

func (b *Broker) lockBatchMQ(_ context.Context, req *remoting.Command) (*remoting.Command, error) {
	lr, err := parseLockBody(req.Body)
	if err != nil {
		return nil, err
	}
	mqs := lockableQueues(lr.MQSet, b.cfg.BrokerName, b.group.Metadata().Topic)
	granted, capped := b.locks.lock(b.group.Role().Term, lr.ConsumerGroup, lr.ClientID, mqs)
	if capped > 0 && b.locks.shouldLogCap() {
		leases, groups := b.locks.size()
		b.log.Warn("queue locks refused: lock table full", "group", lr.ConsumerGroup, "client", lr.ClientID,
			"refused", capped, "leases", leases, "groups", groups, "per_group_cap", MaxLocksPerGroup, "cap", MaxLocks)
	}
	return jsonResponse(req, protocol.LockBatchResult{LockOKMQSet: granted}), nil
}

func (b *Broker) unlockBatchMQ(_ context.Context, req *remoting.Command) (*remoting.Command, error) {
	lr, err := parseLockBody(req.Body)
	if err != nil {
		return nil, err
	}
	b.locks.unlock(b.group.Role().Term, lr.ConsumerGroup, lr.ClientID, lr.MQSet)
	return remoting.NewResponse(req, remoting.Success, ""), nil
}
