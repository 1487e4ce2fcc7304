package dledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// Member is one server in the group's configuration.
type Member struct {
	ID    string
	Addr  string
	Voter bool
}

// Members lists the group's configuration as this node knows it.
func (g *Group) Members() ([]Member, error) {
	f := g.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	var out []Member
	for _, s := range f.Configuration().Servers {
		out = append(out, Member{ID: string(s.ID), Addr: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	return out, nil
}

func (g *Group) memberAddr(id string) (string, bool) {
	ms, err := g.Members()
	if err != nil {
		return "", false
	}
	for _, m := range ms {
		if m.ID == id {
			return m.Addr, true
		}
	}
	return "", false
}

func (g *Group) isVoter(id string) bool {
	ms, _ := g.Members()
	for _, m := range ms {
		if m.ID == id {
			return m.Voter
		}
	}
	return false
}

func (g *Group) timeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return g.cfg.ApplyTimeout
}

// AddNonvoter adds a node that replicates but does not vote. Leader only.
func (g *Group) AddNonvoter(ctx context.Context, id, addr string) error {
	return membershipErr(g.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, g.timeout(ctx)).Error())
}

// AddVoter adds a voting node, or promotes a non-voter. Leader only.
func (g *Group) AddVoter(ctx context.Context, id, addr string) error {
	return membershipErr(g.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, g.timeout(ctx)).Error())
}

// RemoveNode removes a node from the group. Leader only.
func (g *Group) RemoveNode(ctx context.Context, id string) error {
	return membershipErr(g.raft.RemoveServer(raft.ServerID(id), 0, g.timeout(ctx)).Error())
}

// membershipErr gives raft's answers to a configuration change this
// package's sentinels: not the leader (or leadership lost meanwhile) is
// ErrNotLeader, a change whose commit was not seen is ErrOutcomeUnknown.
func membershipErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	}
	return err
}

// AddNode joins a new node safely: as a non-voter first, promoted to voter
// once appliedIndex (the new node's applied index, asked over whatever
// channel the caller has to it) is within slack entries of this leader's
// commit index.
func (g *Group) AddNode(ctx context.Context, id, addr string, slack uint64, appliedIndex func(context.Context) (uint64, error)) error {
	if err := g.AddNonvoter(ctx, id, addr); err != nil {
		return fmt.Errorf("dledger: add %s as non-voter: %w", id, err)
	}
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		applied, err := appliedIndex(ctx)
		if err == nil && applied+slack >= g.raft.CommitIndex() {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dledger: %s did not catch up (applied %d, commit %d): %w", id, applied, g.raft.CommitIndex(), ctx.Err())
		case <-t.C:
		}
	}
	if err := g.AddVoter(ctx, id, addr); err != nil {
		return fmt.Errorf("dledger: promote %s: %w", id, err)
	}
	return nil
}

// AppliedIndex is the index of the last entry this node's FSM has applied.
// Entries raft never hands to the FSM (each new leader's no-op, barriers)
// change nothing there: they count as applied once everything before them
// is, so an idle group's applied index reaches its commit index (an apply
// lag of 0) after any number of elections.
func (g *Group) AppliedIndex() uint64 {
	a := g.fsm.applied.Load()
	// raft's own applied index is where it has handed entries over up to
	// (it runs ahead of the FSM); past the FSM's, stop at the first entry
	// the FSM still has to apply.
	for handed := g.raft.AppliedIndex(); a < handed; a++ {
		var e raft.Log
		if err := g.logs.GetLog(a+1, &e); err != nil || e.Type == raft.LogCommand || e.Type == raft.LogConfiguration {
			break
		}
	}
	return a
}

// Status is this node's view for admin tools: the lag of a node is the
// leader's CommitIndex minus that node's AppliedIndex.
type Status struct {
	ID           string
	Role         string
	Term         uint64
	LeaderID     string
	LastIndex    uint64
	CommitIndex  uint64
	AppliedIndex uint64
	StoreSeq     uint64
	// FormatVersion is the group's format version as this node applied
	// it; MinFormatVersion and MaxFormatVersion what this node supports.
	FormatVersion    uint32
	MinFormatVersion uint32
	MaxFormatVersion uint32
	// Verifier is this node's replica verifier.
	Verifier VerifierStatus
	// Drained: the node is drained (drain.go).
	Drained bool
	// Snapshots and Restores count the snapshots this node has taken and
	// installed since it started.
	Snapshots, Restores uint64
}

// Status reports this node's raft and store positions.
func (g *Group) Status() Status {
	r := g.currentRole()
	return Status{
		ID:           g.cfg.NodeID,
		Role:         r.Role,
		Term:         r.Term,
		LeaderID:     r.LeaderID,
		LastIndex:    g.raft.LastIndex(),
		CommitIndex:  g.raft.CommitIndex(),
		AppliedIndex: g.AppliedIndex(),
		StoreSeq:     g.fsm.store.LastSeq(),

		FormatVersion:    g.meta.FormatVersion(),
		MinFormatVersion: formatVersionMin,
		MaxFormatVersion: g.fsm.maxVersion(),
		Verifier:         g.Verifier(),
		Drained:          g.drained.Load(),
		Snapshots:        g.fsm.snapshots.Load(),
		Restores:         g.fsm.restores.Load(),
	}
}
