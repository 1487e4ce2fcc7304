package jepsen

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestGeneratePlanIsSeeded(t *testing.T) {
	a := GeneratePlan(42, 5, 5*time.Minute, AllNemeses)
	b := GeneratePlan(42, 5, 5*time.Minute, AllNemeses)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("one seed gave two plans")
	}
	if c := GeneratePlan(43, 5, 5*time.Minute, AllNemeses); reflect.DeepEqual(a, c) {
		t.Fatal("two seeds gave one plan")
	}
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	var end time.Duration
	for _, f := range a.Faults {
		kinds[f.Kind] = true
		if time.Duration(f.At) < end {
			t.Fatalf("fault %s at %v overlaps the one before (ends %v)", f, f.At, end)
		}
		end = time.Duration(f.At + f.Duration)
	}
	if end > 5*time.Minute {
		t.Fatalf("last fault ends at %v, after the load", end)
	}
	if len(kinds) < len(AllNemeses)/2 {
		t.Fatalf("five minutes drew only %v", kinds)
	}
	// A few seeds between them draw every nemesis.
	for seed := int64(43); seed < 48; seed++ {
		for _, f := range GeneratePlan(seed, 5, 5*time.Minute, AllNemeses).Faults {
			kinds[f.Kind] = true
		}
	}
	if len(kinds) != len(AllNemeses) {
		t.Fatalf("six seeds drew only %v of %v", kinds, AllNemeses)
	}
}

func TestPlanRoundTrip(t *testing.T) {
	p := GeneratePlan(7, 3, time.Minute, []string{NemKill, NemPartition})
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := WritePlan(path, p); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPlan(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, got) {
		t.Fatalf("round trip:\n%+v\n%+v", p, got)
	}
}

func TestPlanValidateRefuses(t *testing.T) {
	p := GeneratePlan(7, 3, time.Minute, []string{NemKill})
	p.Faults = append(p.Faults, Fault{At: Duration(time.Second), Kind: NemKill, Targets: []string{"n7"}, Duration: Duration(time.Second)})
	if err := p.Validate(); !errors.Is(err, ErrPlan) {
		t.Fatalf("node n7 of 3: %v", err)
	}
	p.Faults = []Fault{{Kind: "flood", Duration: Duration(time.Second)}}
	if err := p.Validate(); !errors.Is(err, ErrPlan) {
		t.Fatalf("unknown kind: %v", err)
	}
	if _, err := ParseNemeses("kill,flood"); !errors.Is(err, ErrPlan) {
		t.Fatalf("ParseNemeses(flood): %v", err)
	}
	if ns, err := ParseNemeses("all"); err != nil || len(ns) != len(AllNemeses) {
		t.Fatalf("all: %v %v", ns, err)
	}
}

func TestPartitionShapes(t *testing.T) {
	ids := []string{"n0", "n1", "n2", "n3", "n4"}
	cut := func(f Fault, targets []string) map[Link]bool {
		m := map[Link]bool{}
		for _, l := range partitionLinks(f, targets, ids) {
			m[l] = true
		}
		return m
	}
	iso := cut(Fault{Shape: "isolate"}, []string{"n2"})
	if len(iso) != 8 || !iso[Link{"n2", "n0"}] || !iso[Link{"n0", "n2"}] || iso[Link{"n0", "n1"}] {
		t.Fatalf("isolate n2: %v", iso)
	}
	br := cut(Fault{Shape: "bridge", Groups: [][]string{{"n0", "n1"}, {"n3", "n4"}}}, []string{"n2"})
	if len(br) != 8 || br[Link{"n2", "n0"}] || !br[Link{"n0", "n3"}] || br[Link{"n0", "n1"}] {
		t.Fatalf("bridge: %v", br)
	}
	ring := cut(Fault{Shape: "ring"}, ids)
	// Each node keeps its two neighbours: 5×2 of 20 directed links are cut.
	if len(ring) != 10 || ring[Link{"n0", "n1"}] || ring[Link{"n4", "n0"}] || !ring[Link{"n0", "n2"}] {
		t.Fatalf("ring: %v", ring)
	}
}

func TestGeneratePlanMember(t *testing.T) {
	p := GeneratePlan(1, 3, 5*time.Minute, []string{NemMember})
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	wiped := map[bool]int{}
	for _, f := range p.Faults {
		if f.Kind != NemMember || len(f.Targets) != 1 || f.Targets[0] == TargetLeader {
			t.Fatalf("member fault %+v: want one node", f)
		}
		wiped[f.Wipe]++
	}
	if wiped[true] == 0 || wiped[false] == 0 {
		t.Fatalf("five minutes of member faults: %v wiped/kept, want both", wiped)
	}
	if s := (Fault{Kind: NemMember, Targets: []string{"n1"}, Wipe: true}).String(); s != "member(n1) wiped" {
		t.Fatalf("String %q", s)
	}
}
