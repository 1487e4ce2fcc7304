package dledger

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/message"
)

// Resolving proposals whose leader stepped down.
//
// When a leader loses leadership with entries in flight (a leadership
// transfer, a drain, a higher term from a peer), raft answers their
// futures ErrLeadershipLost: each was appended to this node's log at an
// index the future names, and may or may not have been committed by the
// next leader. Left at that, every such proposal is an unknown outcome to
// its client, whose retry then stores the message twice.
//
// This node keeps applying entries as a follower, so the outcome becomes
// known once its applied index reaches the entry's index: the entry
// committed at that index is either this proposal (the same bytes: the
// stamped store time and UNIQ_KEY make a proposal's bytes unique) or
// another one, in which case this proposal was never committed and never
// will be (raft commits one entry per index). The FSM remembers a hash of
// the last recentApplied entries it applied, with their results, so the
// proposer can tell which:
//
//	applied entry at the index   outcome answered
//	--------------------------   ------------------------------------------
//	same bytes                   the FSM's result (stored: success)
//	other bytes                  ErrNotLeader (certainly not stored)
//	not seen within resolveWait  ErrOutcomeUnknown, as before (this node
//	  (or forgotten, or a        stopped following, or installed a snapshot
//	  snapshot jumped past it)   past the index)
const (
	recentApplied = 512
	resolveWait   = 2 * time.Second
)

// appliedRing remembers the recent entries the FSM applied.
type appliedRing struct {
	mu   sync.Mutex
	seed maphash.Seed
	ents [recentApplied]appliedEntry
	// skipOffsets: with one log, compare entries without their records'
	// offsets (see sum).
	skipOffsets bool
}

type appliedEntry struct {
	index uint64
	sum   uint64
	size  int
	res   applyResult
}

func newAppliedRing() *appliedRing { return &appliedRing{seed: maphash.MakeSeed()} }

// sum is the hash an entry is compared by. With one log the records of an
// entry read back from the log carry the queue and physical offsets the
// store gave them, where the proposal has none, so their offset bytes are
// left out (they are not what makes a proposal unique).
func (r *appliedRing) sum(data []byte) uint64 {
	if !r.skipOffsets {
		return maphash.Bytes(r.seed, data)
	}
	h, recs, ok := splitRecords(data)
	if !ok {
		return maphash.Bytes(r.seed, data)
	}
	var m maphash.Hash
	m.SetSeed(r.seed)
	m.Write(h)
	for _, rec := range recs {
		if len(rec) < message.PosSysFlag {
			m.Write(rec)
			continue
		}
		m.Write(rec[:message.PosQueueOffset])
		m.Write(rec[message.PosSysFlag:])
	}
	return m.Sum64()
}

// record keeps the entry at index with its result.
func (r *appliedRing) record(index uint64, data []byte, res applyResult) {
	sum := r.sum(data)
	r.mu.Lock()
	r.ents[index%recentApplied] = appliedEntry{index: index, sum: sum, size: len(data), res: res}
	r.mu.Unlock()
}

// lookup says what was applied at index: found is false when the ring no
// longer (or never) held it; same whether it was data.
func (r *appliedRing) lookup(index uint64, data []byte) (res applyResult, same, found bool) {
	sum := r.sum(data)
	r.mu.Lock()
	e := r.ents[index%recentApplied]
	r.mu.Unlock()
	if e.index != index {
		return applyResult{}, false, false
	}
	return e.res, e.sum == sum && e.size == len(data), true
}

// resolveLost waits for the outcome of an entry raft reported as lost
// (ErrLeadershipLost) at index, proposed with data. It returns the result
// to answer and true, or false when the outcome stays unknown.
func (g *Group) resolveLost(index uint64, data []byte) (applyResult, bool) {
	if index == 0 || g.fsm.recent == nil {
		return applyResult{}, false
	}
	ctx, cancel := context.WithTimeout(g.ctx, resolveWait)
	defer cancel()
	for {
		applied := g.fsm.appliedChanged()
		if g.fsm.applied.Load() >= index {
			break
		}
		select {
		case <-ctx.Done():
			return applyResult{}, false
		case <-applied:
		}
	}
	res, same, found := g.fsm.recent.lookup(index, data)
	switch {
	case !found:
		return applyResult{}, false
	case same:
		g.log.Debug("an entry reported lost with leadership was committed", "index", index)
		return res, true
	default:
		g.log.Debug("an entry reported lost with leadership was replaced", "index", index)
		return applyResult{err: fmt.Errorf("%w: entry %d was replaced by the next leader's", ErrNotLeader, index)}, true
	}
}

// lostWithLeadership: raft's answer that an appended entry's fate is
// unknown because this node stopped leading.
func lostWithLeadership(err error) bool { return errors.Is(err, raft.ErrLeadershipLost) }
