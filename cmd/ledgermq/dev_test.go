package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/remoting"
)

// buildBinary builds this command into a temp dir.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ledgermq")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// waitFor polls cond every 50 ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not synchronisation
	}
}

// processAlive reports whether pid exists (signal 0).
func processAlive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

// devProcess is a `ledgermq dev` process started by a test.
type devProcess struct {
	dir, namesrv string
	cmd          *exec.Cmd
	out          *syncBuffer
	exited       chan error
	cf           clusterFile
}

// startDev runs `ledgermq dev` on a temporary directory and a free name
// server port and waits for cluster.json. The process is killed at cleanup
// if the test has not stopped it.
func startDev(t *testing.T) *devProcess {
	t.Helper()
	bin := buildBinary(t)
	d := &devProcess{dir: t.TempDir(), out: &syncBuffer{}, exited: make(chan error, 1)}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.namesrv = l.Addr().String()
	l.Close()
	d.cmd = exec.Command(bin, "dev", "--dir", d.dir, "--namesrv", d.namesrv, "--log-level", "warn")
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.exited <- d.cmd.Wait() }()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			_ = d.cmd.Process.Kill()
			<-d.exited
		}
	})
	waitFor(t, 45*time.Second, "cluster.json", func() bool {
		data, err := os.ReadFile(filepath.Join(d.dir, "cluster.json"))
		return err == nil && json.Unmarshal(data, &d.cf) == nil
	})
	return d
}

func TestDevClusterEndToEnd(t *testing.T) {
	d := startDev(t)
	dir, namesrv, out, dev, exited, cf := d.dir, d.namesrv, d.out, d.cmd, d.exited, d.cf
	t.Logf("dev output:\n%s", out.String())
	if cf.Namesrv != namesrv || len(cf.Nodes) != 3 {
		t.Fatalf("cluster.json %+v", cf)
	}
	for i, n := range cf.Nodes {
		if n.ID != fmt.Sprintf("n%d", i) || !processAlive(n.PID) || n.Dir != filepath.Join(dir, n.ID) {
			t.Fatalf("node %+v: not as expected or not running", n)
		}
	}

	client := remoting.NewClient(remoting.ClientConfig{})
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	leader, err := leaderFromNamesrv(ctx, client, namesrv, devBrokerName)
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

	if err := dev.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("dev exited with %v:\n%s", err, out.String())
		}
	case <-time.After(45 * time.Second):
		t.Fatalf("dev did not stop:\n%s", out.String())
	}
	for _, n := range cf.Nodes {
		if processAlive(n.PID) {
			t.Errorf("node %s (pid %d) still running after dev stopped", n.ID, n.PID)
		}
		// Graceful: every node exited 0 on SIGTERM.
		if want := fmt.Sprintf("dev: %s (pid %d) stopped: exit status 0", n.ID, n.PID); !strings.Contains(out.String(), want) {
			t.Errorf("dev output lacks %q:\n%s", want, out.String())
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
	first, err := planLayout(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range first {
		if err := os.WriteFile(n.conf, nodeConfText(n, first, "127.0.0.1:9876", "lan"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	again, err := planLayout(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range first {
		if first[i] != again[i] {
			t.Fatalf("node %d: first run %+v, second %+v", i, first[i], again[i])
		}
	}
	if _, err := planLayout(dir, 2); !errors.Is(err, errDevConfig) {
		t.Fatalf("a different size: %v", err)
	}
	if _, err := planLayout(dir, 4); !errors.Is(err, errDevConfig) {
		t.Fatalf("a different size: %v", err)
	}
}
