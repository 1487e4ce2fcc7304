//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/canary"
	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/jepsen"
)

// TestJepsenCatchesBrokenBuilds runs the harness against broker builds
// broken on purpose (build tag jepsenbroken, internal/canary) and checks
// that a checker catches each. It builds its own binary and takes a few
// minutes, so it runs when LEDGERMQ_JEPSEN_BROKEN=1 (make chaos sets it).
func TestJepsenCatchesBrokenBuilds(t *testing.T) {
	if os.Getenv("LEDGERMQ_JEPSEN_BROKEN") != "1" {
		t.Skip("set LEDGERMQ_JEPSEN_BROKEN=1 to run the broken builds (make chaos does)")
	}
	bin := filepath.Join(t.TempDir(), "ledgermq-broken")
	if out, err := exec.Command("go", "build", "-tags", "jepsenbroken", "-o", bin, devcluster.CommandPath).CombinedOutput(); err != nil {
		t.Fatalf("go build -tags jepsenbroken: %v\n%s", err, out)
	}
	sec := func(s float64) jepsen.Duration { return jepsen.Duration(time.Duration(s * float64(time.Second))) }
	cases := []struct {
		broken string
		faults []jepsen.Fault
		args   []string // extra flags of the replay
		caught func(r *jepsen.Result) bool
	}{{
		// Acknowledged before a majority has it: the isolated leader's
		// acknowledged sends are lost once the partition heals.
		broken: canary.AckBeforeCommitName,
		faults: []jepsen.Fault{
			{At: sec(5), Kind: jepsen.NemPartition, Shape: "isolate", Targets: []string{jepsen.TargetLeader}, Duration: sec(5)},
			{At: sec(16), Kind: jepsen.NemOneWay, Targets: []string{jepsen.TargetLeader}, Duration: sec(5)},
		},
		caught: func(r *jepsen.Result) bool { return r.Lost > 0 },
	}, {
		// One entry stored twice: a send acknowledged at its only attempt
		// is found at two offsets.
		broken: canary.ApplyTwiceName,
		faults: []jepsen.Fault{
			{At: sec(8), Kind: jepsen.NemPause, Targets: []string{jepsen.TargetLeader}, Duration: sec(3)},
		},
		caught: func(r *jepsen.Result) bool { return r.UnjustifiedDuplicates > 0 },
	}, {
		// Offsets forgotten by a restarted node: once the replicas have
		// converged it answers 0 where the others answer the group's
		// offsets.
		broken: canary.ResetOffsetsName,
		faults: []jepsen.Fault{
			{At: sec(12), Kind: jepsen.NemKill, Targets: []string{jepsen.TargetLeader}, Duration: sec(3)},
		},
		caught: func(r *jepsen.Result) bool { return r.OffsetDivergent > 0 },
	}, {
		// The raft log acknowledges entries it never fsynced: a power loss
		// of every node drops them (the report of what was durable lags
		// behind, as the skipped fsyncs never happened).
		broken: canary.SkipFsyncName,
		faults: []jepsen.Fault{
			{At: sec(15), Kind: jepsen.NemPower, Targets: []string{jepsen.TargetAll}, Duration: sec(4)},
		},
		args:   []string{"--node-conf", "store.flush_disk_type=SYNC_FLUSH"},
		caught: func(r *jepsen.Result) bool { return r.Lost > 0 || r.Divergent > 0 },
	}, {
		// Offset commits served to reads and then dropped, never
		// committed: a read returns a value the register then goes back
		// from, which no linearization allows.
		broken: canary.ServeUncommittedName,
		faults: []jepsen.Fault{
			{At: sec(10), Kind: jepsen.NemPause, Targets: []string{jepsen.TargetLeader}, Duration: sec(3)},
		},
		args:   []string{"--workload", "queue,register"},
		caught: func(r *jepsen.Result) bool { return r.Register.Checked && !r.Register.Linearizable },
	}, {
		// POP acks answered and only remembered by the leader: once it is
		// killed, the next leader delivers the acknowledged messages
		// again.
		broken: canary.PopAckInMemoryName,
		faults: []jepsen.Fault{
			{At: sec(8), Kind: jepsen.NemKill, Targets: []string{jepsen.TargetLeader}, Duration: sec(3)},
		},
		args:   []string{"--workload", "queue,pop"},
		caught: func(r *jepsen.Result) bool { return r.Pop.AckLost > 0 },
	}}
	for _, tc := range cases {
		t.Run(tc.broken, func(t *testing.T) {
			tmp := t.TempDir()
			plan := jepsen.Plan{Seed: 1, Nodes: 3, Time: sec(26), Nemeses: []string{tc.faults[0].Kind}, Faults: tc.faults}
			path := filepath.Join(tmp, "plan.json")
			if err := jepsen.WritePlan(path, plan); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(tmp, "run")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append([]string{"jepsen", "replay", path, "--dir", dir}, tc.args...)...)
			cmd.Env = append(os.Environ(), canary.EnvVar+"="+tc.broken)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			t.Logf("%s", out.String())
			if err == nil || !strings.Contains(out.String(), "verdict: FAIL ") {
				t.Fatalf("the %s build passed (exit %v)", tc.broken, err)
			}
			if res := runResult(t, dir); !tc.caught(res) {
				t.Fatalf("the %s build failed, but not by the checker meant to catch it: %v", tc.broken, res.Problems)
			}
		})
	}
}
