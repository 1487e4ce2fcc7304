package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/remoting"

	"github.com/ledgermq/ledgermq/internal/testwait"
)

// waitFor polls cond every 50 ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	// Conditions here read processes' files or ask over the network.
	testwait.ForEvery(t, timeout, 50*time.Millisecond, what, cond)
}

// startDev runs `ledgermq dev`, built from this package, until the test ends.
func startDev(t *testing.T) *devcluster.Process {
	t.Helper()
	return devcluster.Start(t, devcluster.Build(t), devcluster.Options{})
}

func TestDevClusterEndToEnd(t *testing.T) {
	d := startDev(t)
	dir, namesrv, cf := d.Dir, d.Namesrv, d.File
	t.Logf("dev output:\n%s", d.Output())
	if cf.Namesrv != namesrv || len(cf.Nodes) != 3 {
		t.Fatalf("cluster.json %+v", cf)
	}
	for i, n := range cf.Nodes {
		if n.ID != fmt.Sprintf("n%d", i) || !devcluster.Alive(n.PID) || n.Dir != filepath.Join(dir, n.ID) {
			t.Fatalf("node %+v: not as expected or not running", n)
		}
	}

	client := remoting.NewClient(remoting.ClientConfig{})
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	leader, err := d.Leader(ctx, client)
	if err != nil || leader == "" {
		t.Fatalf("leader in cluster info: %q, %v", leader, err)
	}
	known := false
	for _, n := range cf.Nodes {
		known = known || n.Addr == leader
	}
	if !known {
		t.Fatalf("leader %s is none of %+v", leader, cf.Nodes)
	}

	req := remoting.NewRequest(remoting.SendMessage, map[string]string{
		"producerGroup": "pg1", "topic": "DevTopic", "queueId": "0", "sysFlag": "0",
		"bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0",
		"reconsumeTimes": "0", "unitMode": "false", "maxReconsumeTimes": "0",
		"defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "batch": "false",
		"properties": string(message.EncodeProperties(map[string]string{message.PropertyKeys: "k1"})),
		"bname":      devBrokerName,
	}, []byte("hello from the dev test"))
	resp, err := client.Invoke(ctx, leader, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != remoting.Success {
		t.Fatalf("SEND_MESSAGE: code %d %s", resp.Code, resp.Remark)
	}

	if err := d.Stop(45 * time.Second); err != nil {
		t.Fatalf("dev stop: %v:\n%s", err, d.Output())
	}
	for _, n := range cf.Nodes {
		if devcluster.Alive(n.PID) {
			t.Errorf("node %s (pid %d) still running after dev stopped", n.ID, n.PID)
		}
		// Graceful: every node exited 0, and none tried to hand leadership
		// to a peer that was stopping too.
		if want := fmt.Sprintf("dev: %s (pid %d) stopped: exit status 0", n.ID, n.PID); !strings.Contains(d.Output(), want) {
			t.Errorf("dev output lacks %q:\n%s", want, d.Output())
		}
		logText, err := os.ReadFile(filepath.Join(dir, n.ID+".log"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(logText), "leadership transfer before shutdown failed") {
			t.Errorf("%s tried a hand-over while the whole group stopped:\n%s", n.ID, logText)
		}
	}
}

func TestDevRejectsBadSetup(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"non-loopback namesrv", []string{"dev", "--namesrv", "10.1.2.3:9876"}},
		{"hostname namesrv", []string{"dev", "--namesrv", "example.com:9876"}},
		{"no nodes", []string{"dev", "--nodes", "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := newRootCmd()
			cmd.SetArgs(append(tt.args, "--dir", t.TempDir()))
			cmd.SetOut(&syncBuffer{})
			if err := cmd.Execute(); !errors.Is(err, errDevConfig) {
				t.Fatalf("error %v, want %v", err, errDevConfig)
			}
		})
	}
}

func TestDevLayoutReusesPorts(t *testing.T) {
	dir := t.TempDir()
	write := func(nodes []devNode) {
		t.Helper()
		for _, n := range nodes {
			if err := os.WriteFile(n.conf, nodeConfText(n, nodes, "127.0.0.1:9876", "lan", []string{"raft.trailing_logs=64"}), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	first, err := planLayout(dir, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	write(first)
	again, err := planLayout(dir, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range first {
		if first[i] != again[i] {
			t.Fatalf("node %d: first run %+v, second %+v", i, first[i], again[i])
		}
	}
	if _, err := planLayout(dir, 1, 2); !errors.Is(err, errDevConfig) {
		t.Fatalf("a different size: %v", err)
	}
	if _, err := planLayout(dir, 1, 4); !errors.Is(err, errDevConfig) {
		t.Fatalf("a different size: %v", err)
	}

	// A second group joins the directory: the first keeps its nodes and
	// ports, the new one gets its own ids, ports and raft peers.
	two, err := planLayout(dir, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(two) != 6 {
		t.Fatalf("two groups: %d nodes", len(two))
	}
	ports := map[string]bool{}
	for i, n := range two {
		if i < 3 && n != first[i] {
			t.Fatalf("node %d changed when a group was added: %+v, was %+v", i, n, first[i])
		}
		if i >= 3 && (n.group != "broker-b" || n.id != fmt.Sprintf("b%d", i-3)) {
			t.Fatalf("node %d of the new group: %+v", i, n)
		}
		for _, a := range []string{n.addr, n.raft, n.http} {
			if ports[a] {
				t.Fatalf("address %s given twice: %+v", a, two)
			}
			ports[a] = true
		}
	}
	write(two)
	conf := string(nodeConfText(two[4], two, "127.0.0.1:9876", "lan", nil))
	for _, want := range []string{"brokerName=broker-b\n", "dLegerGroup=broker-b\n", "dLegerSelfId=b1\n",
		"dLegerPeers=b0-" + two[3].raft + ";b1-" + two[4].raft + ";b2-" + two[5].raft + "\n"} {
		if !strings.Contains(conf, want) {
			t.Fatalf("b1's config lacks %q:\n%s", want, conf)
		}
	}
	if _, err := planLayout(dir, 1, 3); !errors.Is(err, errDevConfig) {
		t.Fatalf("fewer groups than the directory holds: %v", err)
	}
}

func TestDevRestartBackoff(t *testing.T) {
	c := &child{name: "n1", logPath: filepath.Join(t.TempDir(), "n1.log")}
	t0 := time.Unix(1_700_000_000, 0)
	var got []time.Duration
	for i := 0; i < 7; i++ {
		c.started = t0
		got = append(got, c.exited(t0.Add(time.Second)))
		t0 = t0.Add(time.Minute)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("quick exits back off %v, want %v", got, want)
	}
	c.started = t0
	if d := c.exited(t0.Add(stableUptime)); d != time.Second || c.quickFails != 0 {
		t.Fatalf("after a stable run: delay %v, %d quick fails", d, c.quickFails)
	}

	// Reports: the third quick exit in a row, and at once an exit that says
	// the node cannot start from its files, with the command that rebuilds it.
	if err := os.WriteFile(c.logPath, []byte("starting\nledgermq: node n1 cannot start: its raft log in /d is bad\n[INFO] bye\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	d := &devRun{dir: "/devdir", out: out, sup: &supervisor{exe: "/bin/ledgermq"}}
	exitWith := func(code int) error {
		return exec.Command("sh", "-c", fmt.Sprintf("exit %d", code)).Run()
	}
	for i := 1; i <= failingAfter; i++ {
		c.started = t0
		c.exited(t0.Add(time.Second))
		d.reportFailing(exitEvent{c: c, err: exitWith(1)})
		if i < failingAfter && out.String() != "" {
			t.Fatalf("reported after %d quick exits: %s", i, out)
		}
	}
	if !strings.Contains(out.String(), "dev: n1 keeps failing (3 starts in a row") ||
		!strings.Contains(out.String(), "last error: ledgermq: node n1 cannot start: its raft log in /d is bad") {
		t.Fatalf("report: %q", out)
	}
	c.started = t0
	c.exited(t0.Add(time.Second))
	d.reportFailing(exitEvent{c: c, err: exitWith(exitCannotStart)})
	if !strings.Contains(out.String(), "dev: n1 cannot start from its own files") ||
		!strings.Contains(out.String(), "/bin/ledgermq admin raft replace-node n1 --dev-dir /devdir") {
		t.Fatalf("cannot-start report: %q", out)
	}
	before := out.String()
	c.started = t0
	c.exited(t0.Add(time.Second))
	d.reportFailing(exitEvent{c: c, err: exitWith(exitCannotStart)})
	if added := strings.TrimPrefix(out.String(), before); !strings.HasPrefix(added, "dev: n1 still failing; next start in") {
		t.Fatalf("a repeated failure is reported as %q", added)
	}
}

// TestDevNamesrvHTTPStable: a later dev run on the same directory keeps
// the name server's http address of cluster.json while it is free, as the
// nodes keep theirs (TestDevLayoutReusesPorts).
func TestDevNamesrvHTTPStable(t *testing.T) {
	dir := t.TempDir()
	first, last, err := namesrvHTTPAddr(dir, nil)
	if err != nil || last != "" {
		t.Fatalf("first run: %q %q %v", first, last, err)
	}
	b, err := json.Marshal(devcluster.File{Namesrv: "127.0.0.1:9876", NamesrvHTTP: first, Nodes: []devcluster.Node{{ID: "n0", Role: "stopped"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, devcluster.FileName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if again, last, err := namesrvHTTPAddr(dir, nil); err != nil || again != first || last != first {
		t.Fatalf("second run: %q (last %q, %v), want %q", again, last, err, first)
	}
	// Taken by another process, or by a node: a new one.
	l, err := net.Listen("tcp", first)
	if err != nil {
		t.Fatal(err)
	}
	if other, last, err := namesrvHTTPAddr(dir, nil); err != nil || other == first || last != first {
		t.Fatalf("taken: %q (last %q, %v)", other, last, err)
	}
	l.Close()
	ap := netip.MustParseAddrPort(first)
	if other, _, err := namesrvHTTPAddr(dir, map[int]bool{int(ap.Port()): true}); err != nil || other == first {
		t.Fatalf("a node's port: %q %v", other, err)
	}
}
