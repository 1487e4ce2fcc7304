package jepsen

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/ledgermq/ledgermq/internal/harness/procs"
)

// Plans of two or more broker groups: each group has a timeline of its
// own, drawn as a one-group plan's is (broker-a's from the same stream a
// one-group plan of the seed uses), its targets that group's nodes and
// every fault naming its Group. The timelines run at once, so both groups
// are under faults together. A group-down fault stops one whole group;
// while it lasts the other groups have no fault of their own (the plan
// drops those that would overlap it, and a later group-down that would
// overlap an earlier one), so the producers must keep sending through a
// group that serves.

// groups is the plan's number of broker groups (at least one).
func (p Plan) groups() int { return max(p.Groups, 1) }

// groupIDs are the node ids of group g of n nodes.
func groupIDs(g, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = procs.NodeID(g, i)
	}
	return ids
}

// GeneratePlanGroups draws a plan of groups broker groups of nodes nodes
// each; one group is GeneratePlan's plan. group-down is drawn only in
// plans of two or more groups.
func GeneratePlanGroups(seed int64, groups, nodes int, total time.Duration, nemeses []string) Plan {
	if groups <= 1 {
		return GeneratePlan(seed, nodes, total, slices.DeleteFunc(slices.Clone(nemeses), func(n string) bool { return n == NemGroupDown }))
	}
	p := Plan{Seed: seed, Nodes: nodes, Groups: groups, Time: Duration(total), Nemeses: nemeses}
	var all []Fault
	for g, name := range procs.GroupNames(groups) {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x6a657073656e+uint64(g)))
		for _, f := range timeline(rng, groupIDs(g, nodes), total, nemeses) {
			f.Group = name
			all = append(all, f)
		}
	}
	slices.SortStableFunc(all, func(a, b Fault) int { return int(a.At - b.At) })
	p.Faults = dropOverlapsOfGroupDown(all)
	return p
}

// dropOverlapsOfGroupDown keeps every group-down fault that does not
// overlap an earlier kept one, and every other fault that overlaps no
// kept group-down of another group. faults are sorted by At.
func dropOverlapsOfGroupDown(faults []Fault) []Fault {
	overlaps := func(a, b Fault) bool {
		return a.At < b.At+b.Duration && b.At < a.At+a.Duration
	}
	var downs []Fault
	for _, f := range faults {
		if f.Kind == NemGroupDown && !slices.ContainsFunc(downs, func(d Fault) bool { return overlaps(d, f) }) {
			downs = append(downs, f)
		}
	}
	var out []Fault
	for _, f := range faults {
		if f.Kind == NemGroupDown {
			if slices.ContainsFunc(downs, func(d Fault) bool { return d.At == f.At && d.Group == f.Group }) {
				out = append(out, f)
			}
			continue
		}
		if !slices.ContainsFunc(downs, func(d Fault) bool { return d.Group != f.Group && overlaps(d, f) }) {
			out = append(out, f)
		}
	}
	return out
}
