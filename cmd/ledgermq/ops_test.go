package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/devcluster"
)

// Every node of `ledgermq dev` serves /livez, /readyz, /status and /metrics
// on the http address cluster.json gives: ready once the group has a
// leader, and exactly one node reports the leader role in its metrics, the
// node cluster.json calls leader.
func TestBrokerOpsEndpoints(t *testing.T) {
	d := devcluster.Start(t, devcluster.Build(t), devcluster.Options{})
	get := func(addr, path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
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
		if code, body := get(n.HTTP, "/livez"); code != 200 || body != "ok\n" {
			t.Fatalf("%s /livez: %d %q", n.ID, code, body)
		}
		waitFor(t, 30*time.Second, n.ID+" ready", func() bool { code, _ := get(n.HTTP, "/readyz"); return code == 200 })
		code, body := get(n.HTTP, "/status")
		if code != 200 || !strings.Contains(body, `"node": "`+n.ID+`"`) || !strings.Contains(body, `"recovered": true`) {
			t.Fatalf("%s /status: %d %s", n.ID, code, body)
		}
		code, body = get(n.HTTP, "/metrics")
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
			_, body := get(n.HTTP, "/metrics")
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
	if err := d.Stop(45 * time.Second); err != nil {
		t.Fatal(err)
	}
	cf, err := devcluster.ReadFile(d.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range cf.Nodes {
		if n.Role != devcluster.RoleStopped || n.PID != 0 {
			t.Fatalf("after dev stopped, cluster.json has %+v", n)
		}
	}
}
