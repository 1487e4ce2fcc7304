package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

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

// LockLease is how long a queue lock lasts without renewal (RocketMQ's
// rocketmq.broker.rebalance.lockMaxLiveTime default).
const LockLease = 60 * time.Second

// mqJSON is a MessageQueue as the clients write it.
type mqJSON struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

// lockBatchBody is the body of 41 and 42.
type lockBatchBody struct {
	ConsumerGroup string   `json:"consumerGroup"`
	ClientID      string   `json:"clientId"`
	MQSet         []mqJSON `json:"mqSet"`
}

// lockBatchResult is the body of 41's answer.
type lockBatchResult struct {
	LockOKMQSet []mqJSON `json:"lockOKMQSet"`
}

// queueLock is one held lease.
type queueLock struct {
	clientID string
	renewed  time.Time
}

// lockTable holds the leases of every group. Safe for concurrent use.
type lockTable struct {
	now   func() time.Time
	lease time.Duration

	mu     sync.Mutex
	term   uint64 // raft term the leases were granted in
	groups map[string]map[mqJSON]queueLock
}

func newLockTable(now func() time.Time, lease time.Duration) *lockTable {
	return &lockTable{now: now, lease: lease, groups: map[string]map[mqJSON]queueLock{}}
}

// atTermLocked drops every lease granted in a term other than term.
func (t *lockTable) atTermLocked(term uint64) {
	if term != t.term {
		t.term = term
		t.groups = map[string]map[mqJSON]queueLock{}
	}
}

// lock grants clientID every queue of mqs that is free, already its own or
// expired, renews those, and returns the granted ones in request order.
// term is the leader's current raft term. Expired leases of the group are
// dropped on the way.
func (t *lockTable) lock(term uint64, group, clientID string, mqs []mqJSON) []mqJSON {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.atTermLocked(term)
	held := t.groups[group]
	if held == nil {
		held = map[mqJSON]queueLock{}
		t.groups[group] = held
	}
	for mq, l := range held {
		if now.Sub(l.renewed) >= t.lease {
			delete(held, mq)
		}
	}
	granted := make([]mqJSON, 0, len(mqs))
	for _, mq := range mqs {
		if l, ok := held[mq]; ok && l.clientID != clientID {
			continue
		}
		held[mq] = queueLock{clientID: clientID, renewed: now}
		granted = append(granted, mq)
	}
	return granted
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

// parseLockBody decodes and checks the body of 41 or 42.
func parseLockBody(body []byte) (lockBatchBody, error) {
	var req lockBatchBody
	if err := json.Unmarshal(body, &req); err != nil {
		return req, fmt.Errorf("%w: lock body: %v", ErrBadRequest, err)
	}
	if req.ConsumerGroup == "" || req.ClientID == "" {
		return req, fmt.Errorf("%w: lock body without consumerGroup or clientId", ErrBadRequest)
	}
	return req, nil
}

func (b *Broker) registerLockProcessors() {
	b.locks = newLockTable(b.cfg.Clock, LockLease)
	b.srv.Handle(remoting.LockBatchMQ, poolHeartbeat, remoting.HandlerFunc(b.leaderOnly(b.lockBatchMQ)))
	b.srv.Handle(remoting.UnlockBatchMQ, poolHeartbeat, remoting.HandlerFunc(b.leaderOnly(b.unlockBatchMQ)))
}

func (b *Broker) lockBatchMQ(_ context.Context, req *remoting.Command) (*remoting.Command, error) {
	lr, err := parseLockBody(req.Body)
	if err != nil {
		return nil, err
	}
	return jsonResponse(req, lockBatchResult{LockOKMQSet: b.locks.lock(b.group.Role().Term, lr.ConsumerGroup, lr.ClientID, lr.MQSet)}), nil
}

func (b *Broker) unlockBatchMQ(_ context.Context, req *remoting.Command) (*remoting.Command, error) {
	lr, err := parseLockBody(req.Body)
	if err != nil {
		return nil, err
	}
	b.locks.unlock(b.group.Role().Term, lr.ConsumerGroup, lr.ClientID, lr.MQSet)
	return remoting.NewResponse(req, remoting.Success, ""), nil
}
