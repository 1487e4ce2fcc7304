package jepsen

import (
	"slices"
	"strings"
	"testing"
)

// hist builds histories for the checker tests: sends, deliveries and
// the final reads of each node.
type hist struct{ evs []Event }

func (h *hist) send(v string, t float64, outcome string, q int32, off int64) *hist {
	seq, _ := parseValue(v)
	h.evs = append(h.evs, Event{Type: EvSend, Value: v, Seq: seq, Invoke: t, T: t + 1, Outcome: outcome, Queue: q, Offset: off, Attempts: 1, Node: "n0"})
	return h
}

func (h *hist) recv(v string, q int32, off int64) *hist {
	h.evs = append(h.evs, Event{Type: EvRecv, Value: v, Queue: q, Offset: off})
	return h
}

// read puts vals at offsets 0.. of queue q on each node.
func (h *hist) read(q int32, vals []string, nodes ...string) *hist {
	for _, n := range nodes {
		for i, v := range vals {
			h.evs = append(h.evs, Event{Type: EvRead, Node: n, Value: v, Queue: q, Offset: int64(i)})
		}
	}
	return h
}

var three = []string{"n0", "n1", "n2"}

// healthy is a history where p0-1..p0-4 were acked, stored and
// delivered once.
func healthy() *hist {
	h := &hist{}
	vals := []string{"p0-1", "p0-2", "p0-3", "p0-4"}
	for i, v := range vals {
		h.send(v, float64(10*i), OK, 0, int64(i))
		h.recv(v, 0, int64(i))
	}
	return h.read(0, vals, three...)
}

func TestCheckHealthyPasses(t *testing.T) {
	r := Check(healthy().evs, CheckInput{Nodes: three})
	if !r.Valid() || r.Acked != 4 || r.Lost != 0 {
		t.Fatalf("healthy history: %s", r.Summary())
	}
	if !strings.HasPrefix(r.VerdictLine(), "verdict: PASS acked=4 lost=0 unexpected=0 duplicates=0 divergent=0 max-unavailable-ms=") {
		t.Fatalf("verdict line %q", r.VerdictLine())
	}
}

func TestCheckLostSplits(t *testing.T) {
	h := &hist{}
	// p0-1 (prefix), p0-3 (middle), p0-5 (postfix) acked and never stored.
	for i := 1; i <= 5; i++ {
		h.send("p0-"+string(rune('0'+i)), float64(10*i), OK, 0, int64(i))
	}
	h.recv("p0-2", 0, 0).recv("p0-4", 0, 1)
	h.read(0, []string{"p0-2", "p0-4"}, three...)
	r := Check(h.evs, CheckInput{Nodes: three})
	if r.Lost != 3 || r.LostPrefix != 1 || r.LostMiddle != 1 || r.LostPostfix != 1 || r.Valid() {
		t.Fatalf("lost split: %s", r.Summary())
	}
	if r.LostByAcker["n0"] != 3 || r.LostOnNode["n1"] != 3 {
		t.Fatalf("per node: by acker %v, on node %v", r.LostByAcker, r.LostOnNode)
	}
	if !strings.Contains(r.VerdictLine(), "FAIL") || !strings.Contains(r.VerdictLine(), "lost=3") {
		t.Fatalf("verdict %q", r.VerdictLine())
	}
}

func TestCheckLostOnOneReplicaIsDivergence(t *testing.T) {
	h := &hist{}
	h.send("p0-1", 0, OK, 0, 0).send("p0-2", 10, OK, 0, 1)
	h.recv("p0-1", 0, 0).recv("p0-2", 0, 1)
	h.read(0, []string{"p0-1", "p0-2"}, "n0", "n1")
	h.read(0, []string{"p0-1"}, "n2")
	r := Check(h.evs, CheckInput{Nodes: three})
	if r.Lost != 0 || r.LostOnNode["n2"] != 1 || r.Divergent != 1 || r.Valid() {
		t.Fatalf("one replica short: %s", r.Summary())
	}
}

func TestCheckUnexpected(t *testing.T) {
	h := healthy()
	h.recv("p9-1", 1, 0).read(1, []string{"p9-1"}, three...)
	r := Check(h.evs, CheckInput{Nodes: three})
	if r.Unexpected != 1 || r.Valid() {
		t.Fatalf("unexpected: %s", r.Summary())
	}
}

func TestCheckDuplicates(t *testing.T) {
	h := &hist{}
	h.send("p0-1", 0, OK, 0, 0)
	h.evs = append(h.evs, Event{Type: EvSend, Value: "p0-2", Invoke: 10, T: 20, Outcome: OK, Queue: 0, Offset: 2, Attempts: 2, MaybeDup: true})
	vals := []string{"p0-1", "p0-2", "p0-2"}
	for i, v := range vals {
		h.recv(v, 0, int64(i))
	}
	h.read(0, vals, three...)
	r := Check(h.evs, CheckInput{Nodes: three})
	if r.Duplicates != 1 || r.UnjustifiedDuplicates != 0 || !r.Valid() {
		t.Fatalf("a retried send stored twice is allowed: %s", r.Summary())
	}
	// The same with a single acknowledged attempt: the broker applied it twice.
	h = &hist{}
	h.send("p0-1", 0, OK, 0, 0)
	vals = []string{"p0-1", "p0-1"}
	h.recv("p0-1", 0, 0).recv("p0-1", 0, 1)
	h.read(0, vals, three...)
	r = Check(h.evs, CheckInput{Nodes: three})
	if r.UnjustifiedDuplicates != 1 || r.Valid() {
		t.Fatalf("one attempt stored twice: %s", r.Summary())
	}
}

func TestCheckDeliveredThenGone(t *testing.T) {
	// p0-2 was delivered at offset 1 (served before it was committed) and
	// the final log holds p0-3 there.
	h := &hist{}
	h.send("p0-1", 0, OK, 0, 0).send("p0-2", 10, Unknown, -1, -1).send("p0-3", 20, OK, 0, 1)
	h.recv("p0-1", 0, 0).recv("p0-2", 0, 1).recv("p0-3", 0, 1)
	h.read(0, []string{"p0-1", "p0-3"}, three...)
	r := Check(h.evs, CheckInput{Nodes: three})
	if r.InconsistentOffsets != 1 || r.Valid() {
		t.Fatalf("delivered then gone: %s", r.Summary())
	}
}

func TestCheckReorderAndGap(t *testing.T) {
	h := &hist{}
	h.send("p0-1", 0, OK, 0, 1).send("p0-2", 10, OK, 0, 0)
	h.recv("p0-2", 0, 0)
	h.read(0, []string{"p0-2", "p0-1"}, three...)
	r := Check(h.evs, CheckInput{Nodes: three})
	if r.Reorders != 1 || r.Gaps != 1 || r.Valid() {
		t.Fatalf("reorder and gap: %s", r.Summary())
	}
}

func TestCheckReplicaBytesDiffer(t *testing.T) {
	r := Check(healthy().evs, CheckInput{Nodes: three, ReplicaCompare: "segment 0 differs"})
	if r.Divergent != 1 || r.Valid() {
		t.Fatalf("commitlog bytes differ: %s", r.Summary())
	}
}

func TestCheckOffsets(t *testing.T) {
	h := healthy()
	// While running, n0 loses a few pending commits and n1 answers 0
	// while it catches up: reported, allowed.
	h.evs = append(h.evs,
		Event{Type: EvOffset, Node: "n0", Queue: 0, Offset: 500}, Event{Type: EvOffset, Node: "n0", Queue: 0, Offset: 480},
		Event{Type: EvOffset, Node: "n1", Queue: 0, Offset: 500}, Event{Type: EvOffset, Node: "n1", Queue: 0, Offset: 0})
	for _, n := range three {
		h.evs = append(h.evs, Event{Type: EvOffset, Kind: "final", Node: n, Queue: 0, Offset: 520})
	}
	r := Check(h.evs, CheckInput{Nodes: three})
	if r.OffsetRegressions != 2 || r.OffsetDivergent != 0 || !r.Valid() {
		t.Fatalf("regressions while running: %s", r.Summary())
	}
	// Converged replicas that disagree: one forgot its offsets.
	h.evs = append(h.evs, Event{Type: EvOffset, Kind: "final", Node: "n2", Queue: 1, Offset: 0},
		Event{Type: EvOffset, Kind: "final", Node: "n0", Queue: 1, Offset: 300}, Event{Type: EvOffset, Kind: "final", Node: "n1", Queue: 1, Offset: 300})
	r = Check(h.evs, CheckInput{Nodes: three})
	if r.OffsetDivergent != 1 || r.Divergent != 1 || r.Valid() {
		t.Fatalf("final offsets differ: %s", r.Summary())
	}
}

func TestCheckAvailability(t *testing.T) {
	h := &hist{}
	// Acks at 1, 11, then nothing until 5011: a 5 s hole during a fault
	// on the leader that began at 100.
	h.send("p0-1", 0, OK, 0, 0).send("p0-2", 10, OK, 0, 1)
	h.evs = append(h.evs,
		Event{Type: EvFault, T: 100, Kind: NemKill, Phase: "start", Targets: []string{"n0"}, Leader: "n0", Detail: "kill(leader)"},
		Event{Type: EvSend, Value: "p0-3", Invoke: 200, T: 2200, Outcome: Unknown, Queue: -1, Offset: -1},
		Event{Type: EvSend, Value: "p0-4", Invoke: 2300, T: 5011, Outcome: OK, Queue: 0, Offset: 2, Attempts: 1},
		Event{Type: EvFault, T: 6000, Kind: NemKill, Phase: "end", Targets: []string{"n0"}, Detail: "kill(leader)"},
	)
	vals := []string{"p0-1", "p0-2", "p0-4"}
	for i, v := range vals {
		h.recv(v, 0, int64(i))
	}
	h.read(0, vals, three...)
	r := Check(h.evs, CheckInput{Nodes: three})
	if r.MaxUnavailableMS != 5000 {
		t.Fatalf("max unavailable %v, want 5000", r.MaxUnavailableMS)
	}
	if !slices.Equal(r.FailoverMS, []float64{4911}) || r.FailoverMax != 4911 {
		t.Fatalf("failover %v", r.FailoverMS)
	}
	if r.OKRatioInFaults != 0.5 || r.OKRatioOutside != 1 {
		t.Fatalf("ok ratios in %v out %v", r.OKRatioInFaults, r.OKRatioOutside)
	}
	if !r.Valid() || r.Recovered != 0 {
		t.Fatalf("%s", r.Summary())
	}
}

func TestCheckNoFinalReadFails(t *testing.T) {
	r := Check(healthy().evs, CheckInput{Nodes: three, NoFinalRead: "n1: timeout"})
	if r.Valid() {
		t.Fatal("a run without its final read passed")
	}
}
