package dledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Abstaining (boot.go says when a node starts so): the node takes part in
// replication as any follower does, appending and acknowledging what the
// leader sends, but it neither votes nor campaigns, so no election can
// count on a log that lost acknowledged entries. It stops abstaining
// (lift) when one of these holds, checked every abstainRecheck:
//
//   - it has caught up: a node its raft follows as leader, at this node's
//     term or later, said in its node info (peerinfo.go) that it leads and
//     how long its log was, and this node's log is that long now. Every
//     entry committed before the crash is in that leader's log, at or
//     below that index, so it is in this node's log too.
//   - a majority of the voters, this node included, say they are
//     recovering: no majority has kept its log whole, and waiting could
//     only keep the group without a leader. The group elects from what
//     remains, as raft does after any loss of a majority (under
//     ASYNC_FLUSH a power loss of most of the group may lose recent
//     acknowledged sends; SYNC_FLUSH fsyncs every append and loses none).
//   - it is the only voter.
//
// A leader that runs an older version says nothing of its log: a node
// recovering under it waits until the leader is upgraded or a majority
// recovers.

// abstainRecheck is how often an abstaining node checks whether it may
// stop.
const abstainRecheck = 250 * time.Millisecond

// errAbstaining is a vote or hand-over refused by an abstaining node.
var errAbstaining = errors.New("dledger: this node is recovering entries it may have lost and does not vote")

// voteGate is raft's transport for a node that starts abstaining: while
// abstaining it refuses every vote and pre-vote asked of it and every
// leadership hand-over to it, and its own vote requests fail before they
// leave. It forwards every other RPC unchanged, on one goroutine that
// close stops. A node that does not start abstaining runs without it.
type voteGate struct {
	raft.Transport
	header     raft.RPCHeader
	abstaining *atomic.Bool // the group's
	refused    atomic.Uint64

	out       chan raft.RPC
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

var (
	_ raft.Transport   = (*voteGate)(nil)
	_ raft.WithPreVote = (*voteGate)(nil)
	_ raft.WithClose   = (*voteGate)(nil)
)

func newVoteGate(inner raft.Transport, id raft.ServerID, abstaining *atomic.Bool) *voteGate {
	g := &voteGate{Transport: inner, abstaining: abstaining, out: make(chan raft.RPC), done: make(chan struct{})}
	g.header = raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(id),
		Addr: inner.EncodePeer(id, inner.LocalAddr())}
	in := inner.Consumer()
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for {
			select {
			case rpc := <-in:
				if g.abstaining.Load() && g.refuse(rpc) {
					continue
				}
				select {
				case g.out <- rpc:
				case <-g.done:
					return
				}
			case <-g.done:
				return
			}
		}
	}()
	return g
}

// refuse answers rpc itself when it asks for a vote or a hand-over. The
// refusal is counted before it is answered, so whoever has the answer
// sees it counted.
func (g *voteGate) refuse(rpc raft.RPC) bool {
	switch req := rpc.Command.(type) {
	case *raft.RequestVoteRequest:
		g.refused.Add(1)
		rpc.Respond(&raft.RequestVoteResponse{RPCHeader: g.header, Term: req.Term}, nil)
	case *raft.RequestPreVoteRequest:
		g.refused.Add(1)
		rpc.Respond(&raft.RequestPreVoteResponse{RPCHeader: g.header, Term: req.Term}, nil)
	case *raft.TimeoutNowRequest:
		g.refused.Add(1)
		rpc.Respond(nil, errAbstaining)
	default:
		return false
	}
	return true
}

func (g *voteGate) Consumer() <-chan raft.RPC { return g.out }

func (g *voteGate) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if g.abstaining.Load() {
		return errAbstaining
	}
	return g.Transport.RequestVote(id, target, args, resp)
}

func (g *voteGate) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if g.abstaining.Load() {
		return errAbstaining
	}
	pv, ok := g.Transport.(raft.WithPreVote)
	if !ok {
		return fmt.Errorf("dledger: the transport has no pre-vote")
	}
	return pv.RequestPreVote(id, target, args, resp)
}

// Close stops the forwarding goroutine and closes the transport.
func (g *voteGate) Close() error {
	var err error
	g.closeOnce.Do(func() {
		close(g.done)
		g.wg.Wait()
		if c, ok := g.Transport.(raft.WithClose); ok {
			err = c.Close()
		}
	})
	return err
}

// Abstaining reports whether this node is recovering entries it may have
// lost at a machine crash and so neither votes nor campaigns.
func (g *Group) Abstaining() bool { return g.abstaining.Load() }

// VotesRefused counts the votes, pre-votes and hand-overs this node has
// refused while abstaining since it started.
func (g *Group) VotesRefused() uint64 {
	if g.gate == nil {
		return 0
	}
	return g.gate.refused.Load()
}

// abstainUntilSafe runs while the node abstains and lifts the abstention
// when it may (see above).
func (g *Group) abstainUntilSafe(ctx context.Context) {
	t := time.NewTicker(abstainRecheck)
	defer t.Stop()
	var target uint64
	for {
		reason := g.mayStopAbstaining(&target)
		if reason != "" {
			g.stopAbstaining(reason, target)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// mayStopAbstaining says why the node may stop abstaining, or "". target
// keeps the leader's log length once a leader has said it.
func (g *Group) mayStopAbstaining(target *uint64) string {
	fut := g.raft.GetConfiguration()
	if fut.Error() != nil {
		return ""
	}
	self := raft.ServerID(g.cfg.NodeID)
	var others []raft.Server
	voters := 0
	for _, s := range fut.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		if s.ID != self {
			others = append(others, s)
		}
	}
	if voters <= 1 && len(others) == 0 {
		return "it is the group's only voter"
	}
	timeout := g.cfg.Timing.HeartbeatTimeout
	if *target == 0 {
		if addr, id := g.raft.LeaderWithID(); id != "" && id != self {
			ni, err := g.mux.askNodeInfo(string(addr), timeout)
			if err == nil && ni.Leader && ni.Node == string(id) && ni.LastIndex > 0 && ni.Term >= g.raft.CurrentTerm() {
				*target = ni.LastIndex
			}
		}
	}
	if *target != 0 {
		if g.raft.LastIndex() >= *target {
			return "its log holds what the leader held when it came back"
		}
		return ""
	}
	recovering := 1
	for _, s := range others {
		if ni, err := g.mux.askNodeInfo(string(s.Address), timeout); err == nil && ni.Recovering {
			recovering++
		}
	}
	if recovering >= voters/2+1 {
		return fmt.Sprintf("%d of the group's %d voters are recovering: no majority kept its log whole", recovering, voters)
	}
	return ""
}

func (g *Group) stopAbstaining(reason string, target uint64) {
	if err := writeBootRecord(g.cfg.FS, g.raftDir(), bootRecord{BootID: g.bootID, Unsynced: g.unsynced}); err != nil {
		// The next start abstains again: safe, and it lifts again.
		g.log.Warn("cannot record the end of recovery", "error", err)
	}
	g.abstaining.Store(false)
	g.log.Info("this node votes again", "reason", reason, "last_index", g.raft.LastIndex(), "leader_last_index", target)
}
