package jepsen

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ledgermq/ledgermq/internal/harness/procs"
)

// ErrPlan is a fault plan that cannot run.
var ErrPlan = errors.New("jepsen: bad plan")

// Nemeses a plan can draw from (the --nemesis names).
const (
	NemKill      = "kill"      // kill -9: a random node, the leader, or a majority; restart after
	NemPause     = "pause"     // SIGSTOP/SIGCONT: the leader or a random node
	NemPartition = "partition" // isolate the leader, majority/minority, bridge, ring
	NemOneWay    = "oneway"    // one direction of the leader's links stalled
	NemLoss      = "loss"      // lossy links of one node (held chunks, as retransmission)
	NemDelay     = "delay"     // delayed links of one node
	NemNamesrv   = "namesrv"   // kill -9 of the name server
	NemTransfer  = "transfer"  // leadership-transfer storm
	NemPower     = "power"     // power loss: kill -9, files cut back to what was fsynced, restart
	NemDiskFull  = "disk-full" // a node's file system filled until ENOSPC, then freed
	NemMember    = "member"    // a node removed from the raft group, added back (wiped or not)
	NemHostile   = "hostile"   // stalled partial frames against the name server and nodes' client ports
	// NemGroupDown stops every node of one broker group (SIGINT, as an
	// operator stops a group) and starts them again; runs of two or more
	// groups only (plan_groups.go).
	NemGroupDown = "group-down"
)

// AllNemeses is every nemesis, the order --nemesis all expands to.
var AllNemeses = []string{NemKill, NemPause, NemPartition, NemOneWay, NemLoss, NemDelay, NemNamesrv, NemTransfer, NemPower, NemDiskFull, NemMember, NemHostile}

// Target selectors resolved when a fault starts (anything else is a
// node id).
const (
	TargetLeader = "leader"
)

// Duration is a time.Duration written as Go text ("1.5s") in JSON.
type Duration time.Duration

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as text.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads text, or a number of milliseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var ms float64
		if err := json.Unmarshal(b, &ms); err != nil {
			return fmt.Errorf("%w: duration %s", ErrPlan, b)
		}
		*d = Duration(ms * float64(time.Millisecond))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPlan, err)
	}
	*d = Duration(v)
	return nil
}

// Fault is one nemesis operation of a plan: it starts At after the load
// began and is healed Duration later.
type Fault struct {
	At       Duration `json:"at"`
	Kind     string   `json:"kind"`
	Targets  []string `json:"targets,omitempty"` // node ids or "leader"
	Duration Duration `json:"duration"`
	// Shape of a partition: isolate (Targets cut from the rest), halves
	// (Targets, a minority, cut from the rest), bridge (Groups[0] and
	// Groups[1] cut from each other, Targets[0] sees both), ring (each of
	// Targets sees only its neighbours in that order).
	Shape  string     `json:"shape,omitempty"`
	Groups [][]string `json:"groups,omitempty"`
	// Inbound: a oneway fault stalls what the targets receive rather than
	// what they send.
	Inbound bool `json:"inbound,omitempty"`
	// Delay and Jitter of a delay fault; Loss of a loss fault.
	Delay  Duration `json:"delay,omitempty"`
	Jitter Duration `json:"jitter,omitempty"`
	Loss   float64  `json:"loss,omitempty"`
	// Every of a transfer storm: the pause between transfers.
	Every Duration `json:"every,omitempty"`
	// Wipe: a member fault replaces the removed node with an empty one
	// (its data moved aside, as an operator rebuilding it); otherwise the
	// node keeps running, removed, and rejoins with its own files.
	Wipe bool `json:"wipe,omitempty"`
	// Group is the broker group the fault acts in (plans of two or more
	// groups; "" in a one-group plan): "leader" and "all" resolve there.
	Group string `json:"group,omitempty"`
}

func (f Fault) String() string {
	var b strings.Builder
	if f.Group != "" {
		b.WriteString(f.Group + ":")
	}
	b.WriteString(f.Kind)
	if f.Shape != "" {
		b.WriteString("/" + f.Shape)
	}
	if len(f.Targets) > 0 {
		b.WriteString("(" + strings.Join(f.Targets, ",") + ")")
	}
	if f.Wipe {
		b.WriteString(" wiped")
	}
	return b.String()
}

// Plan is a whole run's fault schedule, generated before the run from
// Seed (plan.json in the run directory; `replay PLAN` runs it again).
type Plan struct {
	Seed  int64 `json:"seed"`
	Nodes int   `json:"nodes"` // in each group
	// Groups is the number of broker groups (0 or 1: one, broker-a).
	Groups  int      `json:"groups,omitempty"`
	Time    Duration `json:"time"`
	Nemeses []string `json:"nemeses"`
	Faults  []Fault  `json:"faults"`
}

// Plan timing: a quiet start, fault lengths and the calm between faults
// (each a uniform draw), and the end kept free of faults so the last one
// heals before the load stops.
const (
	planQuiet  = 5 * time.Second
	planMinDur = 3 * time.Second
	planMaxDur = 10 * time.Second
	planMinGap = 4 * time.Second
	planMaxGap = 8 * time.Second
	planTail   = 3 * time.Second
)

// ParseNemeses reads a --nemesis list ("all" is every nemesis).
func ParseNemeses(s string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
		case n == "all":
			out = append(out, AllNemeses...)
		case slices.Contains(AllNemeses, n) || n == NemGroupDown:
			out = append(out, n)
		case n == "none":
		default:
			return nil, fmt.Errorf("%w: unknown nemesis %q (want some of %s, all or none)", ErrPlan, n, strings.Join(AllNemeses, ","))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// GeneratePlan draws the whole schedule from seed: faults one after the
// other (never overlapping, so each window is one fault), kinds uniformly
// from nemeses, targets and parameters from the same rand.
func GeneratePlan(seed int64, nodes int, total time.Duration, nemeses []string) Plan {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x6a657073656e))
	p := Plan{Seed: seed, Nodes: nodes, Time: Duration(total), Nemeses: nemeses}
	p.Faults = timeline(rng, groupIDs(0, nodes), total, nemeses)
	return p
}

// timeline draws one group's faults (ids are its nodes) one after the
// other over total.
func timeline(rng *rand.Rand, ids []string, total time.Duration, nemeses []string) []Fault {
	var faults []Fault
	nodes := len(ids)
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)) }
	at := planQuiet
	for len(nemeses) > 0 {
		dur := between(planMinDur, planMaxDur)
		if at+dur+planTail > total {
			break
		}
		kind := nemeses[rng.IntN(len(nemeses))]
		f := Fault{At: Duration(at.Round(time.Millisecond)), Kind: kind, Duration: Duration(dur.Round(time.Millisecond))}
		shuffled := slices.Clone(ids)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		minority := shuffled[:(nodes-1)/2]
		majority := shuffled[:nodes/2+1]
		switch kind {
		case NemKill:
			f.Targets = leaderOneOr(rng, shuffled, majority)
		case NemPause:
			if rng.IntN(2) == 0 {
				f.Targets = []string{TargetLeader}
			} else {
				f.Targets = shuffled[:1]
			}
		case NemPartition:
			shapes := []string{"isolate", "halves"}
			if nodes >= 3 {
				shapes = append(shapes, "bridge")
			}
			if nodes >= 5 {
				shapes = append(shapes, "ring")
			}
			f.Shape = shapes[rng.IntN(len(shapes))]
			switch f.Shape {
			case "isolate":
				f.Targets = []string{TargetLeader}
			case "halves":
				f.Targets = slices.Clone(minority)
				if len(f.Targets) == 0 {
					f.Targets = shuffled[:1]
				}
			case "bridge":
				rest := shuffled[1:]
				half := len(rest) / 2
				f.Targets = shuffled[:1]
				f.Groups = [][]string{slices.Clone(rest[:half]), slices.Clone(rest[half:])}
			case "ring":
				f.Targets = shuffled
			}
		case NemOneWay:
			f.Targets = []string{TargetLeader}
			f.Inbound = rng.IntN(2) == 0
		case NemLoss:
			f.Targets = pickLeaderOr(rng, shuffled[0])
			f.Loss = []float64{0.1, 0.3, 0.5}[rng.IntN(3)]
		case NemDelay:
			f.Targets = pickLeaderOr(rng, shuffled[0])
			f.Delay = Duration(time.Duration(50+rng.IntN(151)) * time.Millisecond)
			f.Jitter = f.Delay / 2
		case NemNamesrv:
			f.Targets = []string{Namesrv}
		case NemTransfer:
			f.Every = Duration(time.Duration(500+rng.IntN(1001)) * time.Millisecond)
		case NemPower:
			f.Targets = leaderOneOr(rng, shuffled, []string{TargetAll})
		case NemDiskFull:
			f.Targets = pickLeaderOr(rng, shuffled[0])
		case NemMember:
			f.Targets = shuffled[:1]
			f.Wipe = rng.IntN(2) == 0
		case NemHostile:
			f.Targets = []string{Namesrv, TargetLeader}
			if rng.IntN(2) == 0 {
				f.Targets = []string{Namesrv, TargetAll}
			}
		case NemGroupDown:
			f.Targets = []string{TargetAll}
		}
		faults = append(faults, f)
		at += dur + between(planMinGap, planMaxGap)
	}
	return faults
}

// leaderOneOr draws, one in three each, the leader, the first of
// shuffled, or many.
func leaderOneOr(rng *rand.Rand, shuffled, many []string) []string {
	switch rng.IntN(3) {
	case 0:
		return []string{TargetLeader}
	case 1:
		return shuffled[:1]
	default:
		return many
	}
}

func pickLeaderOr(rng *rand.Rand, node string) []string {
	if rng.IntN(2) == 0 {
		return []string{TargetLeader}
	}
	return []string{node}
}

// Validate checks that every fault can run on p.Nodes nodes.
func (p Plan) Validate() error {
	if p.Nodes < 1 || p.Nodes > 9 {
		return fmt.Errorf("%w: %d nodes", ErrPlan, p.Nodes)
	}
	if p.Time <= 0 {
		return fmt.Errorf("%w: time %v", ErrPlan, time.Duration(p.Time))
	}
	if p.Groups < 0 || p.Groups > procs.MaxGroups {
		return fmt.Errorf("%w: %d groups", ErrPlan, p.Groups)
	}
	names := procs.GroupNames(p.groups())
	for i, f := range p.Faults {
		// A node id of the fault's group (any group when it names none).
		known := func(id string) bool {
			g, n, ok := procs.ParseNodeID(id)
			inGroup := ok && g < p.groups() && n < p.Nodes && (f.Group == "" || names[g] == f.Group)
			return id == TargetLeader || id == TargetAll || id == Namesrv || inGroup
		}
		if !slices.Contains(AllNemeses, f.Kind) && f.Kind != NemGroupDown {
			return fmt.Errorf("%w: fault %d: unknown kind %q", ErrPlan, i, f.Kind)
		}
		if f.Group != "" && !slices.Contains(names, f.Group) {
			return fmt.Errorf("%w: fault %d (%s): no group %q in a plan of %d", ErrPlan, i, f, f.Group, p.groups())
		}
		if f.Kind == NemGroupDown && (p.groups() < 2 || f.Group == "") {
			return fmt.Errorf("%w: fault %d: group-down needs a plan of two or more groups and the fault's group", ErrPlan, i)
		}
		if f.At < 0 || f.Duration <= 0 || f.Loss < 0 || f.Loss > 1 {
			return fmt.Errorf("%w: fault %d (%s): bad time, duration or loss", ErrPlan, i, f)
		}
		for _, t := range append(slices.Concat(f.Groups...), f.Targets...) {
			if !known(t) {
				return fmt.Errorf("%w: fault %d (%s): unknown target %q", ErrPlan, i, f, t)
			}
		}
	}
	return nil
}

// has reports whether any fault of p is of kind.
func (p Plan) has(kind string) bool {
	return slices.ContainsFunc(p.Faults, func(f Fault) bool { return f.Kind == kind })
}

// WritePlan writes p as indented JSON.
func WritePlan(path string, p Plan) error {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// ReadPlan reads and validates a plan file.
func ReadPlan(path string) (Plan, error) {
	var p Plan
	data, err := os.ReadFile(path)
	if err != nil {
		return p, fmt.Errorf("%w: %w", ErrPlan, err)
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return p, fmt.Errorf("%w: %s: %w", ErrPlan, path, err)
	}
	return p, p.Validate()
}
