package dledger

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// Role names.
const (
	RoleLeader    = "leader"
	RoleFollower  = "follower"
	RoleCandidate = "candidate"
	RoleShutdown  = "shutdown"
)

// RoleEvent tells the broker what this node is now. A leader is announced
// only once it accepts writes (its Barrier completed), so a broker that
// registers with the name server on the event never claims brokerId 0
// before it can serve (docs/invariants.md I6). Term fences stale claims.
type RoleEvent struct {
	Role       string
	Term       uint64
	LeaderID   string
	LeaderAddr string
}

// Role returns the last role event.
func (g *Group) Role() RoleEvent {
	if r := g.role.Load(); r != nil {
		return *r
	}
	return RoleEvent{Role: RoleFollower}
}

// IsLeader reports whether this node is the leader and takes writes.
func (g *Group) IsLeader() bool { return g.ready.Load() }

// RoleChanged returns a channel that is closed at the next role event (a
// change of Role, and so of IsLeader or the known leader). A waiter takes
// the channel first, then reads Role or IsLeader, then waits on the
// channel, so that no change between the read and the wait is missed.
func (g *Group) RoleChanged() <-chan struct{} { return *g.roleChanged.Load() }

func (g *Group) setRole(ev RoleEvent) {
	prev := g.role.Swap(&ev)
	if prev != nil && *prev == ev {
		return
	}
	next := make(chan struct{})
	close(*g.roleChanged.Swap(&next))
	g.log.Info("role changed", roleLogArgs(ev, g.cfg.NodeID)...)
	if g.cfg.OnRoleChange != nil {
		g.cfg.OnRoleChange(ev)
	}
}

// roleLogArgs describes a role event for the log. An elected leader that
// does not take writes yet is announced as a candidate (RoleEvent) but
// logged as what it is, a leader that is not writable; the leader is
// named only when it is another node.
func roleLogArgs(ev RoleEvent, self string) []interface{} {
	switch {
	case ev.Role == RoleCandidate && ev.LeaderID == self:
		return []interface{}{"role", RoleLeader, "writable", false, "term", ev.Term}
	case ev.Role == RoleLeader:
		return []interface{}{"role", RoleLeader, "writable", true, "term", ev.Term}
	case ev.LeaderID != "" && ev.LeaderID != self:
		return []interface{}{"role", ev.Role, "term", ev.Term, "leader", ev.LeaderID}
	}
	return []interface{}{"role", ev.Role, "term", ev.Term}
}

func (g *Group) currentRole() RoleEvent {
	addr, id := g.raft.LeaderWithID()
	ev := RoleEvent{Term: g.raft.CurrentTerm(), LeaderID: string(id), LeaderAddr: string(addr)}
	switch g.raft.State() {
	case raft.Leader:
		ev.Role = RoleLeader
		if !g.ready.Load() {
			// Not yet writable: announce as candidate until the barrier.
			ev.Role = RoleCandidate
		}
	case raft.Candidate:
		ev.Role = RoleCandidate
	case raft.Shutdown:
		ev.Role = RoleShutdown
	default:
		ev.Role = RoleFollower
	}
	return ev
}

// watchRoles follows raft's leadership notifications. On becoming leader it
// runs a Barrier, so everything committed before this term is applied
// before the node takes writes.
func (g *Group) watchRoles() {
	defer g.wg.Done()
	// The observer is registered after raft started: a leader this node
	// heard of before then (a restarted follower's first append) raised no
	// observation, and none follows while the leader stays the same. The
	// role is read once now, after registering, so it is not missed.
	g.setRole(g.currentRole())
	// raft's observation of a lost leader can come before its state turns
	// candidate, and none follows while the node campaigns: the role is
	// read again every heartbeat timeout, and taken when it (not just the
	// term) changed.
	recheck := time.NewTicker(max(g.cfg.Timing.HeartbeatTimeout, 50*time.Millisecond))
	defer recheck.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-recheck.C:
			if ev, cur := g.currentRole(), g.role.Load(); cur == nil || ev.Role != cur.Role || ev.LeaderID != cur.LeaderID {
				g.setRole(ev)
			}
		case leader := <-g.notifyCh:
			if !leader {
				g.ready.Store(false)
				g.dups.IdleDuplicates()
				g.setRole(g.currentRole())
				continue
			}
			g.setRole(g.currentRole())
			g.becomeReady()
		case <-g.obsCh:
			g.setRole(g.currentRole())
		}
	}
}

func (g *Group) becomeReady() {
	for g.raft.State() == raft.Leader && g.ctx.Err() == nil {
		err := g.awaitRaft(g.raft.Barrier(g.cfg.ApplyTimeout))
		if err == nil {
			// A group records its settings before its first write.
			if err := g.bootstrapSettings(); err != nil {
				g.log.Warn("recording the group's settings failed", "error", err)
				continue
			}
			if g.raft.State() == raft.Leader && g.failure() == nil {
				g.dups.IndexDuplicates()
				// The barrier settled every entry of an earlier term,
				// and the fresh index holds what it committed.
				g.prop.pending.clearDoubts()
				g.ready.Store(true)
				g.setRole(g.currentRole())
			}
			return
		}
		g.log.Warn("barrier after election failed", "error", err)
	}
}

// roleRecheck is how often waitRole reads raft's own view again between
// role events: raft can know a leader a little before the event that
// tells it (watchRoles).
const roleRecheck = 50 * time.Millisecond

// waitRole waits until cond holds, reading it again at every role event
// and every roleRecheck, or until ctx ends (its error).
func (g *Group) waitRole(ctx context.Context, cond func() bool) error {
	t := time.NewTicker(roleRecheck)
	defer t.Stop()
	for {
		changed := g.RoleChanged()
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-t.C:
		}
	}
}

// WaitLeader waits until some node of the group is known as leader and
// returns its id and raft address.
func (g *Group) WaitLeader(ctx context.Context) (string, string, error) {
	var addr raft.ServerAddress
	var id raft.ServerID
	if err := g.waitRole(ctx, func() bool {
		addr, id = g.raft.LeaderWithID()
		return id != ""
	}); err != nil {
		return "", "", fmt.Errorf("dledger: no leader: %w", err)
	}
	return string(id), string(addr), nil
}

// TransferLeadership hands leadership to the node with id to, or, when to
// is empty, to the most caught-up follower (to an undrained voter once any
// member is drained, see drain.go). raft brings the target up to
// date first and gives up after the election timeout; this waits until
// another node leads or ctx ends.
func (g *Group) TransferLeadership(ctx context.Context, to string) error {
	if g.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	if to == "" {
		var err error
		if to, err = g.transferTarget(); err != nil {
			return fmt.Errorf("%w: %v", ErrTransfer, err)
		}
	}
	var f raft.Future
	if to == "" {
		f = g.raft.LeadershipTransfer()
	} else {
		addr, ok := g.memberAddr(to)
		if !ok {
			return fmt.Errorf("%w: %s is not a member", ErrTransfer, to)
		}
		f = g.raft.LeadershipTransferToServer(raft.ServerID(to), raft.ServerAddress(addr))
	}
	if err := g.awaitRaft(f); err != nil {
		return fmt.Errorf("%w: %w", ErrTransfer, err)
	}
	if err := g.waitRole(ctx, func() bool {
		_, id := g.raft.LeaderWithID()
		return id != "" && string(id) != g.cfg.NodeID && (to == "" || string(id) == to)
	}); err != nil {
		return fmt.Errorf("%w: %v", ErrTransfer, err)
	}
	return nil
}

// whileLeading calls f every interval while this node is the writable
// leader, on a goroutine of the group (g.wg) that ends with it.
func (g *Group) whileLeading(every time.Duration, f func()) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-g.ctx.Done():
				return
			case <-t.C:
			}
			if g.ready.Load() {
				f()
			}
		}
	}()
}

// preferLeader moves leadership to the preferred node when it is a voter
// (run while this node leads); raft only completes the transfer once the
// target has caught up, so a lagging or absent node is retried later.
func (g *Group) preferLeader() {
	if g.cfg.PreferredLeader == g.cfg.NodeID || !g.isVoter(g.cfg.PreferredLeader) || g.peerDrained(g.cfg.PreferredLeader) {
		return
	}
	ctx, cancel := context.WithTimeout(g.ctx, 4*g.cfg.Timing.ElectionTimeout)
	err := g.TransferLeadership(ctx, g.cfg.PreferredLeader)
	cancel()
	if err != nil {
		g.log.Debug("transfer to preferred leader not done yet", "target", g.cfg.PreferredLeader, "error", err)
	}
}
