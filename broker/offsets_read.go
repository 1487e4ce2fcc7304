package broker

// Linearizable consumer offsets.
//
// QUERY_CONSUMER_OFFSET and UPDATE_CONSUMER_OFFSET are served by the
// leader only; any other node relays them to it (handlers.go, leaderOnly).
// A query on the leader first has the key's pending commit proposed and
// applied (the committer flushes at once, kick), then passes a raft
// barrier — which only a leader still in office can, and after which every
// entry committed before is applied here — and answers the replicated
// offset. So a node that was deposed (or is cut off from the majority
// and does not know it yet) never answers from its own, older state, and
// a read never returns a commit that raft may still lose: once a value
// has been read, no later read answers an older one unless a newer commit
// was taken since.
//
// A commit is still acknowledged before raft commits it (the coalescing
// is what makes thousands of consumers cheap), so a commit may be lost —
// but only before anyone has read it: a commit taken by a leader that
// loses leadership before proposing it is dropped, not forwarded to the
// next leader (which may have answered reads without it meanwhile, and
// would then seem to go forward to a value from the past).
//
// Cost: a query waits for one raft round trip (the barrier's entry, its
// fsync on a majority) and, right after a commit of the same key, for that
// commit's proposal too; the jepsen register workload measures it
// (read latency). Consumers query offsets only when they take a queue
// over, so the cost is paid at rebalances, not per message.

import (
	"context"
	"fmt"

	"github.com/ledgermq/ledgermq/internal/canary"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// readTimeout bounds a linearizable query's wait for the pending commit
// and the barrier.
const readTimeout = commitTimeout

// queryConsumerOffset serves QUERY_CONSUMER_OFFSET (14) on the leader:
// ext offset, or 22 QUERY_NOT_FOUND (offsets.go's file comment says what
// a new group reads; setZeroIfNotFound=false always gets 22 then).
func (b *Broker) queryConsumerOffset(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.QueryConsumerOffsetRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return nil, err
	}
	if err := checkQueue(h.Topic, h.QueueID); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	k := offsetKey{h.ConsumerGroup, h.Topic, h.QueueID}
	if err := b.offsets.awaitFlushed(rctx, k); err != nil {
		return nil, err
	}
	if err := b.group.Barrier(rctx); err != nil {
		return nil, err
	}
	if off, ok := b.offsets.committed(k); ok {
		return offsetResponse(req, off), nil
	}
	if !h.NotFoundIfNone && b.queueMin(h.Topic, h.QueueID) <= 0 {
		return offsetResponse(req, 0), nil
	}
	return remoting.NewResponse(req, remoting.QueryNotFound, "Not found, maybe this group consumer boot first"), nil
}

// updateConsumerOffset serves UPDATE_CONSUMER_OFFSET (15) on the leader,
// whether or not the one-way bit is set (the Go client sends flag 0 and
// drops the answer).
func (b *Broker) updateConsumerOffset(_ context.Context, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.UpdateConsumerOffsetRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return nil, err
	}
	if err := validateGroup(h.ConsumerGroup); err != nil {
		return nil, err
	}
	if err := checkQueue(h.Topic, h.QueueID); err != nil {
		return nil, err
	}
	if h.CommitOffset < 0 {
		return nil, fmt.Errorf("%w: commitOffset %d", ErrInvalidParameter, h.CommitOffset)
	}
	b.offsets.commit(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset, req.ExtFields[forwardedByExt])
	return remoting.NewResponse(req, remoting.Success, ""), nil
}

// awaitFlushed has k's pending or in-flight commit proposed now and waits
// until none is left (applied, or dropped), or ctx ends.
func (c *offsetCommitter) awaitFlushed(ctx context.Context, k offsetKey) error {
	for {
		c.mu.Lock()
		_, pending := c.pending[k]
		_, inflight := c.inflight[k]
		flushed := c.flushed
		c.mu.Unlock()
		if !pending && !inflight {
			return nil
		}
		select {
		case c.kick <- struct{}{}:
		default: // a flush is asked for already
		}
		select {
		case <-flushed:
		case <-ctx.Done():
			return fmt.Errorf("%w: the pending offset commit of %s/%s/%d was not proposed in time: %w",
				ErrNoLeader, k.group, k.topic, k.queueID, ctx.Err())
		}
	}
}

// committed is k's replicated offset (what a linearizable read answers).
func (c *offsetCommitter) committed(k offsetKey) (int64, bool) {
	if canary.Built { // a jepsenbroken build only
		key := fmt.Sprint(k.group, "/", k.topic, "/", k.queueID)
		if canary.ForgetsOffset(key) {
			return 0, true
		}
		if v, ok := canary.Uncommitted(key); ok {
			return v, true
		}
	}
	return c.group.Metadata().Offset(k.group, k.topic, k.queueID)
}

// dropLeaderCommits removes from batch the commits this node took while
// it led and did not propose before it stopped leading (see the file
// comment).
func (c *offsetCommitter) dropLeaderCommits(batch map[offsetKey]pendingOffset) {
	n := 0
	for k, p := range batch {
		if p.leader {
			delete(batch, k)
			n++
		}
	}
	if n > 0 {
		c.log.Info("offset commits dropped: taken while leading, not proposed before leadership was lost", "count", n)
	}
}
