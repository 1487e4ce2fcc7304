//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/devcluster"
	"github.com/ledgermq/ledgermq/jepsen"
)

// TestJepsenTwoGroups runs the harness on two broker groups of three
// nodes for 30 s: the leader of broker-a killed, then the whole of
// broker-b stopped for 8 s and started again, then a node of broker-b
// paused. It takes about 40 s. Nothing acknowledged may be lost in either group or in the
// topic, each group's replicas must agree, both groups must have
// acknowledged sends, and sends must have been acknowledged (by
// broker-a) while broker-b was down.
func TestJepsenTwoGroups(t *testing.T) {
	bin := devcluster.Build(t)
	sec := func(s float64) jepsen.Duration { return jepsen.Duration(time.Duration(s * float64(time.Second))) }
	plan := jepsen.Plan{Seed: 6, Nodes: 3, Groups: 2, Time: sec(30), Nemeses: []string{jepsen.NemKill, jepsen.NemGroupDown, jepsen.NemPause},
		Faults: []jepsen.Fault{
			{At: sec(4), Kind: jepsen.NemKill, Group: "broker-a", Targets: []string{jepsen.TargetLeader}, Duration: sec(4)},
			{At: sec(11), Kind: jepsen.NemGroupDown, Group: "broker-b", Targets: []string{jepsen.TargetAll}, Duration: sec(8)},
			{At: sec(22), Kind: jepsen.NemPause, Group: "broker-b", Targets: []string{"b1"}, Duration: sec(3)},
		}}
	out, dir, err := replayPlan(t, bin, plan, "--producers", "3")
	v := verdictOf(t, out)
	if err != nil || !strings.HasPrefix(v, "verdict: PASS ") || !strings.Contains(v, " lost=0 ") || !strings.Contains(v, " divergent=0 ") {
		t.Fatalf("%s (exit: %v)", v, err)
	}
	for _, g := range []string{"broker-a", "broker-b"} {
		if !strings.Contains(v, " "+g+"(acked=") || !strings.Contains(v, g+"(acked=") {
			t.Fatalf("the verdict line lacks %s: %s", g, v)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var results struct{ Result *jepsen.Result }
	if err := json.Unmarshal(data, &results); err != nil || results.Result == nil {
		t.Fatalf("results.json: %v", err)
	}
	r := results.Result
	if len(r.Groups) != 2 {
		t.Fatalf("results for %d groups", len(r.Groups))
	}
	for _, g := range r.Groups {
		if g.Acked == 0 || g.Lost != 0 || g.Divergent != 0 || g.UnjustifiedDuplicates != 0 || g.ReplicaCompare != "" {
			t.Errorf("%s: acked=%d lost=%d divergent=%d unjustified duplicates=%d replicas %q",
				g.Name, g.Acked, g.Lost, g.Divergent, g.UnjustifiedDuplicates, g.ReplicaCompare)
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
	// check recomputes the same verdict offline.
	again, err := runJepsenBin(t, bin, "check", dir)
	if err != nil || verdictOf(t, again) != v {
		t.Fatalf("jepsen check: %q (exit %v), the run said %q", verdictOf(t, again), err, v)
	}
}
