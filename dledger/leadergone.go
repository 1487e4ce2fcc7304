package dledger

import (
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// A leader whose process dies closes its sockets at once: each follower's
// raft connections from it end (EOF or a reset) long before raft's
// heartbeat timeout would notice the silence. Such an end starts a check
// on the follower, and a follower that finds the leader gone campaigns
// after the leader lease instead of after a random one to three heartbeat
// timeouts:
//
//  1. Gone: the leader's raft port is asked for node info. A refused
//     connection (nothing listens there: the process is gone) or an
//     answer from a node that no longer leads says so; an answer as leader,
//     a timeout or any other error says nothing, and raft's own timing
//     goes on (a machine that vanished, a pause, a partition without
//     resets are found by the heartbeat timeout, as before).
//  2. Order: the other voters are asked for their node info (lastIndex).
//     The follower whose log is shortest campaigns first, the longest last
//     (ties by node id), one step apart: raft's pre-vote (v1.8) refuses a
//     candidate while the refusing node still believes in the old leader,
//     and a node refuses a candidate whose log is shorter than its own, so
//     the first election succeeds only when the candidate with the longest
//     log comes after the others have stopped believing in the old leader.
//     A node that campaigns first and is refused waits as a candidate and
//     votes for the next one.
//  3. Campaign: raft has no call that starts an election, but a follower
//     whose heartbeat timeout is lowered (raft.ReloadConfig) checks its
//     last contact at once against the new timeout. The timeout is first
//     raised just above this node's turn (raising it checks nothing), then,
//     at lastContact + lease + rank × step, lowered to lease + rank × step:
//     raft then finds the leader silent that long and campaigns. The lease
//     is the lowest heartbeat timeout raft accepts.
//  4. Afterwards (a leader elected, or two election timeouts), the
//     configured timing is restored (or a drained node's, drain.go).
//
// Raft's safety does not depend on these timeouts: a wrong "gone" costs an
// election at worst, and raft's own check of the last contact still stands
// between the lowered timeout and a campaign. A drained or abstaining node
// never campaigns early.

// leaderGoneStep is the minimum time between two followers' turns.
const leaderGoneStep = 20 * time.Millisecond

// watchLeaderGone runs the check above whenever a raft connection this
// node accepted ends at the peer's side; it stops with the group.
func (g *Group) watchLeaderGone() {
	defer g.wg.Done()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-g.mux.ended:
		}
		if old, ok := g.leaderGone(); ok {
			g.campaignEarly(old)
		}
	}
}

// leaderGone checks whether the leader this follower follows is gone and
// returns its id.
func (g *Group) leaderGone() (raft.ServerID, bool) {
	if g.ctx.Err() != nil || g.raft.State() != raft.Follower || g.drained.Load() || g.abstaining.Load() {
		return "", false
	}
	addr, id := g.raft.LeaderWithID()
	if id == "" || string(id) == g.cfg.NodeID {
		return "", false
	}
	ni, err := g.mux.askNodeInfo(string(addr), g.cfg.Timing.LeaderLease/2)
	switch {
	case err == nil && !ni.Leader:
	case err != nil && errors.Is(err, syscall.ECONNREFUSED):
	default:
		return "", false
	}
	g.log.Info("the leader is gone: campaigning after the leader lease", "leader", id, "answer", err == nil)
	g.leaderGoneSeen.Add(1)
	return id, true
}

// campaignEarly lets raft campaign at this node's turn (steps 2 to 4).
func (g *Group) campaignEarly(old raft.ServerID) {
	t := g.cfg.Timing
	step := max(t.LeaderLease/3, leaderGoneStep)
	rank, ok := g.leaderGoneRank(old, step)
	if !ok {
		return
	}
	turn := t.LeaderLease + time.Duration(rank)*step
	hold := max(t.HeartbeatTimeout, turn) + time.Millisecond
	if !g.reloadTiming(hold, max(t.ElectionTimeout, hold)) {
		return
	}
	defer g.restoreTiming()
	if !g.waitTurn(old, g.raft.LastContact().Add(turn)) {
		return
	}
	if g.reloadTiming(turn, max(t.ElectionTimeout, hold)) {
		g.earlyCampaigns.Add(1)
	}
	g.waitTurn(old, time.Now().Add(2*max(t.ElectionTimeout, hold)))
}

// leaderGoneRank is how many other voters (the old leader left out) must
// campaign before this node: those whose log is shorter, or as long with
// a smaller node id. A voter that does not answer is not counted; a voter
// that already leads ends the matter (ok false).
func (g *Group) leaderGoneRank(old raft.ServerID, timeout time.Duration) (rank int, ok bool) {
	fut := g.raft.GetConfiguration()
	if fut.Error() != nil {
		return 0, false
	}
	var peers []raft.Server
	for _, s := range fut.Configuration().Servers {
		if s.Suffrage == raft.Voter && s.ID != old && string(s.ID) != g.cfg.NodeID {
			peers = append(peers, s)
		}
	}
	infos := make([]nodeInfo, len(peers))
	errs := make([]error, len(peers))
	var wg sync.WaitGroup
	for i, s := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			infos[i], errs[i] = g.mux.askNodeInfo(string(s.Address), timeout)
		}()
	}
	wg.Wait()
	var answered []nodeInfo
	for i, ni := range infos {
		if errs[i] == nil && ni.Node == string(peers[i].ID) {
			answered = append(answered, ni)
		}
	}
	return campaignRank(g.cfg.NodeID, g.raft.LastIndex(), answered)
}

// campaignRank is node self's place in the order of step 2, its log ending
// at lastIndex, among the voters that answered: how many campaign before
// it. ok is false when one of them leads.
func campaignRank(self string, lastIndex uint64, answered []nodeInfo) (rank int, ok bool) {
	for _, ni := range answered {
		if ni.Leader {
			return 0, false
		}
		if ni.LastIndex < lastIndex || ni.LastIndex == lastIndex && ni.Node < self {
			rank++
		}
	}
	return rank, true
}

// waitTurn waits until at, and reports whether this node is still a
// follower of old (or of no one) then.
func (g *Group) waitTurn(old raft.ServerID, at time.Time) bool {
	timer := time.NewTimer(time.Until(at))
	defer timer.Stop()
	for {
		changed := g.RoleChanged()
		if g.raft.State() != raft.Follower && g.raft.State() != raft.Candidate {
			return false
		}
		if _, id := g.raft.LeaderWithID(); id != "" && id != old {
			return false
		}
		select {
		case <-g.ctx.Done():
			return false
		case <-changed:
		case <-timer.C:
			return true
		}
	}
}

// reloadTiming sets raft's heartbeat and election timeouts, unless the
// node is drained (whose timing drain.go keeps).
func (g *Group) reloadTiming(hb, election time.Duration) bool {
	g.timingMu.Lock()
	defer g.timingMu.Unlock()
	if g.drained.Load() {
		return false
	}
	rc := g.raft.ReloadableConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = hb, election
	if err := g.raft.ReloadConfig(rc); err != nil {
		g.log.Warn("changing raft's timeouts failed", "heartbeat_timeout", hb, "election_timeout", election, "error", err)
		return false
	}
	return true
}

// restoreTiming sets the timing the node runs with: the configured one, or
// a drained node's.
func (g *Group) restoreTiming() {
	if err := g.quiet(g.drained.Load()); err != nil {
		g.log.Warn("restoring raft's timeouts failed", "error", err)
	}
}
