//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/jepsen"
)

// runJepsenBin runs the built binary's jepsen command and returns its
// stdout; a FAIL verdict exits 1, which the caller sees in the output.
func runJepsenBin(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"jepsen"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	t.Logf("jepsen %s:\n%s%s", strings.Join(args, " "), out.String(), errb.String())
	return out.String(), err
}

// replayPlan writes plan into a temporary directory and replays it with
// args; it returns the output and the run directory.
func replayPlan(t *testing.T, bin string, plan jepsen.Plan, args ...string) (string, string, error) {
	t.Helper()
	tmp := t.TempDir()
	path := filepath.Join(tmp, "plan.json")
	if err := jepsen.WritePlan(path, plan); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "run")
	out, err := runJepsenBin(t, bin, append([]string{"replay", path, "--dir", dir}, args...)...)
	return out, dir, err
}

// verdictOf checks that out ends with exactly one verdict line and
// returns it.
func verdictOf(t *testing.T, out string) string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "verdict: ") || strings.Count(out, "verdict: ") != 1 {
		t.Fatalf("output does not end with one verdict line; last line %q", last)
	}
	return last
}

// TestJepsenSmoke is make test's chaos run: a minute of kills, pauses and
// partitions with a fixed seed, the consumer-offset register beside the
// queue. Nothing acknowledged may be lost, the replicas must agree and
// the register must be linearizable; availability figures are printed,
// not asserted.
func TestJepsenSmoke(t *testing.T) {
	bin := devcluster.Build(t)
	dir := filepath.Join(t.TempDir(), "run")
	// With TLS and the ACL on, as a production group runs: the faults
	// and checks are the same, every process and client speaks TLS and
	// signs (the plaintext path is the replay's below).
	out, err := runJepsenBin(t, bin, "run", "--nemesis", "kill,pause,partition", "--workload", "queue,register",
		"--time", "60s", "--seed", "42", "--dir", dir, "--tls", "--acl")
	v := verdictOf(t, out)
	if err != nil || !strings.HasPrefix(v, "verdict: PASS ") || !strings.Contains(v, " lost=0 ") || !strings.Contains(v, " divergent=0 ") {
		t.Fatalf("%s (exit: %v); history and report in %s", v, err, dir)
	}
	if !strings.Contains(out, "register linearizable=true ") {
		t.Errorf("the consumer-offset register was not found linearizable")
	}
	for _, f := range []string{"plan.json", "history.jsonl", "report.html", "results.json", "cluster.json", "register.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}
	conf, _ := os.ReadFile(filepath.Join(dir, "n0.conf"))
	results, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if !bytes.Contains(conf, []byte("tls.enable=true")) || !bytes.Contains(conf, []byte("acl_enable=true")) ||
		!bytes.Contains(results, []byte(`"security": {`)) || !bytes.Contains(results, []byte(`"acl": true`)) {
		t.Errorf("the run did not have TLS and the ACL on:\n%s", conf)
	}
	report, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if !bytes.Contains(report, []byte("<svg")) || !bytes.Contains(report, []byte(v)) {
		t.Errorf("report.html has no timeline or no verdict")
	}
}

// TestJepsenReplay replays a hand-written plan (a pause of the leader)
// and checks that the plan in the run directory is the one given.
func TestJepsenReplay(t *testing.T) {
	bin := devcluster.Build(t)
	plan := jepsen.Plan{Seed: 9, Nodes: 3, Time: jepsen.Duration(12 * time.Second), Nemeses: []string{jepsen.NemPause},
		Faults: []jepsen.Fault{{At: jepsen.Duration(3 * time.Second), Kind: jepsen.NemPause, Targets: []string{jepsen.TargetLeader},
			Duration: jepsen.Duration(3 * time.Second)}}}
	out, dir, err := replayPlan(t, bin, plan, "--producers", "2")
	v := verdictOf(t, out)
	if err != nil || !strings.HasPrefix(v, "verdict: PASS ") {
		t.Fatalf("%s (exit: %v)", v, err)
	}
	got, err := jepsen.ReadPlan(filepath.Join(dir, "plan.json"))
	if err != nil || len(got.Faults) != 1 || got.Seed != 9 {
		t.Fatalf("run directory's plan %+v, %v", got, err)
	}
	evs := runHistory(t, dir)
	checkAgain(t, bin, dir, v)
	var paused []string
	for _, e := range evs {
		if e.Type == jepsen.EvFault && e.Phase == "start" {
			paused = e.Targets
		}
	}
	if len(paused) != 1 {
		t.Fatalf("the pause hit %v, want the leader", paused)
	}
}

// TestJepsenPop replays a short plan (the leader killed, then isolated)
// with the POP workload beside the queue: SimpleConsumers over the nodes'
// gRPC ports, through the harness's proxies. Every acknowledged message
// must reach the POP group, none may come back after an ack answered OK,
// and the messages left un-acknowledged must have come back.
func TestJepsenPop(t *testing.T) {
	bin := devcluster.Build(t)
	sec := func(s float64) jepsen.Duration { return jepsen.Duration(time.Duration(s * float64(time.Second))) }
	plan := jepsen.Plan{Seed: 3, Nodes: 3, Time: sec(20), Nemeses: []string{jepsen.NemKill, jepsen.NemPartition},
		Faults: []jepsen.Fault{
			{At: sec(4), Kind: jepsen.NemKill, Targets: []string{jepsen.TargetLeader}, Duration: sec(3)},
			{At: sec(11), Kind: jepsen.NemPartition, Shape: "isolate", Targets: []string{jepsen.TargetLeader}, Duration: sec(4)},
		}}
	out, dir, err := replayPlan(t, bin, plan, "--workload", "queue,pop", "--producers", "2", "--consumers", "1")
	v := verdictOf(t, out)
	if err != nil || !strings.HasPrefix(v, "verdict: PASS ") || !strings.Contains(v, " lost=0 ") ||
		!strings.Contains(v, " ack-lost=0 ") || !strings.Contains(v, " never-received=0)") {
		t.Fatalf("%s (exit: %v); history and report in %s", v, err, dir)
	}
	res := runResult(t, dir)
	p := res.Pop
	if !p.Ran || p.Received == 0 || p.Received < res.Acked || p.Acked == 0 || p.Redelivered == 0 || p.Changes == 0 ||
		p.AckLost != 0 || p.AttemptRegressions != 0 {
		t.Fatalf("POP figures %+v (acked sends %d)", p, res.Acked)
	}
	// The consumers went through the gRPC ports' proxies.
	conf, _ := os.ReadFile(filepath.Join(dir, "n0.conf"))
	if !strings.Contains(string(conf), "grpc_listen=") {
		t.Errorf("n0 serves no gRPC port:\n%s", conf)
	}
	checkAgain(t, bin, dir, v)
}

// TestJepsenPlanOnlyIsSeeded: the same seed prints the same plan.
func TestJepsenPlanOnlyIsSeeded(t *testing.T) {
	run := func() string {
		var out bytes.Buffer
		cmd := newRootCmd()
		cmd.SetOut(&out)
		cmd.SetArgs([]string{"jepsen", "run", "--plan-only", "--seed", "5", "--nemesis", "all", "--time", "2m"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	a, b := run(), run()
	if a != b || !strings.Contains(a, `"seed": 5`) {
		t.Fatalf("plans differ or lack the seed:\n%s\n%s", a, b)
	}
}

// TestJepsenPowerAndDiskFull runs the power-loss and disk-full nemeses
// (one node, every node at once, a full disk of the leader and of a
// follower) from a hand-written plan: nothing acknowledged may be lost
// and the replicas must agree. It mounts a tmpfs per node, so it needs
// root, and takes a minute and a half: it runs when
// LEDGERMQ_JEPSEN_FAULTS=1 (make chaos sets it).
func TestJepsenPowerAndDiskFull(t *testing.T) {
	if os.Getenv("LEDGERMQ_JEPSEN_FAULTS") != "1" {
		t.Skip("set LEDGERMQ_JEPSEN_FAULTS=1 to run the power-loss and disk-full nemeses (make chaos does)")
	}
	bin := devcluster.Build(t)
	sec := func(s float64) jepsen.Duration { return jepsen.Duration(time.Duration(s * float64(time.Second))) }
	plan := jepsen.Plan{Seed: 4, Nodes: 3, Time: sec(50), Nemeses: []string{jepsen.NemPower, jepsen.NemDiskFull},
		Faults: []jepsen.Fault{
			{At: sec(5), Kind: jepsen.NemPower, Targets: []string{jepsen.TargetLeader}, Duration: sec(3)},
			{At: sec(13), Kind: jepsen.NemPower, Targets: []string{jepsen.TargetAll}, Duration: sec(3)},
			{At: sec(24), Kind: jepsen.NemDiskFull, Targets: []string{jepsen.TargetLeader}, Duration: sec(6)},
			{At: sec(36), Kind: jepsen.NemDiskFull, Targets: []string{"n1"}, Duration: sec(6)},
		}}
	out, dir, err := replayPlan(t, bin, plan, "--node-conf", "store.flush_disk_type=SYNC_FLUSH")
	v := verdictOf(t, out)
	if err != nil || !strings.HasPrefix(v, "verdict: PASS ") {
		t.Fatalf("%s (exit: %v)", v, err)
	}
	evs := runHistory(t, dir)
	var cuts, fills int
	for _, e := range evs {
		if e.Type == jepsen.EvFault && e.Phase == "step" && e.Error == "" {
			switch {
			case e.Kind == jepsen.NemPower && strings.HasPrefix(e.Detail, "cut "):
				cuts++
			case e.Kind == jepsen.NemDiskFull && strings.HasPrefix(e.Detail, "filled "):
				fills++
			}
		}
	}
	if cuts != 4 || fills != 2 {
		t.Fatalf("%d nodes cut back (want 1+3), %d disks filled (want 2)", cuts, fills)
	}
}

// TestJepsenPowerAsync: power losses under ASYNC_FLUSH (the default), where
// the raft log is not fsynced per append. A node that loses its unflushed
// appends comes back abstaining from votes (dledger's boot record) and
// votes again once it has caught up; nothing acknowledged is lost. A power
// loss of every node is narrowed to the leader (the mode allows losing
// what only page caches held when most of a group loses power).
func TestJepsenPowerAsync(t *testing.T) {
	if os.Getenv("LEDGERMQ_JEPSEN_FAULTS") != "1" {
		t.Skip("set LEDGERMQ_JEPSEN_FAULTS=1 to run the power-loss nemesis (make chaos does)")
	}
	bin := devcluster.Build(t)
	sec := func(s float64) jepsen.Duration { return jepsen.Duration(time.Duration(s * float64(time.Second))) }
	plan := jepsen.Plan{Seed: 5, Nodes: 3, Time: sec(40), Nemeses: []string{jepsen.NemPower},
		Faults: []jepsen.Fault{
			{At: sec(5), Kind: jepsen.NemPower, Targets: []string{jepsen.TargetLeader}, Duration: sec(3)},
			{At: sec(14), Kind: jepsen.NemPower, Targets: []string{"n1"}, Duration: sec(3)},
			{At: sec(23), Kind: jepsen.NemPower, Targets: []string{jepsen.TargetAll}, Duration: sec(3)},
		}}
	out, dir, err := replayPlan(t, bin, plan, "--log-level", "info")
	v := verdictOf(t, out)
	if err != nil || !strings.HasPrefix(v, "verdict: PASS ") {
		t.Fatalf("%s (exit: %v)", v, err)
	}
	if !strings.Contains(out, "1 power faults on every node narrowed to the leader") {
		t.Fatalf("the power loss of every node was not narrowed under ASYNC_FLUSH:\n%s", out)
	}
	cuts := 0
	for _, e := range runHistory(t, dir) {
		if e.Type == jepsen.EvFault && e.Phase == "step" && e.Error == "" && e.Kind == jepsen.NemPower && strings.HasPrefix(e.Detail, "cut ") {
			cuts++
		}
	}
	var abstained, votedAgain int
	for _, id := range []string{"n0", "n1", "n2"} {
		b, err := os.ReadFile(filepath.Join(dir, id+".log"))
		if err != nil {
			t.Fatal(err)
		}
		abstained += strings.Count(string(b), "neither votes nor campaigns")
		votedAgain += strings.Count(string(b), "this node votes again")
	}
	if cuts != 3 || abstained != 3 || votedAgain != 3 {
		t.Fatalf("%d nodes cut back, %d came back abstaining, %d voted again (want 3 each)", cuts, abstained, votedAgain)
	}
}

// runHistory reads the history.jsonl of the run in dir.
func runHistory(t *testing.T, dir string) []jepsen.Event {
	t.Helper()
	hist, err := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := jepsen.ReadHistory(bytes.NewReader(hist))
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// runResult reads the results.json of the run in dir.
func runResult(t *testing.T, dir string) *jepsen.Result {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct{ Result *jepsen.Result }
	if err := json.Unmarshal(data, &res); err != nil || res.Result == nil {
		t.Fatalf("results.json: %v", err)
	}
	return res.Result
}

// checkAgain runs `jepsen check` on the run in dir: it must recompute
// the run's verdict line v offline.
func checkAgain(t *testing.T, bin, dir, v string) {
	t.Helper()
	again, err := runJepsenBin(t, bin, "check", dir)
	if err != nil || verdictOf(t, again) != v {
		t.Fatalf("jepsen check: %q (exit %v), the run said %q", verdictOf(t, again), err, v)
	}
}
