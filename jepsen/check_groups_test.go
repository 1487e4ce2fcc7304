package jepsen

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestGeneratePlanGroups(t *testing.T) {
	ns := []string{NemKill, NemPartition, NemGroupDown}
	p := GeneratePlanGroups(8, 2, 3, 3*time.Minute, ns)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, GeneratePlanGroups(8, 2, 3, 3*time.Minute, ns)) {
		t.Fatal("the same seed drew two plans")
	}
	groups, downs := map[string]int{}, 0
	for _, f := range p.Faults {
		groups[f.Group]++
		if f.Kind != NemGroupDown {
			continue
		}
		downs++
		for _, o := range p.Faults {
			if o.Group != f.Group && o.At < f.At+f.Duration && f.At < o.At+o.Duration {
				t.Fatalf("%s overlaps %s at %v", o, f, o.At)
			}
		}
	}
	if groups["broker-a"] == 0 || groups["broker-b"] == 0 || downs == 0 {
		t.Fatalf("faults by group %v, %d group-down", groups, downs)
	}
	if one := GeneratePlanGroups(8, 1, 3, time.Minute, ns); one.Groups != 0 || strings.Contains(strings.Join(planKinds(one), ","), NemGroupDown) {
		t.Fatalf("a one-group plan: %+v", one)
	}
	bad := Plan{Seed: 1, Nodes: 3, Time: Duration(time.Minute), Faults: []Fault{{At: Duration(time.Second), Kind: NemGroupDown, Group: "broker-a", Targets: []string{TargetAll}, Duration: Duration(time.Second)}}}
	if bad.Validate() == nil {
		t.Fatal("group-down validated in a one-group plan")
	}
	bad.Groups = 2
	bad.Faults[0].Targets = []string{"c0"}
	if bad.Validate() == nil {
		t.Fatal("a node of a third group validated")
	}
}

func planKinds(p Plan) []string {
	var out []string
	for _, f := range p.Faults {
		out = append(out, f.Kind)
	}
	return out
}

// TestCheckGroups: queue 0 offset 0 of each group are different
// positions; an acknowledged value missing from its group is lost there
// and in the topic; the sends during a group-down are counted.
func TestCheckGroups(t *testing.T) {
	groups := map[string][]string{"broker-a": {"n0", "n1"}, "broker-b": {"b0", "b1"}}
	send := func(v, g, node string, at float64) Event {
		return Event{Type: EvSend, Process: "p0", Value: v, Invoke: at, T: at + 1, Outcome: OK, Group: g, Node: node, Queue: 0, Offset: 0, Attempts: 1}
	}
	read := func(v, g, node string) Event {
		return Event{Type: EvRead, Node: node, Value: v, Queue: 0, Offset: 0, Group: g}
	}
	recv := func(v, g string) Event { return Event{Type: EvRecv, Value: v, Queue: 0, Offset: 0, Group: g} }
	evs := []Event{
		send("p0-1", "broker-a", "n0", 10), send("p0-2", "broker-b", "b0", 20),
		{Type: EvFault, Kind: NemGroupDown, Phase: "start", Group: "broker-b", Detail: "broker-b:group-down", T: 15},
		{Type: EvFault, Kind: NemGroupDown, Phase: "end", Group: "broker-b", Detail: "broker-b:group-down", T: 30},
		read("p0-1", "broker-a", "n0"), read("p0-1", "broker-a", "n1"),
		read("p0-2", "broker-b", "b0"), read("p0-2", "broker-b", "b1"),
		recv("p0-1", "broker-a"), recv("p0-2", "broker-b"),
	}
	in := CheckInput{Nodes: []string{"n0", "n1", "b0", "b1"}, Groups: groups}
	r := CheckGroups(evs, in, nil)
	if !r.Valid() || r.Divergent != 0 || r.Acked != 2 || len(r.Groups) != 2 || r.Groups[1].Acked != 1 {
		t.Fatalf("two groups, same positions: %s", r.Summary())
	}
	if r.GroupDown.Sends != 1 || r.GroupDown.Acked != 1 || r.GroupDown.AckedByDown != 1 {
		t.Fatalf("group-down: %+v", r.GroupDown)
	}
	if v := r.VerdictLine(); !strings.HasSuffix(v, " broker-a(acked=1 lost=0 duplicates=0 divergent=0) broker-b(acked=1 lost=0 duplicates=0 divergent=0)") {
		t.Fatalf("verdict %s", v)
	}
	// b1 lacks p0-2: divergent in broker-b only. Then neither b0 nor b1
	// has it: lost, in broker-b and in the topic.
	r = CheckGroups(append(evs[:6:6], read("p0-2", "broker-b", "b0"), recv("p0-1", "broker-a")), in, map[string]string{"broker-b": "differ"})
	if r.Valid() || r.Groups[0].Divergent != 0 || r.Groups[1].Divergent == 0 || r.Groups[1].ReplicaCompare != "differ" {
		t.Fatalf("a divergent group: %s", r.Summary())
	}
	r = CheckGroups(evs[:6], in, nil)
	if r.Lost != 1 || r.Groups[0].Lost != 0 || r.Groups[1].Lost != 1 || r.Valid() {
		t.Fatalf("lost: %s", r.Summary())
	}
	// p0-3 acknowledged by broker-b on its second attempt; the first,
	// given up on, stored it in broker-a too: a copy of a sent value, not
	// an unexpected one in broker-a.
	retried := send("p0-3", "broker-b", "b0", 40)
	retried.Attempts, retried.Offset = 2, 1
	copied := append(slices.Clone(evs), retried,
		Event{Type: EvRead, Node: "b0", Value: "p0-3", Queue: 0, Offset: 1, Group: "broker-b"},
		Event{Type: EvRead, Node: "b1", Value: "p0-3", Queue: 0, Offset: 1, Group: "broker-b"},
		Event{Type: EvRead, Node: "n0", Value: "p0-3", Queue: 0, Offset: 1, Group: "broker-a"},
		Event{Type: EvRead, Node: "n1", Value: "p0-3", Queue: 0, Offset: 1, Group: "broker-a"},
		Event{Type: EvRecv, Value: "p0-3", Queue: 0, Offset: 1, Group: "broker-b"},
		Event{Type: EvRecv, Value: "p0-3", Queue: 0, Offset: 1, Group: "broker-a"})
	r = CheckGroups(copied, in, nil)
	if r.Groups[0].Unexpected != 0 || r.Unexpected != 0 {
		t.Fatalf("a retried send's copy in the other group: %s; broker-a: %s", r.Summary(), r.Groups[0].Summary())
	}
}
