package main

import (
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
)

// Every node of `ledgermq dev` serves /livez, /readyz, /status and /metrics
// on the http address cluster.json gives: ready once the group has a
// leader, and exactly one node reports the leader role in its metrics, the
// node cluster.json calls leader. With http_pprof the nodes serve Go's
// profiles too; the name server, not asked to, does not.
func TestBrokerOpsEndpoints(t *testing.T) {
	d := devcluster.Start(t, devcluster.Build(t), devcluster.Options{Args: []string{"--node-conf", "http_pprof=true"}})
	var cf devcluster.File
	waitFor(t, 30*time.Second, "cluster.json naming a leader", func() bool {
		var err error
		cf, err = devcluster.ReadFile(d.Dir)
		if err != nil {
			return false
		}
		for _, n := range cf.Nodes {
			if n.Role == devcluster.RoleLeader {
				return true
			}
		}
		return false
	})
	for _, n := range cf.Nodes {
		if n.HTTP == "" {
			t.Fatalf("cluster.json gives %s no http address: %+v", n.ID, cf)
		}
		if code, body := httpGet(n.HTTP, "/livez"); code != 200 || body != "ok\n" {
			t.Fatalf("%s /livez: %d %q", n.ID, code, body)
		}
		waitFor(t, 30*time.Second, n.ID+" ready", func() bool { code, _ := httpGet(n.HTTP, "/readyz"); return code == 200 })
		code, body := httpGet(n.HTTP, "/status")
		if code != 200 || !strings.Contains(body, `"node": "`+n.ID+`"`) || !strings.Contains(body, `"recovered": true`) {
			t.Fatalf("%s /status: %d %s", n.ID, code, body)
		}
		code, body = httpGet(n.HTTP, "/metrics")
		if code != 200 || !strings.Contains(body, `ledgermq_raft_term{cluster="DefaultCluster",group="broker-a",node="`+n.ID+`"}`) ||
			!strings.Contains(body, "go_goroutines") {
			t.Fatalf("%s /metrics: %d\n%s", n.ID, code, body)
		}
	}
	// The leader's metrics and cluster.json agree (re-read together: a
	// leader change between two reads is no failure).
	waitFor(t, 30*time.Second, "one leader in the metrics, the one cluster.json names", func() bool {
		cf, err := devcluster.ReadFile(d.Dir)
		if err != nil {
			return false
		}
		leaders := 0
		for _, n := range cf.Nodes {
			_, body := httpGet(n.HTTP, "/metrics")
			leads := strings.Contains(body, `node="`+n.ID+`",role="leader"} 1`)
			if leads != (n.Role == devcluster.RoleLeader) {
				return false
			}
			if leads {
				leaders++
			}
		}
		return leaders == 1
	})
	// GET_BROKER_CONFIG: each node's effective settings, the cluster
	// secret dev sets shown only as set.
	var confs map[string]map[string]string
	jsonCLI(t, &confs, "admin", "getBrokerConfig", "-n", d.Namesrv)
	if len(confs) != len(cf.Nodes) {
		t.Fatalf("getBrokerConfig answered for %d nodes, want %d: %v", len(confs), len(cf.Nodes), confs)
	}
	for addr, kv := range confs {
		if kv["http_pprof"] != "true" || kv["broker_name"] != "broker-a" || kv["cluster_secret"] != "(set)" {
			t.Fatalf("getBrokerConfig of %s: http_pprof=%q broker_name=%q cluster_secret=%q", addr, kv["http_pprof"], kv["broker_name"], kv["cluster_secret"])
		}
	}
	// A send and a pull show in the leader's RocketMQ-named series and
	// the latency histograms; every node times its raft log writes.
	out, errOut, err := runCLI(t, "bench", "produce", "-n", d.Namesrv, "--topic", "OpsT", "--count", "20", "--inflight", "1")
	if err != nil {
		t.Fatalf("bench: %v\n%s\n%s", err, out, errOut)
	}
	if out, errOut, err := runCLI(t, "bench", "consume", "-n", d.Namesrv, "--count", "20"); err != nil {
		t.Fatalf("consume: %v\n%s\n%s", err, out, errOut)
	}
	waitFor(t, 30*time.Second, "the leader's metrics counting the sends and the pulls", func() bool {
		cf, err := devcluster.ReadFile(d.Dir)
		if err != nil {
			return false
		}
		for _, n := range cf.Nodes {
			_, body := httpGet(n.HTTP, "/metrics")
			if !strings.Contains(body, "ledgermq_raft_log_append_seconds_bucket{") {
				return false
			}
			if n.Role == devcluster.RoleLeader && !(regexp.MustCompile(`rocketmq_messages_in_total\{[^}]*topic="OpsT"\} [1-9]\d+`).MatchString(body) &&
				strings.Contains(body, "ledgermq_send_latency_seconds_count{") && strings.Contains(body, "rocketmq_messages_out_total{") &&
				strings.Contains(body, "rocketmq_topic_number{")) {
				return false
			}
		}
		return true
	})

	// Every node's and the name server's metrics pass promtool's lint and
	// carry the remoting series; the name server's the route table's.
	for _, n := range cf.Nodes {
		_, body := httpGet(n.HTTP, "/metrics")
		if !strings.Contains(body, "ledgermq_remoting_connections{") {
			t.Fatalf("%s /metrics lacks the remoting series:\n%s", n.ID, body)
		}
		promtoolCheck(t, n.ID, body)
		if code, body := httpGet(n.HTTP, "/debug/pprof/goroutine?debug=1"); code != 200 || !strings.Contains(body, "goroutine profile:") {
			t.Fatalf("%s /debug/pprof/goroutine with http_pprof: %d %.200q", n.ID, code, body)
		}
	}
	if cf.NamesrvHTTP == "" {
		t.Fatalf("cluster.json gives the name server no http address: %+v", cf)
	}
	if code, body := httpGet(cf.NamesrvHTTP, "/readyz"); code != 200 {
		t.Fatalf("name server /readyz: %d %q", code, body)
	}
	if code, _ := httpGet(cf.NamesrvHTTP, "/debug/pprof/"); code != http.StatusNotFound {
		t.Fatalf("name server without --http-pprof serves /debug/pprof/: %d", code)
	}
	waitFor(t, 30*time.Second, "the name server's metrics listing 3 brokers", func() bool {
		_, body := httpGet(cf.NamesrvHTTP, "/metrics")
		return regexp.MustCompile(`(?m)^ledgermq_namesrv_brokers\{namesrv="[^"]+"\} 3$`).MatchString(body) &&
			strings.Contains(body, "ledgermq_namesrv_registrations_total{")
	})
	_, body := httpGet(cf.NamesrvHTTP, "/metrics")
	promtoolCheck(t, "namesrv", body)
	if code, body := httpGet(cf.NamesrvHTTP, "/status"); code != 200 || !strings.Contains(body, `"brokers": 3`) {
		t.Fatalf("name server /status: %d %s", code, body)
	}

	if err := d.Stop(45 * time.Second); err != nil {
		t.Fatal(err)
	}
	cf, err = devcluster.ReadFile(d.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range cf.Nodes {
		if n.Role != devcluster.RoleStopped || n.PID != 0 {
			t.Fatalf("after dev stopped, cluster.json has %+v", n)
		}
	}
}

// promtoolCheck lints an exposition with `promtool check metrics`
// (Debian's prometheus package; .ci/run installs it and sets
// LEDGERMQ_REQUIRE_PROMTOOL, elsewhere the check is skipped without it).
func promtoolCheck(t *testing.T, what, exposition string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("LEDGERMQ_REQUIRE_PROMTOOL") != "" {
			t.Fatalf("promtool is required: %v", err)
		}
		t.Logf("promtool not installed: %s's metrics not linted", what)
		return
	}
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(exposition)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics of %s: %v\n%s", what, err, out)
	}
}
