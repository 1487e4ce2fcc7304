//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/jepsen"
)

// TestJepsenCheckExactlyOnce: `jepsen check DIR` checks exactly-once as
// the run did (its results.json), or as --exactly-once says, on a history
// whose retried send was stored twice in the one group; `jepsen run`
// takes the flag. No cluster runs.
func TestJepsenCheckExactlyOnce(t *testing.T) {
	dir := t.TempDir()
	plan := jepsen.Plan{Seed: 1, Nodes: 3, Time: jepsen.Duration(10 * time.Second)}
	if err := jepsen.WritePlan(filepath.Join(dir, "plan.json"), plan); err != nil {
		t.Fatal(err)
	}
	evs := []jepsen.Event{
		{Type: jepsen.EvSend, Process: "p0", Value: "p0-1", Seq: 1, Invoke: 1, T: 2, Outcome: jepsen.OK, Queue: 0, Offset: 0, Node: "n0", Attempts: 1},
		{Type: jepsen.EvSend, Process: "p0", Value: "p0-2", Seq: 2, Invoke: 3, T: 9, Outcome: jepsen.OK, Queue: 0, Offset: 2, Node: "n0", Attempts: 2, MaybeDup: true},
	}
	for i, v := range []string{"p0-1", "p0-2", "p0-2"} {
		evs = append(evs, jepsen.Event{Type: jepsen.EvRecv, Process: "c0", Value: v, Queue: 0, Offset: int64(i)})
		for _, n := range []string{"n0", "n1", "n2"} {
			evs = append(evs, jepsen.Event{Type: jepsen.EvRead, Node: n, Value: v, Queue: 0, Offset: int64(i)})
		}
	}
	var hist bytes.Buffer
	enc := json.NewEncoder(&hist)
	for _, e := range evs {
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), hist.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(args ...string) (string, error) {
		var out bytes.Buffer
		cmd := newRootCmd()
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append(append([]string{"jepsen", "check"}, args...), dir))
		err := cmd.Execute()
		lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
		for _, l := range lines {
			if strings.HasPrefix(l, "verdict: ") {
				return l, err
			}
		}
		t.Fatalf("no verdict line in:\n%s", out.String())
		return "", err
	}
	results := func(exactlyOnce bool) {
		t.Helper()
		data, err := json.Marshal(map[string]any{"result": &jepsen.Result{ExactlyOnce: exactlyOnce}})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "results.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	yes, no := true, false
	for _, tt := range []struct {
		name    string
		results *bool // results.json's exactly-once (nil: no results.json)
		args    []string
		fail    bool
	}{
		{name: "no flag, no results", fail: false},
		{name: "flag", args: []string{"--exactly-once"}, fail: true},
		{name: "as the run", results: &yes, fail: true},
		{name: "as the run, without", results: &no, fail: false},
		{name: "flag off over the run's", results: &yes, args: []string{"--exactly-once=false"}, fail: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(filepath.Join(dir, "results.json"))
			if tt.results != nil {
				results(*tt.results)
			}
			v, err := check(tt.args...)
			if tt.fail {
				if !errors.Is(err, jepsen.ErrVerdictFail) || !strings.HasPrefix(v, "verdict: FAIL ") ||
					!strings.Contains(v, " duplicates=1 ") || !strings.HasSuffix(v, " exactly-once-duplicates=1") {
					t.Fatalf("%s (%v)", v, err)
				}
				return
			}
			if err != nil || !strings.HasPrefix(v, "verdict: PASS ") || strings.Contains(v, "exactly-once") {
				t.Fatalf("%s (%v)", v, err)
			}
		})
	}

	var out bytes.Buffer
	cmd := newRootCmd()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"jepsen", "run", "--plan-only", "--exactly-once", "--seed", "5", "--time", "1m"})
	if err := cmd.Execute(); err != nil || !strings.Contains(out.String(), `"seed": 5`) {
		t.Fatalf("run --exactly-once: %v\n%s", err, out.String())
	}
}
