package dledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// Draining (maintenance mode) takes a node out of leadership before an
// operator stops it, as in a rolling restart:
//
//   - Drain hands leadership to an undrained voter when this node leads,
//     and from then on the node does not campaign: its heartbeat and
//     election timeouts are raised (raft.ReloadConfig) so that it never
//     starts an election of its own. It still replicates, votes and
//     serves (a follower forwards sends to the leader), so the group
//     keeps its majority.
//   - Every member reports its drained state in its node-info answer, so
//     no leader hands leadership to a drained node: neither the
//     preferred-leader loop nor a transfer to "any" follower picks one.
//   - A drained node that becomes leader all the same (an explicit
//     transfer to it, a leader of an older binary) gives leadership away
//     again within an election timeout.
//   - The state survives a restart (the DrainMarker file in DataDir), so a
//     restarted node stays out of leadership until Undrain.
//   - At most one voter is drained at a time: Drain refuses while another
//     voter reports itself drained, because two drained voters of three
//     could leave the group unable to elect a leader.

// DrainMarker is the file in a node's DataDir that keeps it drained.
const DrainMarker = "DRAINED"

// quietTimeout is a drained follower's heartbeat and election timeout:
// long enough that it never starts an election.
const quietTimeout = 1000 * time.Hour

// ErrDrain: a drain was refused or could not complete.
var ErrDrain = errors.New("dledger: drain")

// Drained reports whether this node is drained.
func (g *Group) Drained() bool { return g.drained.Load() }

// Drain takes this node out of leadership (see above). It returns once
// another node leads, when this one led, or ctx ends; a node already
// drained is drained again (a no-op when it does not lead).
func (g *Group) Drain(ctx context.Context) error {
	if err := g.otherDrained(); err != nil {
		return err
	}
	if err := vfs.WriteFileAtomic(g.cfg.FS, filepath.Join(g.cfg.DataDir, DrainMarker), []byte(g.cfg.NodeID+"\n")); err != nil {
		return fmt.Errorf("%w: %w", ErrDrain, err)
	}
	g.drained.Store(true)
	g.log.Info("node drained: it hands leadership away and does not campaign")
	if g.raft.State() == raft.Leader {
		if err := g.leave(ctx); err != nil {
			return err
		}
	}
	return g.quiet(true)
}

// Undrain lets this node campaign and lead again.
func (g *Group) Undrain() error {
	if err := g.cfg.FS.Remove(filepath.Join(g.cfg.DataDir, DrainMarker)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %w", ErrDrain, err)
	}
	was := g.drained.Swap(false)
	if was {
		g.log.Info("node undrained: it may lead again")
	}
	return g.quiet(false)
}

// otherDrained refuses a drain while another voter reports itself drained.
func (g *Group) otherDrained() error {
	peers, err := g.peerVoters()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrDrain, err)
	}
	for _, p := range peers {
		if p.err == nil && p.info.Drained {
			return fmt.Errorf("%w: voter %s is drained already; undrain it first (two drained voters could leave the group without a leader)", ErrDrain, p.id)
		}
	}
	return nil
}

// peerVoter is another voter and its node-info answer (err when it did not
// answer).
type peerVoter struct {
	id   string
	info nodeInfo
	err  error
}

// peerVoters asks every other voter for its node info.
func (g *Group) peerVoters() ([]peerVoter, error) {
	ms, err := g.Members()
	if err != nil {
		return nil, err
	}
	var out []peerVoter
	for _, m := range ms {
		if m.ID == g.cfg.NodeID || !m.Voter {
			continue
		}
		ni, err := g.mux.askNodeInfo(m.Addr, g.cfg.Timing.ElectionTimeout)
		out = append(out, peerVoter{id: m.ID, info: ni, err: err})
	}
	return out, nil
}

// leave hands leadership to an undrained voter. It returns once another
// node leads, or ctx ends.
//
// Another transfer may be under way when it starts: the preferred-leader
// loop's, or leaveIfDrained's own, which can run between the drain
// setting the flag and this call. raft refuses a second transfer while
// one runs (ErrLeadershipTransferInProgress; ErrEnqueueTimeout while
// the request before it is not yet taken), so leave waits for that one's
// outcome and tries again if this node still leads.
func (g *Group) leave(ctx context.Context) error {
	t := time.NewTicker(roleRecheck)
	defer t.Stop()
	for {
		// Another transfer's outcome, or the next leader, is a role event.
		changed := g.RoleChanged()
		if g.raft.State() == raft.Leader {
			to, err := g.transferTarget()
			if err != nil {
				return err
			}
			if to == "" {
				return fmt.Errorf("%w: no undrained voter answers to take over leadership", ErrDrain)
			}
			err = g.TransferLeadership(ctx, to)
			if err == nil {
				g.log.Info("leadership handed over by the drain", "leader", to)
				return nil
			}
			if !errors.Is(err, raft.ErrLeadershipTransferInProgress) && !errors.Is(err, raft.ErrEnqueueTimeout) && !errors.Is(err, ErrNotLeader) {
				return err
			}
		} else if _, id := g.raft.LeaderWithID(); id != "" && string(id) != g.cfg.NodeID {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: another node to lead: %w", ErrDrain, ctx.Err())
		case <-changed:
		case <-t.C:
		}
	}
}

// leaveIfDrained runs while this node leads: a drained leader gives
// leadership away again, then stops campaigning.
func (g *Group) leaveIfDrained() {
	if !g.drained.Load() {
		return
	}
	// A leader's replication heartbeats follow its heartbeat timeout:
	// serve at the normal timing until another node leads.
	if err := g.quiet(false); err != nil {
		g.log.Warn("restoring the timing of a drained leader failed", "error", err)
	}
	ctx, cancel := context.WithTimeout(g.ctx, 4*g.cfg.Timing.ElectionTimeout)
	err := g.leave(ctx)
	cancel()
	if err != nil {
		g.log.Warn("a drained node leads and cannot hand leadership away yet", "error", err)
		return
	}
	if err := g.quiet(true); err != nil {
		g.log.Warn("quieting a drained node failed", "error", err)
	}
}

// quiet sets raft's timeouts: quietTimeout while drained (and not
// leading), the configured timing otherwise.
func (g *Group) quiet(on bool) error {
	g.timingMu.Lock()
	defer g.timingMu.Unlock()
	rc := g.raft.ReloadableConfig()
	if on && g.raft.State() != raft.Leader {
		rc.HeartbeatTimeout, rc.ElectionTimeout = quietTimeout, quietTimeout
	} else {
		rc.HeartbeatTimeout, rc.ElectionTimeout = g.cfg.Timing.HeartbeatTimeout, g.cfg.Timing.ElectionTimeout
	}
	if err := g.raft.ReloadConfig(rc); err != nil {
		return fmt.Errorf("%w: %v", ErrDrain, err)
	}
	return nil
}

// transferTarget picks where leadership goes when no node is named: ""
// (raft's own choice, the most caught-up follower) when no voter reports
// itself drained, otherwise an undrained voter that answers (the preferred
// leader first). An error only when the members cannot be read.
func (g *Group) transferTarget() (string, error) {
	peers, err := g.peerVoters()
	if err != nil {
		return "", err
	}
	var eligible []string
	anyDrained := false
	for _, p := range peers {
		switch {
		case p.err != nil:
			// Not answering: raft would not complete a transfer to it.
		case p.info.Drained:
			anyDrained = true
		default:
			eligible = append(eligible, p.id)
		}
	}
	if !anyDrained && !g.drained.Load() {
		return "", nil
	}
	for _, id := range eligible {
		if id == g.cfg.PreferredLeader {
			return id, nil
		}
	}
	if len(eligible) == 0 {
		return "", nil
	}
	return eligible[0], nil
}

// peerDrained reports whether member id says it is drained (false when it
// does not answer).
func (g *Group) peerDrained(id string) bool {
	addr, ok := g.memberAddr(id)
	if !ok {
		return false
	}
	ni, err := g.mux.askNodeInfo(addr, g.cfg.Timing.ElectionTimeout)
	return err == nil && ni.Drained
}

// restoreDrain re-reads the drain marker at start-up.
func (g *Group) restoreDrain() error {
	_, err := os.Stat(filepath.Join(g.cfg.DataDir, DrainMarker))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrDrain, err)
	}
	g.drained.Store(true)
	g.log.Info("node starts drained (DrainMarker present): it does not campaign until undrained")
	return g.quiet(true)
}
