package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/devcluster"
)

// Every node of a real group serves /livez, /readyz, /status and /metrics
// on its http_addr: ready once the group has a leader, and exactly one node
// reports the leader role in its metrics.
func TestBrokerOpsEndpoints(t *testing.T) {
	d := devcluster.Start(t, devcluster.Build(t), devcluster.Options{Args: []string{"--node-conf", "http_addr=127.0.0.1:0"}})
	addrRe := regexp.MustCompile(`listening on .* \(raft .*, http (127\.0\.0\.1:\d+)\)`)
	httpOf := map[string]string{}
	defer func() {
		if t.Failed() {
			for _, n := range d.File.Nodes {
				b, _ := os.ReadFile(filepath.Join(d.Dir, n.ID+".log"))
				t.Logf("%s.log:\n%s", n.ID, b)
			}
		}
	}()
	waitFor(t, 30*time.Second, "every node's operator endpoints", func() bool {
		for _, n := range d.File.Nodes {
			b, err := os.ReadFile(filepath.Join(d.Dir, n.ID+".log"))
			if err != nil {
				return false
			}
			m := addrRe.FindSubmatch(b)
			if m == nil {
				return false
			}
			httpOf[n.ID] = string(m[1])
		}
		return true
	})
	get := func(addr, path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	leaders := 0
	for id, addr := range httpOf {
		if code, body := get(addr, "/livez"); code != 200 || body != "ok\n" {
			t.Fatalf("%s /livez: %d %q", id, code, body)
		}
		waitFor(t, 30*time.Second, id+" ready", func() bool { code, _ := get(addr, "/readyz"); return code == 200 })
		code, body := get(addr, "/status")
		if code != 200 || !strings.Contains(body, `"node": "`+id+`"`) || !strings.Contains(body, `"recovered": true`) {
			t.Fatalf("%s /status: %d %s", id, code, body)
		}
		code, body = get(addr, "/metrics")
		if code != 200 || !strings.Contains(body, `ledgermq_raft_term{cluster="DefaultCluster",group="broker-a",node="`+id+`"}`) ||
			!strings.Contains(body, "go_goroutines") {
			t.Fatalf("%s /metrics: %d\n%s", id, code, body)
		}
		if strings.Contains(body, `node="`+id+`",role="leader"} 1`) {
			leaders++
		}
	}
	if leaders != 1 {
		t.Fatalf("%d nodes report the leader role", leaders)
	}
}
