//go:build unix

package devcluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ledgermq/ledgermq/remoting"
)

// FaultKind is one kind of process fault a dev cluster is put through.
// Kills are kill -9 (no shutdown code runs: whatever the node had not made
// durable is gone, and a half-written file is left as it was); stops are
// SIGSTOP then SIGCONT, a node that freezes (a long GC pause, a stalled
// VM) and comes back believing it still holds its old role.
type FaultKind int

// The fault kinds.
const (
	KillLeader   FaultKind = iota // kill -9 of the leader
	KillFollower                  // kill -9 of a follower
	KillTwo                       // kill -9 of two nodes at once: the group loses its quorum
	StopLeader                    // SIGSTOP of the leader, SIGCONT after a hold
	StopFollower                  // SIGSTOP of a follower, SIGCONT after a hold
	numFaultKinds
)

var faultNames = [numFaultKinds]string{"kill-leader", "kill-follower", "kill-two", "stop-leader", "stop-follower"}

// String returns the kind's name as figures lines print it.
func (k FaultKind) String() string {
	if k < 0 || k >= numFaultKinds {
		return "fault(" + strconv.Itoa(int(k)) + ")"
	}
	return faultNames[k]
}

// FaultKinds returns every kind, in a fixed order.
func FaultKinds() []FaultKind {
	ks := make([]FaultKind, numFaultKinds)
	for i := range ks {
		ks[i] = FaultKind(i)
	}
	return ks
}

// PlanFaults draws n faults with rng. The plan is made of rounds, each a
// shuffle of every kind, so that a plan of five or more faults holds every
// kind (a short default run still covers them all) while the order, and
// so which faults follow which, varies with the seed.
func PlanFaults(rng *rand.Rand, n int) []FaultKind {
	plan := make([]FaultKind, 0, n)
	for len(plan) < n {
		round := FaultKinds()
		rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		plan = append(plan, round[:min(len(round), n-len(plan))]...)
	}
	return plan
}

// Fault is one fault as it was injected.
type Fault struct {
	Kind FaultKind
	// Targets are the nodes hit, with the pids they had.
	Targets []Node
	// Roles are the targets' raft roles when they were hit.
	Roles []string
	// Hold is how long stopped processes stayed stopped (stop kinds).
	Hold time.Duration
	// At is when the signals were sent; Done when the fault was over (the
	// kill sent, or the stopped processes continued).
	At, Done time.Time
	// AfterTruncation lists the killed targets whose log showed a raft
	// log-suffix truncation since their last start: their restart goes
	// down the path of the raft-wal v0.4.0 defect.
	AfterTruncation []string
}

// Killed reports whether the fault killed its targets (they must be
// restarted before the group is whole again).
func (f Fault) Killed() bool {
	return f.Kind == KillLeader || f.Kind == KillFollower || f.Kind == KillTwo
}

// String describes the fault, e.g. "kill-two n0 (leader, pid 12) n2
// (follower, pid 14)" or "stop-leader n1 (leader, pid 13) for 1.5s".
func (f Fault) String() string {
	var b strings.Builder
	b.WriteString(f.Kind.String())
	for i, n := range f.Targets {
		fmt.Fprintf(&b, " %s (%s, pid %d)", n.ID, f.Roles[i], n.PID)
	}
	if f.Hold > 0 {
		fmt.Fprintf(&b, " for %v", f.Hold)
	}
	if len(f.AfterTruncation) > 0 {
		fmt.Fprintf(&b, " [after a log-suffix truncation on %s]", strings.Join(f.AfterTruncation, ", "))
	}
	return b.String()
}

// Injector injects faults into the cluster of a dev Process run with
// --restart. It picks its targets by role, with Rng, so that a seed fixes
// the sequence in terms of roles (which node is leader is up to raft).
type Injector struct {
	P      *Process
	Client *remoting.Client
	Rng    *rand.Rand
	// MinHold and MaxHold bound a stop fault's hold, drawn with Rng; zero
	// means 1 s and 3 s: longer than the lan profile's 400 ms heartbeat
	// timeout, so a stopped leader is replaced and comes back deposed.
	MinHold, MaxHold time.Duration
	// PreferTruncated makes the kill faults that pick a follower
	// (kill-follower, the second node of kill-two) pick one whose log
	// shows a raft log-suffix truncation since it last started, when there
	// is one: a restart after a truncation is where raft-wal v0.4.0 lost
	// nodes, and random picks rarely go there. The draws from Rng are the
	// same either way, so the rest of the sequence does not change.
	PreferTruncated bool
}

// Inject applies one fault of kind to the group, which must be serving
// (see Serving): it reads cluster.json for the pids, asks the nodes for
// their roles and picks the targets. A stop fault returns after its hold,
// with the processes continued, also when ctx ends during the hold (a
// process is never left stopped).
func (in *Injector) Inject(ctx context.Context, kind FaultKind) (Fault, error) {
	f := Fault{Kind: kind}
	file, err := ReadFile(in.P.Dir)
	if err != nil {
		return f, err
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	st, err := Serving(rctx, in.Client, file)
	cancel()
	if err != nil {
		return f, fmt.Errorf("devcluster: %v: the group is not serving: %w", kind, err)
	}
	// byRole is the leader, then the followers in ID order: the order the
	// draws below index into.
	var byRole []Node
	var roles []string
	for _, s := range st {
		n, _ := file.NodeByAddr(s.Addr)
		if s.Role == RoleLeader {
			byRole = append([]Node{n}, byRole...)
			roles = append([]string{s.Role}, roles...)
		} else {
			byRole = append(byRole, n)
			roles = append(roles, s.Role)
		}
	}
	pick := func(i ...int) {
		for _, j := range i {
			f.Targets = append(f.Targets, byRole[j])
			f.Roles = append(f.Roles, roles[j])
		}
	}
	followers := len(byRole) - 1
	// truncated is the first follower (index into byRole) whose log shows
	// a suffix truncation since its start, or -1.
	truncated := -1
	if in.PreferTruncated {
		truncated = slices.IndexFunc(byRole, func(n Node) bool { return n.ID != byRole[0].ID && in.P.truncatedSinceStart(n.ID) })
	}
	switch kind {
	case KillLeader, StopLeader:
		pick(0)
	case KillFollower, StopFollower:
		if followers < 1 {
			return f, fmt.Errorf("devcluster: %v: the group has no follower", kind)
		}
		i := 1 + in.Rng.IntN(followers)
		if kind == KillFollower && truncated > 0 {
			i = truncated
		}
		pick(i)
	case KillTwo:
		if len(byRole) < 2 {
			return f, fmt.Errorf("devcluster: %v: the group has fewer than two nodes", kind)
		}
		two := in.Rng.Perm(len(byRole))[:2]
		if truncated > 0 && !slices.Contains(two, truncated) {
			two[1] = truncated
		}
		slices.Sort(two)
		pick(two...)
	default:
		return f, fmt.Errorf("devcluster: unknown fault kind %d", kind)
	}
	if kind == StopLeader || kind == StopFollower {
		lo, hi := in.MinHold, in.MaxHold
		if lo <= 0 {
			lo = time.Second
		}
		if hi <= lo {
			hi = max(lo, 3*time.Second)
		}
		f.Hold = lo + time.Duration(in.Rng.Int64N(int64(hi-lo)+1))
		f.Hold = f.Hold.Round(time.Millisecond)
	}
	f.At = time.Now()
	if f.Killed() {
		for _, n := range f.Targets {
			if in.P.truncatedSinceStart(n.ID) {
				f.AfterTruncation = append(f.AfterTruncation, n.ID)
			}
		}
		for _, n := range f.Targets {
			if err := in.P.Kill9(n.PID); err != nil {
				return f, fmt.Errorf("devcluster: kill -9 %s (pid %d): %w", n.ID, n.PID, err)
			}
		}
		f.Done = time.Now()
		return f, nil
	}
	var stopped []Node
	defer func() { // on an early return: never leave a process stopped
		for _, n := range stopped {
			_ = in.P.SignalNode(n.PID, syscall.SIGCONT)
		}
	}()
	for _, n := range f.Targets {
		if err := in.P.SignalNode(n.PID, syscall.SIGSTOP); err != nil {
			return f, fmt.Errorf("devcluster: SIGSTOP %s (pid %d): %w", n.ID, n.PID, err)
		}
		stopped = append(stopped, n)
	}
	hold := time.NewTimer(f.Hold) // the fault's duration, not a wait for a condition
	defer hold.Stop()
	select {
	case <-hold.C:
	case <-ctx.Done():
	}
	for _, n := range stopped {
		if err := in.P.SignalNode(n.PID, syscall.SIGCONT); err != nil {
			return f, fmt.Errorf("devcluster: SIGCONT %s (pid %d): %w", n.ID, n.PID, err)
		}
	}
	stopped = nil
	f.Done = time.Now()
	return f, ctx.Err()
}

// Restarted returns nil once every node f killed runs again: cluster.json,
// which dev rewrites when it restarts a node, lists a running process for
// it other than the one killed. Otherwise it says which node is not back.
func (p *Process) Restarted(f Fault) error {
	if !f.Killed() {
		return nil
	}
	file, err := ReadFile(p.Dir)
	if err != nil {
		return err
	}
	for _, t := range f.Targets {
		i := slices.IndexFunc(file.Nodes, func(n Node) bool { return n.ID == t.ID })
		if i < 0 {
			return fmt.Errorf("devcluster: %s is not in %s", t.ID, FileName)
		}
		if n := file.Nodes[i]; n.PID == t.PID || !Alive(n.PID) {
			return fmt.Errorf("devcluster: %s (killed pid %d) not restarted yet: %s lists pid %d", t.ID, t.PID, FileName, n.PID)
		}
	}
	return nil
}

var restartedLine = regexp.MustCompile(`(?m)^dev: restarted (\S+) \(pid (\d+)\)$`)

// Restarts counts dev's "dev: restarted nX (pid N)" lines per node.
func (p *Process) Restarts() map[string]int {
	out := map[string]int{}
	for _, m := range restartedLine.FindAllStringSubmatch(p.Output(), -1) {
		out[m[1]]++
	}
	return out
}

// Log text SuffixTruncations looks for in the nodes' logs: hashicorp
// raft's warning when a follower deletes a conflicting suffix of its log,
// and the line `ledgermq broker` prints once it serves ("broker n0 of
// broker-a listening on …").
const (
	suffixTruncationLine = "clearing log suffix"
	nodeStartedLine      = " of " + GroupName + " listening on "
)

// truncatedSinceStart reports whether node id's log shows a suffix
// truncation after the node's last start line.
func (p *Process) truncatedSinceStart(id string) bool {
	data, err := os.ReadFile(filepath.Join(p.Dir, id+".log"))
	if err != nil {
		return false
	}
	text := string(data)
	return strings.Contains(text[max(0, strings.LastIndex(text, nodeStartedLine)):], suffixTruncationLine)
}

// SuffixTruncations counts the raft log-suffix truncations in every
// node's log (DIR/nX.log, appended across restarts). A truncation and then
// a restart is the path on which raft-wal v0.4.0 left a node unable to
// open its log ("sealed segment has no index block"); this and
// Fault.AfterTruncation say whether a run went down that path at all.
func (p *Process) SuffixTruncations() int {
	n := 0
	for _, node := range p.File.Nodes {
		data, err := os.ReadFile(filepath.Join(p.Dir, node.ID+".log"))
		if err == nil {
			n += strings.Count(string(data), suffixTruncationLine)
		}
	}
	return n
}
