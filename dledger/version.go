package dledger

import (
	"context"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/metadata"
)

// Format versions: what entries a group may carry. A new entry kind or
// layout gets a new version, and the leader proposes it only once the
// group's version (replicated, metadata.State.FormatVersion) allows it; the
// group's version is raised through raft only when every voter reports
// that it supports it (see doc.go, "Versions").
//
//	version  adds
//	-------  --------------------------------------------------------------
//	1        messages, metadata ops, messages and an op (types 1 to 3)
//	2        replica checkpoints (type 4)
//	3        the group's access-control rules (metadata op "acl", carried
//	         in a type-2 entry whose version byte is 3)
//	4        POP consumption state (metadata op "pop", carried in a type-2
//	         entry whose version byte is 4)
//	5        FIFO subscription groups (a metadata op "putGroup" whose group
//	         sets consumeMessageOrderly, carried in a type-2 entry whose
//	         version byte is 5)
//	6        the switch to one log (metadata op "raftLog", carried in a
//	         type-2 entry whose version byte is 6; convert.go)
const (
	formatVersionMin = 1
	formatVersionMax = 6
	// aclVersion is the format version of the metadata op that replaces
	// the group's access-control rules (metadata.OpACL).
	aclVersion = 3
	// popVersion is the format version of the metadata op that changes
	// the POP consumption state (metadata.OpPop).
	popVersion = 4
	// fifoVersion is the format version of a putGroup op that makes a
	// FIFO group (metadata.SubscriptionGroup.ConsumeMessageOrderly): a
	// binary before it would drop the field and serve the group unordered.
	fifoVersion = 5
	// raftLogVersion is the format version of the metadata op that makes
	// the CommitLog the group's raft log (metadata.OpRaftLog): a binary
	// before it would go on writing two logs, at other offsets.
	raftLogVersion = 6
)

// applyFormatVersion applies an OpFormatVersion entry. A version above
// what this node supports stops it: the group is about to propose entries
// this binary cannot apply (the leader raises the version only when every
// voter supports it, so this is a node that was downgraded since).
func (f *fsm) applyFormatVersion(index uint64, op metadata.Op) applyResult {
	if op.Version > f.maxVersion() {
		return f.stop(index, fmt.Errorf("%w: the group moves to format version %d, this node supports up to %d; run a newer binary",
			ErrBadEntry, op.Version, f.maxVersion()))
	}
	if _, err := f.meta.Apply(index, op); err != nil {
		return f.stop(index, err)
	}
	return applyResult{}
}

func (f *fsm) maxVersion() uint32 {
	if f.maxFormat != 0 {
		return f.maxFormat
	}
	return formatVersionMax
}

// nodeInfo is this node's answer to the node-info request.
// It is asked from the start of Open, before the node's parts exist.
func (g *Group) nodeInfo() nodeInfo {
	ni := nodeInfo{Node: g.cfg.NodeID, MinVersion: formatVersionMin, MaxVersion: formatVersionMax, Drained: g.drained.Load(),
		OneLog: g.wantOneLog}
	if g.cfg.MaxFormatVersion != 0 {
		ni.MaxVersion = g.cfg.MaxFormatVersion
	}
	switch g.layout.Load() {
	case layoutIsWAL:
		ni.Layout = layoutWAL
	case layoutIsCommitLog:
		ni.Layout, ni.OneLog = layoutCommitLog, true
	default:
		ni.Fresh = true
	}
	if r := g.liveRaft.Load(); r != nil {
		ni.LastIndex = r.LastIndex()
		if r.State() == raft.Leader {
			ni.Leader, ni.Term = true, r.CurrentTerm()
		}
	}
	ni.Recovering = g.Abstaining()
	return ni
}

// FormatVersion is the group's format version as this node has applied it.
func (g *Group) FormatVersion() uint32 { return g.meta.FormatVersion() }

// MaxFormatVersion is the highest format version this node applies.
func (g *Group) MaxFormatVersion() uint32 { return g.fsm.maxVersion() }

// raiseVersion runs every few election timeouts while this node is the
// writable leader: it asks each member of the configuration (voters and
// non-voters alike: both apply every entry) for the versions it supports,
// and raises the group's format version through raft to the highest
// version all of them, and this node, support. A member that does not
// answer holds the version where it is.
func (g *Group) raiseVersion() {
	if g.meta.FormatVersion() >= g.fsm.maxVersion() {
		return
	}
	target, err := g.commonVersion()
	g.versionChecks.Add(1)
	if err != nil {
		g.log.Debug("format version stays", "version", g.meta.FormatVersion(), "reason", err)
		return
	}
	if target <= g.meta.FormatVersion() {
		return
	}
	ctx, cancel := context.WithTimeout(g.ctx, g.cfg.ApplyTimeout)
	err = g.ProposeMetadata(ctx, metadata.Op{Kind: metadata.OpFormatVersion, Version: target})
	cancel()
	if err != nil {
		g.log.Warn("raising the group's format version failed", "version", target, "error", err)
		return
	}
	g.log.Info("group format version raised", "version", target)
}

// commonVersion is the highest format version every member supports.
func (g *Group) commonVersion() (uint32, error) {
	ms, err := g.Members()
	if err != nil {
		return 0, err
	}
	v := g.fsm.maxVersion()
	for _, m := range ms {
		if m.ID == g.cfg.NodeID {
			continue
		}
		ni, err := g.mux.askNodeInfo(m.Addr, g.cfg.Timing.ElectionTimeout)
		if err != nil {
			return 0, fmt.Errorf("member %s: %w", m.ID, err)
		}
		if ni.Node != m.ID {
			return 0, fmt.Errorf("member %s answers as %s", m.ID, ni.Node)
		}
		v = min(v, ni.MaxVersion)
	}
	return v, nil
}
