package jepsen

import (
	"slices"
	"testing"
	"time"
)

func TestPlanPowerAndDiskFull(t *testing.T) {
	p := GeneratePlan(11, 3, 5*time.Minute, []string{NemPower, NemDiskFull})
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range p.Faults {
		if len(f.Targets) != 1 {
			t.Fatalf("%s: targets %v", f, f.Targets)
		}
		tg := f.Targets[0]
		switch f.Kind {
		case NemPower:
			seen["power/"+map[bool]string{true: "all", false: "one"}[tg == TargetAll]] = true
		case NemDiskFull:
			if tg == TargetAll {
				t.Fatalf("disk-full of every node: %s", f)
			}
			seen["disk-full"] = true
		default:
			t.Fatalf("unexpected kind %s", f.Kind)
		}
	}
	for _, k := range []string{"power/all", "power/one", "disk-full"} {
		if !seen[k] {
			t.Errorf("five minutes drew no %s (%v)", k, seen)
		}
	}
	if !needsSyncReport(p) || !needsOwnDisks(p) {
		t.Fatal("the plan's nodes get no sync report or no disks of their own")
	}
	if needsSyncReport(GeneratePlan(11, 3, time.Minute, []string{NemKill})) {
		t.Fatal("a plan without power faults asks for the sync report")
	}
	bad := Plan{Seed: 1, Nodes: 3, Time: Duration(time.Minute), Faults: []Fault{{At: Duration(time.Second), Kind: NemPower, Targets: []string{"n7"}, Duration: Duration(time.Second)}}}
	if bad.Validate() == nil {
		t.Fatal("a power fault on n7 of 3 nodes validated")
	}
	n := &nemesis{c: &Cluster{Nodes: []*Node{{ID: "n0"}, {ID: "n1"}, {ID: "n2"}}}}
	if got := n.resolve([]string{TargetAll}, "n1", ""); !slices.Equal(got, []string{"n0", "n1", "n2"}) {
		t.Fatalf("all resolved to %v", got)
	}
}
