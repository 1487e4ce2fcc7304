//go:build unix

package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
)

// TestRollingRestartUnderLoad restarts every node of `ledgermq dev
// --restart` with `ledgermq admin cluster rolling-restart --dev` while
// `ledgermq bench produce --verify` sends through our client: every node
// gets a new process, followers first and the leader last, no send fails
// and nothing acknowledged is lost.
func TestRollingRestartUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the command as processes")
	}
	d := devcluster.Start(t, devcluster.Build(t), devcluster.Options{Args: []string{"--restart"}})
	before, err := devcluster.ReadFile(d.Dir)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "a first acknowledged send", func() bool {
		out, _, err := runCLI(t, "bench", "produce", "-n", d.Namesrv, "--topic", "Rolling", "--count", "1", "--inflight", "1")
		return err == nil && strings.Contains(out, "acked=1 ")
	})

	var (
		wg               sync.WaitGroup
		benchOut, bErr   string
		benchErr         error
		rollingDoneAt    time.Time
		benchDone        = make(chan struct{})
		benchDoneAt      time.Time
		benchStartedAt   = time.Now()
		rollingStartedAt time.Time
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(benchDone)
		benchOut, bErr, benchErr = runCLI(t, "bench", "produce", "-n", d.Namesrv, "--topic", "Rolling", "--producers", "2",
			"--rate", "200", "--duration", "30s", "--send-timeout", "10s", "--verify")
		benchDoneAt = time.Now()
	}()
	defer wg.Wait()

	waitFor(t, 10*time.Second, "the load to run", func() bool { return time.Since(benchStartedAt) > 2*time.Second })
	rollingStartedAt = time.Now()
	out, errOut, err := runCLI(t, "admin", "-n", d.Namesrv, "-o", "json", "cluster", "rolling-restart", "--dev", d.Dir, "--route-wait", "0")
	rollingDoneAt = time.Now()
	if err != nil {
		t.Fatalf("rolling-restart: %v\n%s\n%s", err, out, errOut)
	}
	var steps []client.RollingRestartStep
	if err := json.Unmarshal([]byte(out), &steps); err != nil || len(steps) != len(before.Nodes) {
		t.Fatalf("rolling-restart output: %v\n%s", err, out)
	}
	if !steps[len(steps)-1].WasLeader {
		t.Fatalf("the leader was not restarted last: %+v", steps)
	}
	after, err := devcluster.ReadFile(d.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range after.Nodes {
		if n.PID == before.Nodes[i].PID || n.PID == 0 {
			t.Fatalf("%s was not restarted: pid %d before, %d after", n.ID, before.Nodes[i].PID, n.PID)
		}
	}

	<-benchDone
	if benchErr != nil {
		t.Fatalf("bench: %v\n%s\n%s", benchErr, benchOut, bErr)
	}
	// Nothing acknowledged is lost, and no send fails: a send that meets
	// a node leaving is held or forwarded, and one refused for certain is
	// retried until its timeout. (A send whose first attempt had an
	// unknown outcome may be stored twice: reported, not asserted.)
	summary := regexp.MustCompile(`(?m)^summary: .*$`).FindString(benchOut)
	if !strings.Contains(benchOut, "verify: lost=0 ") || !strings.Contains(summary, " failed=0 ") {
		t.Fatalf("bench lost messages or failed sends:\n%s", benchOut)
	}
	if rollingDoneAt.After(benchDoneAt) {
		t.Logf("the rolling restart outlasted the load (%v vs %v)", rollingDoneAt.Sub(rollingStartedAt), benchDoneAt.Sub(benchStartedAt))
	}
	t.Logf("rolling restart of %d nodes in %v under load: %s; %s; steps %+v", len(steps),
		rollingDoneAt.Sub(rollingStartedAt).Round(time.Millisecond), summary,
		regexp.MustCompile(`(?m)^verify: .*$`).FindString(benchOut), steps)
}
