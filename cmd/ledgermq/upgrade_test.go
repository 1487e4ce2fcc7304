//go:build unix

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
)

// previousBuild is the commit of the build before this one's drain, the
// oldest a rolling upgrade is tested from: it has no RAFT_DRAIN, so the
// upgrade also covers a group whose old nodes cannot be drained.
const previousBuild = "b7b8bc225cb8a977f69ea79152bc79ef2194f14b"

// buildAt compiles the ledgermq command as it was at commit rev (from
// this repository's history) and returns the binary's path.
func buildAt(t *testing.T, rev string) string {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	root := strings.TrimSpace(string(top))
	if err := exec.Command("git", "-C", root, "cat-file", "-e", rev+"^{commit}").Run(); err != nil {
		t.Skipf("the history lacks the previous build %s (a shallow clone?): %v", rev[:12], err)
	}
	src := t.TempDir()
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, rev, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", rev, err, out)
	}
	bin := filepath.Join(t.TempDir(), "ledgermq-"+rev[:8])
	build := exec.Command("go", "build", "-o", bin, "./cmd/ledgermq")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build at %s: %v\n%s", rev, err, out)
	}
	return bin
}

// TestRollingUpgradeFromPreviousBuild runs a group of the previous build
// (`ledgermq dev --restart` started from it), replaces the binary with this
// build in place and upgrades the group with `admin cluster
// rolling-restart --dev` under load: old and new nodes serve side by side
// during the upgrade, no send fails, nothing acknowledged is lost, and
// every node runs the new build afterwards (it answers RAFT_DRAIN, which
// the old one does not know). The old build wrote the wal layout; the new
// one is configured for one log by default, so once every node runs it the
// group switches to one log on its own, still under the same load: each
// node converts the data the old build wrote as it starts again (raft-wal
// goes), and the messages sent before, during and after are all read
// back.
func TestRollingUpgradeFromPreviousBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two versions and runs them as processes")
	}
	old := buildAt(t, previousBuild)
	cur := devcluster.Build(t)
	bin := filepath.Join(t.TempDir(), "ledgermq")
	copyFile(t, old, bin)
	d := devcluster.Start(t, bin, devcluster.Options{Args: []string{"--restart"}})
	waitFor(t, 30*time.Second, "a first acknowledged send", func() bool {
		out, _, err := runCLI(t, "bench", "produce", "-n", d.Namesrv, "--topic", "Upgrade", "--count", "1", "--inflight", "1")
		return err == nil && strings.Contains(out, "acked=1 ")
	})
	if _, _, err := runCLI(t, "admin", "-n", d.Namesrv, "broker", "undrain", "n0"); err == nil || !strings.Contains(err.Error(), "REQUEST_CODE_NOT_SUPPORTED") {
		t.Fatalf("an old node answered RAFT_DRAIN: %v", err)
	}

	var (
		wg                    sync.WaitGroup
		benchOut, benchErrOut string
		benchErr              error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		benchOut, benchErrOut, benchErr = runCLI(t, "bench", "produce", "-n", d.Namesrv, "--topic", "Upgrade", "--producers", "2",
			"--rate", "200", "--duration", "60s", "--send-timeout", "10s", "--verify")
	}()
	defer wg.Wait()

	// The upgrade: the new binary takes the old one's place (dev starts
	// what is at that path), then every node is restarted into it.
	copyFile(t, cur, bin+".new")
	if err := os.Rename(bin+".new", bin); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runCLI(t, "admin", "-n", d.Namesrv, "-o", "json", "cluster", "rolling-restart", "--dev", d.Dir, "--route-wait", "0")
	if err != nil {
		t.Fatalf("rolling-restart: %v\n%s\n%s", err, out, errOut)
	}
	var steps []client.RollingRestartStep
	if err := json.Unmarshal([]byte(out), &steps); err != nil || len(steps) != 3 {
		t.Fatalf("rolling-restart output: %v\n%s", err, out)
	}
	switchStart := time.Now()
	waitSwitchedToOneLog(t, d)
	switchTook := time.Since(switchStart)
	for _, n := range []string{"n0", "n1", "n2"} {
		// A node may still be starting again after the switch.
		waitFor(t, 30*time.Second, n+" answers RAFT_DRAIN (the new build)", func() bool {
			_, _, err := runCLI(t, "admin", "-n", d.Namesrv, "broker", "undrain", n)
			return err == nil
		})
	}
	wg.Wait()
	if benchErr != nil {
		t.Fatalf("bench: %v\n%s\n%s", benchErr, benchOut, benchErrOut)
	}
	summary := regexp.MustCompile(`(?m)^summary: .*$`).FindString(benchOut)
	if !strings.Contains(benchOut, "verify: lost=0 ") || !strings.Contains(summary, " failed=0 ") {
		t.Fatalf("the upgrade lost messages or failed sends:\n%s", benchOut)
	}
	t.Logf("rolling upgrade from %s, then the switch to one log (%v): %s; %s; steps %+v", previousBuild[:8],
		switchTook.Round(time.Millisecond), summary, regexp.MustCompile(`(?m)^verify: .*$`).FindString(benchOut), steps)
}

// waitSwitchedToOneLog waits until each node of a dev group has its data
// in the one-log layout (store/onelog written, raft/wal gone) and the
// group takes sends again.
func waitSwitchedToOneLog(t *testing.T, d *devcluster.Process) {
	t.Helper()
	waitFor(t, 90*time.Second, "every node's data in the one-log layout", func() bool {
		for _, n := range []string{"n0", "n1", "n2"} {
			if _, err := os.Stat(filepath.Join(d.Dir, n, "store", "onelog")); err != nil {
				return false
			}
			if _, err := os.Stat(filepath.Join(d.Dir, n, "raft", "wal")); err == nil {
				return false
			}
		}
		return true
	})
	waitFor(t, 60*time.Second, "an acknowledged send after the switch", func() bool {
		out, _, err := runCLI(t, "bench", "produce", "-n", d.Namesrv, "--topic", "Upgrade", "--count", "1", "--inflight", "1")
		return err == nil && strings.Contains(out, "acked=1 ")
	})
}

// copyFile copies an executable.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}
