package ops

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// node is a Status the test changes.
type node struct {
	mu sync.Mutex
	s  Status
}

func (n *node) status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.s
}

func (n *node) set(f func(*Status)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f(&n.s)
}

func startOps(t *testing.T, n *node, opts ...func(*Config)) (string, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewNodeCollector(n.status, 0, prometheus.Labels{"cluster": "c", "group": "broker-a", "node": "n0"}))
	st, ready := NodeProbe(n.status, 0)
	cfg := Config{Addr: "127.0.0.1:0", Status: st, Ready: ready, Registry: reg}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return "http://" + s.Addr().String(), reg
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestEndpoints(t *testing.T) {
	n := &node{s: Status{Cluster: "c", Group: "broker-a", Node: "n0", Role: "follower", Term: 3, Leader: "n1",
		LastIndex: 10, CommitIndex: 10, AppliedIndex: 10, FormatVersion: 2, Recovered: true}}
	base, reg := startOps(t, n)

	if code, body := get(t, base+"/livez"); code != 200 || body != "ok\n" {
		t.Fatalf("livez %d %q", code, body)
	}
	if code, body := get(t, base+"/readyz"); code != 200 || body != "ready\n" {
		t.Fatalf("readyz %d %q", code, body)
	}
	code, body := get(t, base+"/status")
	var s Status
	if err := json.Unmarshal([]byte(body), &s); code != 200 || err != nil || s != n.status() {
		t.Fatalf("status %d %v %+v", code, err, s)
	}

	// Not ready, with every reason on its own line.
	n.set(func(s *Status) {
		s.Leader, s.CommitIndex, s.Lag, s.DiskError, s.Draining, s.Stopping = "", 5000, 4990, "disk full", true, true
		s.Abstaining = true
		s.Duplicates = &DuplicateStatus{Found: 7, Entries: 3, Bytes: 400, Expired: 2, EvictedByCount: 1}
	})
	code, body = get(t, base+"/readyz")
	for _, want := range []string{"no leader known", "4990 entries behind", "disk not writable: disk full", "draining", "shutting down", "not voting yet"} {
		if code != http.StatusServiceUnavailable || !strings.Contains(body, want) {
			t.Fatalf("readyz %d %q lacks %q", code, body, want)
		}
	}

	code, body = get(t, base+"/metrics")
	for _, want := range []string{
		`ledgermq_raft_term{cluster="c",group="broker-a",node="n0"} 3`,
		`ledgermq_raft_role{cluster="c",group="broker-a",node="n0",role="follower"} 1`,
		`ledgermq_raft_role{cluster="c",group="broker-a",node="n0",role="leader"} 0`,
		`ledgermq_raft_apply_lag_entries{cluster="c",group="broker-a",node="n0"} 4990`,
		`ledgermq_node_ready{cluster="c",group="broker-a",node="n0"} 0`,
		`ledgermq_raft_abstaining{cluster="c",group="broker-a",node="n0"} 1`,
		`ledgermq_dedup_found_total{cluster="c",group="broker-a",node="n0"} 7`,
		`ledgermq_dedup_entries{cluster="c",group="broker-a",node="n0"} 3`,
		`ledgermq_dedup_bytes{cluster="c",group="broker-a",node="n0"} 400`,
		`ledgermq_dedup_evicted_total{cluster="c",group="broker-a",node="n0",reason="age"} 2`,
		`ledgermq_dedup_evicted_total{cluster="c",group="broker-a",node="n0",reason="count"} 1`,
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Fatalf("metrics %d lacks %q:\n%s", code, want, body)
		}
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil || len(problems) > 0 {
		t.Fatalf("metrics lint: %v %+v", err, problems)
	}
	if code, _ := get(t, base+"/nothing"); code != http.StatusNotFound {
		t.Fatalf("unknown path answered %d", code)
	}
}

func TestStatusRequired(t *testing.T) {
	if _, err := New(Config{Addr: "127.0.0.1:0"}); err == nil {
		t.Fatal("a server without a status source was built")
	}
}

// TestProfiling: /debug/pprof/ is served only when asked for, and then a
// CPU profile and a heap profile can be taken (a CPU profile as long as
// pprof's default, 30 s, is not refused by the server's write timeout).
func TestProfiling(t *testing.T) {
	n := &node{s: Status{Role: "leader", Recovered: true}}
	off, _ := startOps(t, n)
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1"} {
		if code, _ := get(t, off+path); code != http.StatusNotFound {
			t.Fatalf("%s answered %d with profiling off", path, code)
		}
	}

	on, _ := startOps(t, n, func(c *Config) { c.Profiling = true })
	if code, body := get(t, on+"/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Fatalf("index %d %q", code, body)
	}
	for _, path := range []string{"/debug/pprof/heap", "/debug/pprof/goroutine", "/debug/pprof/profile?seconds=1"} {
		code, body := get(t, on+path)
		if code != 200 || len(body) == 0 {
			t.Fatalf("%s %d %q", path, code, body)
		}
		// A profile is gzipped protobuf.
		if !strings.HasPrefix(body, "\x1f\x8b") {
			t.Fatalf("%s is not a gzipped profile: %q", path, body[:min(len(body), 40)])
		}
	}
	if seconds := profileWriteTimeout.Seconds(); seconds <= 30 {
		t.Fatalf("write timeout %v would refuse pprof's default 30 s CPU profile", profileWriteTimeout)
	}
}
