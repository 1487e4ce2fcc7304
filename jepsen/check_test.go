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

// TestCheckExactlyOnce: with ExactlyOnce a retried send stored twice in
// one group fails the verdict, which then carries exactly-once-duplicates;
// without it nothing changes, and the verdict line keeps its old fields.
func TestCheckExactlyOnce(t *testing.T) {
	h := &hist{}
	h.send("p0-1", 0, OK, 0, 0)
	h.evs = append(h.evs, Event{Type: EvSend, Value: "p0-2", Invoke: 10, T: 20, Outcome: OK, Queue: 0, Offset: 1, Attempts: 2, MaybeDup: true})
	vals := []string{"p0-1", "p0-2", "p0-2"}
	for i, v := range vals {
		h.recv(v, 0, int64(i))
	}
	h.read(0, vals, three...)

	r := Check(h.evs, CheckInput{Nodes: three})
	if !r.Valid() || r.Duplicates != 1 || r.GroupDuplicates != 1 || r.ExactlyOnce {
		t.Fatalf("without exactly-once: %s", r.Summary())
	}
	plain := r.VerdictLine()
	if !strings.HasPrefix(plain, "verdict: PASS acked=2 lost=0 unexpected=0 duplicates=1 divergent=0 max-unavailable-ms=") ||
		strings.Contains(plain, "exactly-once") || strings.Contains(r.Summary(), "exactly-once") {
		t.Fatalf("verdict line without exactly-once %q", plain)
	}

	r = Check(h.evs, CheckInput{Nodes: three, ExactlyOnce: true})
	if r.Valid() || r.GroupDuplicates != 1 || r.Duplicates != 1 || r.UnjustifiedDuplicates != 0 ||
		!slices.Contains(r.Problems, "1 messages stored twice within one broker group (exactly-once)") {
		t.Fatalf("exactly-once, stored twice in the group: %s", r.Summary())
	}
	v := r.VerdictLine()
	if !strings.HasPrefix(v, "verdict: FAIL acked=2 lost=0 unexpected=0 duplicates=1 divergent=0 max-unavailable-ms=") ||
		!strings.HasSuffix(v, " exactly-once-duplicates=1") || strings.TrimPrefix(v, "verdict: FAIL") != strings.TrimPrefix(plain, "verdict: PASS")+" exactly-once-duplicates=1" {
		t.Fatalf("verdict line with exactly-once %q (without: %q)", v, plain)
	}
	if !strings.Contains(r.Summary(), "exactly-once duplicates-within-a-group=1") {
		t.Fatalf("summary: %s", r.Summary())
	}

	// Stored once: exactly-once passes and says so.
	r = Check(healthy().evs, CheckInput{Nodes: three, ExactlyOnce: true})
	if !r.Valid() || r.GroupDuplicates != 0 || !strings.HasSuffix(r.VerdictLine(), " exactly-once-duplicates=0") {
		t.Fatalf("exactly-once, stored once: %s\n%s", r.Summary(), r.VerdictLine())
	}
}

// TestCheckExactlyOnceGroups: a value stored in two broker groups (a
// retry that moved) is no group duplicate; one stored twice in one group
// is, in the topic's verdict and in that group's.
func TestCheckExactlyOnceGroups(t *testing.T) {
	groups := map[string][]string{"broker-a": {"n0", "n1"}, "broker-b": {"b0", "b1"}}
	nodes := []string{"n0", "n1", "b0", "b1"}
	stored := func(v, g string, off int64) []Event {
		var out []Event
		for _, n := range groups[g] {
			out = append(out, Event{Type: EvRead, Node: n, Value: v, Queue: 0, Offset: off, Group: g})
		}
		return append(out, Event{Type: EvRecv, Value: v, Queue: 0, Offset: off, Group: g})
	}
	send := func(v, g, node string, at float64, off int64) Event {
		return Event{Type: EvSend, Process: "p0", Value: v, Invoke: at, T: at + 1, Outcome: OK, Group: g, Node: node,
			Queue: 0, Offset: off, Attempts: 2, MaybeDup: true}
	}
	// p0-1 acknowledged by broker-b on its second attempt; the first,
	// whose outcome was unknown, stored it in broker-a (whose narrowed
	// history holds the send too).
	evs := append([]Event{send("p0-1", "broker-b", "b0", 10, 0)}, stored("p0-1", "broker-a", 0)...)
	evs = append(evs, stored("p0-1", "broker-b", 0)...)
	in := CheckInput{Nodes: nodes, Groups: groups, ExactlyOnce: true}
	r := CheckGroups(evs, in, nil)
	if !r.Valid() || r.Duplicates != 1 || r.GroupDuplicates != 0 || r.Groups[0].GroupDuplicates != 0 || r.Groups[1].GroupDuplicates != 0 {
		t.Fatalf("a copy in another group: %s", r.Summary())
	}
	if v := r.VerdictLine(); !strings.Contains(v, " exactly-once-duplicates=0 ") ||
		!strings.HasSuffix(v, " broker-a(acked=1 lost=0 duplicates=0 divergent=0 exactly-once-duplicates=0) broker-b(acked=1 lost=0 duplicates=0 divergent=0 exactly-once-duplicates=0)") {
		t.Fatalf("verdict %s", v)
	}
	// p0-2 acknowledged by broker-a, stored twice there.
	twice := append(slices.Clone(evs), send("p0-2", "broker-a", "n0", 20, 2))
	twice = append(twice, stored("p0-2", "broker-a", 1)...)
	twice = append(twice, stored("p0-2", "broker-a", 2)...)
	r = CheckGroups(twice, in, nil)
	if r.Valid() || r.GroupDuplicates != 1 || r.Groups[0].GroupDuplicates != 1 || r.Groups[1].GroupDuplicates != 0 ||
		!slices.Contains(r.Problems, "broker-a: 1 messages stored twice within one broker group (exactly-once)") {
		t.Fatalf("twice in broker-a: %s", r.Summary())
	}
	if v := r.VerdictLine(); !strings.Contains(v, " exactly-once-duplicates=1 ") ||
		!strings.Contains(v, " broker-a(acked=2 lost=0 duplicates=1 divergent=0 exactly-once-duplicates=1)") {
		t.Fatalf("verdict %s", v)
	}
	// Without ExactlyOnce the same history passes, the verdict as before.
	in.ExactlyOnce = false
	r = CheckGroups(twice, in, nil)
	if !r.Valid() || strings.Contains(r.VerdictLine(), "exactly-once") ||
		!strings.HasSuffix(r.VerdictLine(), " broker-a(acked=2 lost=0 duplicates=1 divergent=0) broker-b(acked=1 lost=0 duplicates=0 divergent=0)") {
		t.Fatalf("without exactly-once: %s\n%s", r.Summary(), r.VerdictLine())
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
