package dledger

import (
	"context"

	"github.com/hashicorp/raft"
)

// shutdownRaft stops raft and then marks it done for awaitRaft.
func (g *Group) shutdownRaft() error {
	err := g.raft.Shutdown().Error()
	g.raftDoneOnce.Do(func() { close(g.raftDone) })
	return err
}

// awaitRaft is f.Error(), except that it gives up with raft.ErrRaftShutdown
// once raft has shut down. raft (v1.8.0) never answers an Apply or Barrier
// future whose entry was still queued for the FSM when it shut down
// (hashicorp/raft#498): a bare f.Error() then blocks for ever, and with it
// the proposer's completer, the role watcher, and Close or Kill waiting for
// them. A future answered just before the shutdown may still be reported
// as shut down: callers map that to ErrOutcomeUnknown, which is what the
// proposal's outcome is to them.
//
// The goroutine waiting on f is left blocked when raft never answers: at
// most one per entry in flight (MaxInFlight), one barrier and one
// leadership transfer per shutdown (a transfer still queued when raft shuts
// down is never answered either), each holding only its future.
func (g *Group) awaitRaft(f raft.Future) error {
	ch := make(chan error, 1)
	go func() { ch <- f.Error() }()
	select {
	case err := <-ch:
		return err
	case <-g.raftDone:
		select {
		case err := <-ch:
			return err
		default:
			return raft.ErrRaftShutdown
		}
	}
}

// Barrier waits until every entry this node had proposed or received
// before it is applied here (raft's barrier: only the leader can pass
// one). It is bounded by ctx's deadline, or ApplyTimeout without one, and
// gives up with raft.ErrRaftShutdown once raft has shut down (awaitRaft).
// Schedulers call it before they read replicated progress that an entry
// of unknown outcome may still move.
func (g *Group) Barrier(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return g.awaitRaft(g.raft.Barrier(g.timeout(ctx)))
}
