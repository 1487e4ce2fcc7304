package client

// Drain and rolling restart: RAFT_DRAIN (4010) and the sequence `ledgermq
// admin cluster rolling-restart` drives, one node at a time:
//
//	drain      leadership moves to an undrained voter (when the node led)
//	           and the node stops campaigning; it keeps serving as a
//	           follower, which forwards sends to the leader
//	route wait when it led: clients that still route to it (the standard
//	           client re-reads routes every 30 s) keep being forwarded
//	           until their next route poll has passed
//	restart    the caller's Restarter stops the node and starts it again
//	           (maybe a new binary): a supervisor, a service manager, dev
//	catch up   the node answers again, knows the leader, and has applied
//	           the leader's commit index (within the slack)
//	undrain    it may lead again
//
// A node of an older build that has no drain (REQUEST_CODE_NOT_SUPPORTED:
// an upgrade from such a build) gets a leadership transfer instead when it
// leads; it runs the new build, and is undrained, after its restart.
//
// Followers go first and the leader last, so a rolling restart costs the
// group one leader change. The whole group must be healthy before a node
// is taken down and after it is back.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// leaderPoll is how often Drain looks again for a group's leader while
// the group elects one.
const leaderPoll = 200 * time.Millisecond

// ErrRollingRestart: a rolling restart stopped before every node was
// restarted (the error says at which node and step).
var ErrRollingRestart = errors.New("client: rolling restart")

// Drain drains (drain=true) or undrains the member node of group
// (RAFT_DRAIN, 4010, sent to the node itself). A drain of the leader
// returns once another node leads. While the group elects a leader it
// waits for one (until ctx ends).
func (a *Admin) Drain(ctx context.Context, group, node string, drain bool) error {
	_, ls, err := a.WaitGroupLeader(ctx, group)
	if err != nil {
		return err
	}
	addr, err := memberAddr(ls, node)
	if err != nil {
		return err
	}
	return a.drainAt(ctx, addr, protocol.RaftDrainHeader{Node: node, Drain: drain})
}

// WaitGroupLeader is GroupLeader, waiting while the group elects a leader
// (until ctx ends): right after a drain of the leader, or a failover,
// there is none for a moment.
func (a *Admin) WaitGroupLeader(ctx context.Context, group string) (string, protocol.RaftStatus, error) {
	g, ls, err := a.GroupLeader(ctx, group)
	for errors.Is(err, ErrLeaderNotFound) {
		select {
		case <-ctx.Done():
			return g, ls, fmt.Errorf("%w (waited for one until %w)", err, ctx.Err())
		case <-time.After(leaderPoll):
		}
		g, ls, err = a.GroupLeader(ctx, group)
	}
	return g, ls, err
}

// memberAddr is the client-facing address of member node in ls.
func memberAddr(ls protocol.RaftStatus, node string) (string, error) {
	for _, m := range ls.Members {
		if m.ID == node {
			if m.ClientAddr == "" {
				return "", fmt.Errorf("%w: the leader of %s does not know %s's client address", ErrNoSuchBroker, ls.Group, node)
			}
			return m.ClientAddr, nil
		}
	}
	return "", fmt.Errorf("%w: %s is not a member of %s", ErrNoSuchBroker, node, ls.Group)
}

// Restarter stops member m and starts it again; it returns once the new
// process runs (not necessarily serving yet).
type Restarter func(ctx context.Context, m protocol.RaftMember) error

// RollingRestartOptions tune RollingRestart.
type RollingRestartOptions struct {
	// RouteWait is how long a drained former leader keeps serving (as a
	// forwarder) before it is restarted, so clients that route to it
	// re-read their routes first: the standard client's route poll is
	// 30 s. Zero restarts at once (fine for our client, which re-reads
	// routes as soon as the leader changes).
	RouteWait time.Duration
	// Slack is how far behind the leader's commit index a restarted node
	// may be when it counts as caught up (DefaultCatchUpSlack when 0).
	Slack uint64
	// Poll is how often readiness is checked (100 ms when 0).
	Poll time.Duration
	// Progress, when set, hears each step for people.
	Progress func(format string, args ...any)
}

// RollingRestartStep is what RollingRestart did to one node.
type RollingRestartStep struct {
	Node string `json:"node"`
	// WasLeader: the node led when its turn came.
	WasLeader bool `json:"wasLeader"`
	// DrainMS, DownMS and CatchUpMS time the drain, the restart and the
	// catch-up.
	DrainMS   int64 `json:"drainMs"`
	DownMS    int64 `json:"restartMs"`
	CatchUpMS int64 `json:"catchUpMs"`
}

// RollingRestart restarts every member of group one at a time (see the
// top of this file): followers first, the leader last.
func (a *Admin) RollingRestart(ctx context.Context, group string, restart Restarter, o RollingRestartOptions) ([]RollingRestartStep, error) {
	if o.Poll == 0 {
		o.Poll = 100 * time.Millisecond
	}
	if o.Slack == 0 {
		o.Slack = DefaultCatchUpSlack
	}
	say := o.Progress
	if say == nil {
		say = func(string, ...any) {}
	}
	g, ls, err := a.GroupLeader(ctx, group)
	if err != nil {
		return nil, err
	}
	if err := a.waitHealthy(ctx, g, o); err != nil {
		return nil, fmt.Errorf("%w: the group is not healthy before the first node: %w", ErrRollingRestart, err)
	}
	order := append([]protocol.RaftMember(nil), ls.Members...)
	sort.SliceStable(order, func(i, j int) bool { return order[j].ID == ls.Node && order[i].ID != ls.Node })
	var steps []RollingRestartStep
	for _, m := range order {
		st, err := a.restartOne(ctx, g, m, restart, o, say)
		steps = append(steps, st)
		if err != nil {
			return steps, fmt.Errorf("%w: node %s: %w", ErrRollingRestart, m.ID, err)
		}
	}
	return steps, nil
}

// restartOne drains, restarts, waits for and undrains one member.
func (a *Admin) restartOne(ctx context.Context, group string, m protocol.RaftMember, restart Restarter, o RollingRestartOptions, say func(string, ...any)) (RollingRestartStep, error) {
	st := RollingRestartStep{Node: m.ID}
	ls, err := a.waitLeader(ctx, group, o.Poll)
	if err != nil {
		return st, err
	}
	st.WasLeader = ls.Node == m.ID
	t0 := time.Now()
	say("%s: draining%s\n", m.ID, map[bool]string{true: " (the leader: leadership moves away)", false: ""}[st.WasLeader])
	drained := true
	if err := a.drainAt(ctx, m.ClientAddr, protocol.RaftDrainHeader{Node: m.ID, Drain: true}); err != nil {
		if !notSupported(err) {
			return st, fmt.Errorf("drain: %w", err)
		}
		// A node of an older build, which has no drain (an upgrade in
		// progress): hand leadership away if it leads, and go on.
		drained = false
		say("%s: its build has no drain; leadership is transferred instead\n", m.ID)
		if st.WasLeader {
			if _, err := a.call(ctx, ls.LeaderAddr, protocol.RaftNodeHeader{}.Request(remoting.RaftTransferLeader), membershipTimeout); err != nil {
				return st, fmt.Errorf("transfer before the restart: %w", err)
			}
			if err := a.waitLeaderOtherThan(ctx, group, m.ID, o.Poll); err != nil {
				return st, fmt.Errorf("transfer before the restart: %w", err)
			}
		}
	}
	st.DrainMS = time.Since(t0).Milliseconds()
	if st.WasLeader && o.RouteWait > 0 {
		say("%s: serving as a forwarder for %v while clients re-read their routes\n", m.ID, o.RouteWait)
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(o.RouteWait):
		}
	}
	t1 := time.Now()
	say("%s: restarting\n", m.ID)
	if err := restart(ctx, m); err != nil {
		return st, fmt.Errorf("restart: %w", err)
	}
	if err := a.waitHealthy(ctx, group, o); err != nil {
		return st, fmt.Errorf("after the restart: %w", err)
	}
	st.DownMS = time.Since(t1).Milliseconds()
	t2 := time.Now()
	// The restarted node runs the new build; undrain it even when the old
	// one could not drain (an undrain of a node not drained does nothing).
	if err := a.drainAt(ctx, m.ClientAddr, protocol.RaftDrainHeader{Node: m.ID, Drain: false}); err != nil && (drained || !notSupported(err)) {
		return st, fmt.Errorf("undrain: %w", err)
	}
	st.CatchUpMS = time.Since(t2).Milliseconds()
	say("%s: back, caught up and undrained\n", m.ID)
	return st, nil
}

// waitLeaderOtherThan waits until the group's leader, as its members and
// the name servers tell, is a node other than id (a transfer's new leader
// takes a moment to be known everywhere).
func (a *Admin) waitLeaderOtherThan(ctx context.Context, group, id string, poll time.Duration) error {
	err := pollUntil(ctx, poll, func() error {
		_, ls, err := a.GroupLeader(ctx, group)
		if err == nil && ls.Node == id {
			err = fmt.Errorf("%s still leads", id)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("no other leader than %s: %w", id, err)
	}
	return nil
}

// waitLeader is GroupLeader, asked again while no leader is known (between
// two steps leadership may be moving).
func (a *Admin) waitLeader(ctx context.Context, group string, poll time.Duration) (protocol.RaftStatus, error) {
	var ls protocol.RaftStatus
	err := pollUntil(ctx, poll, func() (err error) {
		_, ls, err = a.GroupLeader(ctx, group)
		return err
	})
	return ls, err
}

// pollUntil calls check every poll until it returns nil or ctx ends (then
// the error says what the last check found).
func pollUntil(ctx context.Context, poll time.Duration, check func() error) error {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		last := check()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-t.C:
		}
	}
}

// drainAt sends one RAFT_DRAIN request to addr.
func (a *Admin) drainAt(ctx context.Context, addr string, h protocol.RaftDrainHeader) error {
	_, err := a.call(ctx, addr, h.Request(), membershipTimeout)
	return err
}

// waitHealthy waits until the group has a leader and every member answers
// and has applied the leader's commit index within the slack.
func (a *Admin) waitHealthy(ctx context.Context, group string, o RollingRestartOptions) error {
	return pollUntil(ctx, o.Poll, func() error { return a.healthyOnce(ctx, group, o.Slack) })
}

// healthyOnce is one check of waitHealthy.
func (a *Admin) healthyOnce(ctx context.Context, group string, slack uint64) error {
	_, ls, err := a.GroupLeader(ctx, group)
	if err != nil {
		return err
	}
	for _, ms := range a.RaftMembers(ctx, ls) {
		if ms.Error != "" {
			return fmt.Errorf("%s does not answer: %s", ms.ID, ms.Error)
		}
		if ms.Lag > slack {
			return fmt.Errorf("%s is %d entries behind the leader", ms.ID, ms.Lag)
		}
		if ms.Role != "leader" && ms.Role != "follower" {
			return fmt.Errorf("%s is %s", ms.ID, ms.Role)
		}
	}
	return nil
}

// notSupported: the broker does not know the request (an older build).
func notSupported(err error) bool {
	var be *BrokerError
	return errors.As(err, &be) && be.Code == remoting.RequestCodeNotSupported
}
