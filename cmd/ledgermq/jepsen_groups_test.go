//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/jepsen"
)

// TestJepsenTwoGroups runs the harness on two broker groups of three
// nodes for 30 s with the transactions and the consumer-offset register
// beside the queue: b2 removed from broker-b and added back wiped while
// the leader of broker-a is killed, then the whole of broker-b stopped
// for 7 s and started again, then a power loss of broker-a's leader while
// stalled frames hold broker-b's leader and the name server. It takes
// about 90 s: the drain waits for the transactions committed at
// check-back, which the brokers ask about every 30 s. Nothing acknowledged may be lost in either group or in the
// topic, each group's replicas must agree, the register must be
// linearizable in each group, both groups must have acknowledged sends
// and committed transactions, and sends must have been acknowledged (by
// broker-a) while broker-b was down.
func TestJepsenTwoGroups(t *testing.T) {
	bin := devcluster.Build(t)
	sec := func(s float64) jepsen.Duration { return jepsen.Duration(time.Duration(s * float64(time.Second))) }
	plan := jepsen.Plan{Seed: 6, Nodes: 3, Groups: 2, Time: sec(30),
		Nemeses: []string{jepsen.NemKill, jepsen.NemGroupDown, jepsen.NemMember, jepsen.NemPower, jepsen.NemHostile},
		Faults: []jepsen.Fault{
			{At: sec(3), Kind: jepsen.NemMember, Group: "broker-b", Targets: []string{"b2"}, Wipe: true, Duration: sec(4)},
			{At: sec(4), Kind: jepsen.NemKill, Group: "broker-a", Targets: []string{jepsen.TargetLeader}, Duration: sec(4)},
			{At: sec(12), Kind: jepsen.NemGroupDown, Group: "broker-b", Targets: []string{jepsen.TargetAll}, Duration: sec(7)},
			{At: sec(21), Kind: jepsen.NemPower, Group: "broker-a", Targets: []string{jepsen.TargetLeader}, Duration: sec(3)},
			{At: sec(22), Kind: jepsen.NemHostile, Group: "broker-b", Targets: []string{jepsen.Namesrv, jepsen.TargetLeader}, Duration: sec(4)},
		}}
	out, dir, err := replayPlan(t, bin, plan, "--producers", "3", "--workload", "queue,txn,register")
	v := verdictOf(t, out)
	if err != nil || !strings.HasPrefix(v, "verdict: PASS ") || !strings.Contains(v, " lost=0 ") || !strings.Contains(v, " divergent=0 ") {
		t.Fatalf("%s (exit: %v)", v, err)
	}
	if !strings.Contains(out, "\nregister linearizable=true ") {
		t.Errorf("the consumer-offset register was not found linearizable")
	}
	for _, g := range []string{"broker-a", "broker-b"} {
		if !strings.Contains(v, " "+g+"(acked=") || !strings.Contains(v, g+"(acked=") {
			t.Fatalf("the verdict line lacks %s: %s", g, v)
		}
	}
	r := runResult(t, dir)
	if len(r.Groups) != 2 {
		t.Fatalf("results for %d groups", len(r.Groups))
	}
	for _, g := range r.Groups {
		if g.Acked == 0 || g.Lost != 0 || g.Divergent != 0 || g.UnjustifiedDuplicates != 0 || g.ReplicaCompare != "" {
			t.Errorf("%s: acked=%d lost=%d divergent=%d unjustified duplicates=%d replicas %q",
				g.Name, g.Acked, g.Lost, g.Divergent, g.UnjustifiedDuplicates, g.ReplicaCompare)
		}
		if tx, rg := g.Txn, g.Register; tx.Committed == 0 || tx.Lost != 0 || tx.Misplaced != 0 || rg.Ops == 0 || !rg.Linearizable {
			t.Errorf("%s: transactions %+v; register linearizable=%t ops=%d (%s)", g.Name, tx, rg.Linearizable, rg.Ops, rg.Info)
		}
	}
	// Each nemesis acted in its group: b2 added back, broker-a's leader
	// cut back, broker-b's leader attacked.
	steps := map[string]bool{}
	for _, e := range runHistory(t, dir) {
		if e.Type == jepsen.EvFault && e.Phase == "step" && e.Error == "" {
			steps[e.Group+" "+e.Kind+" "+strings.Fields(e.Detail + " -")[0]] = true
		}
	}
	for _, want := range []string{"broker-b member add", "broker-b member wipe", "broker-a power cut", "broker-b hostile stalled"} {
		if !steps[want] {
			t.Errorf("no step %q in the history (steps: %v)", want, steps)
		}
	}
	if gd := r.GroupDown; gd.Faults != 1 || gd.Acked == 0 || gd.AckedByDown != 0 {
		t.Errorf("while broker-b was down: %+v", gd)
	}
	t.Logf("while broker-b was down: %+v", r.GroupDown)
	report, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if !bytes.Contains(report, []byte("broker-b(acked=")) || !bytes.Contains(report, []byte("faults b")) {
		t.Errorf("report.html does not show both groups")
	}
	checkAgain(t, bin, dir, v)
}
