package jepsen

import (
	"fmt"
	"slices"
	"strings"
)

// GroupResult is the checkers' finding for one broker group of a run of
// two or more: the history narrowed to the group (CheckGroups).
type GroupResult struct {
	Name string `json:"name"`
	*Result
}

// GroupDownResult counts the sends invoked while a whole group was down
// (group-down faults): the producers must keep sending through the
// other groups.
type GroupDownResult struct {
	Faults int `json:"faults"`
	Sends  int `json:"sends"`
	Acked  int `json:"acked"`
	// AckedByDown counts sends acknowledged by a node of the group that
	// was down (a defect: it was not running).
	AckedByDown int `json:"acked_by_down"`
}

// CheckGroups checks a run of two or more broker groups: the whole topic
// (every group's queues, each replica compared within its group) and
// each group alone. The verdict is FAIL when either finds a problem; a
// group's problems are prefixed with its name. groupCompare is each
// group's CommitLog comparison ("" identical).
func CheckGroups(evs []Event, in CheckInput, groupCompare map[string]string) *Result {
	var cmp []string
	for _, g := range slices.Sorted(mapKeys(in.Groups)) {
		if groupCompare[g] != "" {
			cmp = append(cmp, g+": "+groupCompare[g])
		}
	}
	in.ReplicaCompare = strings.Join(cmp, "; ")
	r := Check(evs, in)
	for _, g := range slices.Sorted(mapKeys(in.Groups)) {
		gin := CheckInput{Nodes: in.Groups[g], Groups: map[string][]string{g: in.Groups[g]},
			ReplicaCompare: groupCompare[g], NoFinalRead: in.NoFinalRead, ExactlyOnce: in.ExactlyOnce}
		gr := Check(groupEvents(evs, g), gin)
		r.Groups = append(r.Groups, GroupResult{Name: g, Result: gr})
		for _, p := range gr.Problems {
			r.Problems = append(r.Problems, g+": "+p)
		}
	}
	r.GroupDown = groupDown(evs, in.Groups)
	return r
}

// groupEvents narrows a history to group g: its nodes' reads, statuses
// and offsets, its queues' deliveries, its faults, the sends it
// acknowledged, and the other sends whose value it stored or delivered
// (so that they count as recovered or as copies, not unexpected).
func groupEvents(evs []Event, g string) []Event {
	held := map[string]bool{}
	for _, e := range evs {
		if (e.Type == EvRead || e.Type == EvRecv) && e.Group == g {
			held[e.Value] = true
		}
	}
	var out []Event
	for _, e := range evs {
		switch {
		case e.Type == EvPhase, e.Type == EvPop && e.Kind == PopStart:
		case e.Type == EvSend, e.Type == EvTxn:
			// A send acknowledged by another group may have stored its
			// value here too, on an earlier attempt the client gave up on
			// (a retry goes to whichever group is up): that value was sent
			// (the topic-wide check counts the copy), not unexpected here.
			// A transaction is the group's whose half message it stored,
			// or whose value it holds (which then must have been
			// committed there).
			if !held[e.Value] && (e.Outcome != OK || e.Group != g) {
				continue
			}
		default:
			if e.Group != g {
				continue
			}
		}
		out = append(out, e)
	}
	return out
}

// groupDown counts the sends invoked while a group-down fault lasted.
func groupDown(evs []Event, groups map[string][]string) GroupDownResult {
	type win struct {
		start, end float64
		group      string
	}
	var ws []win
	open := map[string]int{}
	for _, e := range evs {
		if e.Type != EvFault || e.Kind != NemGroupDown {
			continue
		}
		switch e.Phase {
		case "start":
			open[e.Detail] = len(ws)
			ws = append(ws, win{start: e.T, end: e.T, group: e.Group})
		case "end":
			if i, ok := open[e.Detail]; ok {
				ws[i].end = e.T
				delete(open, e.Detail)
			}
		}
	}
	r := GroupDownResult{Faults: len(ws)}
	for _, e := range evs {
		if e.Type != EvSend {
			continue
		}
		i := slices.IndexFunc(ws, func(w win) bool { return e.Invoke >= w.start && e.Invoke <= w.end })
		if i < 0 {
			continue
		}
		r.Sends++
		if e.Outcome == OK {
			r.Acked++
			// Sent during the fault, acknowledged by a node of the stopped
			// group before the fault healed.
			if slices.Contains(groups[ws[i].group], e.Node) && e.T <= ws[i].end {
				r.AckedByDown++
			}
		}
	}
	return r
}

// groupsVerdict is the verdict line's part for each group.
func (r *Result) groupsVerdict() string {
	var b strings.Builder
	for _, g := range r.Groups {
		fmt.Fprintf(&b, " %s(acked=%d lost=%d duplicates=%d divergent=%d%s)", g.Name, g.Acked, g.Lost, g.Duplicates, g.Divergent,
			g.exactlyOnceVerdict())
	}
	return b.String()
}

// groupsSummary is the summary's lines for each group and for the sends
// during group-down faults.
func (r *Result) groupsSummary() string {
	var b strings.Builder
	for _, g := range r.Groups {
		identical := "yes"
		if g.ReplicaCompare != "" {
			identical = "no: " + g.ReplicaCompare
		}
		fmt.Fprintf(&b, "group    %s acked=%d lost=%d duplicates=%d (unjustified %d) divergent=%d reorders=%d gaps=%d replicas-identical=%s\n",
			g.Name, g.Acked, g.Lost, g.Duplicates, g.UnjustifiedDuplicates, g.Divergent, g.Reorders, g.Gaps, identical)
		if g.ExactlyOnce {
			fmt.Fprintf(&b, "group    %s exactly-once duplicates-within-the-group=%d\n", g.Name, g.GroupDuplicates)
		}
		if t := g.Txn; t.Attempted > 0 {
			fmt.Fprintf(&b, "group    %s txn half-ok=%d committed=%d check-backs=%d txn-lost=%d txn-rolledback-delivered=%d txn-duplicates=%d txn-misplaced=%d\n",
				g.Name, t.HalfOK, t.Committed, t.CheckBacks, t.Lost, t.RolledBackDelivered, t.Duplicates, t.Misplaced)
		}
		if rg := g.Register; rg.Ops > 0 {
			fmt.Fprintf(&b, "group    %s register linearizable=%t (porcupine %s) ops=%d keys=%d\n", g.Name, rg.Linearizable, rg.Outcome, rg.Ops, rg.Keys)
		}
		b.WriteString(g.Pop.summary(g.Name + " "))
	}
	if r.GroupDown.Faults > 0 {
		fmt.Fprintf(&b, "group-down faults=%d sends=%d acked=%d acked-by-the-stopped-group=%d\n",
			r.GroupDown.Faults, r.GroupDown.Sends, r.GroupDown.Acked, r.GroupDown.AckedByDown)
	}
	return b.String()
}
