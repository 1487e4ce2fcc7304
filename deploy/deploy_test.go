//go:build unix

package deploy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/internal/testwait"
	"github.com/ledgermq/ledgermq/remoting"
)

// builtBin is the ledgermq binary built once for the package's tests.
var builtBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ledgermq-deploy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	builtBin = filepath.Join(dir, "ledgermq")
	out, err := exec.Command("go", "build", "-o", builtBin, devcluster.CommandPath).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// guideHosts are the guide's three machines and the loopback addresses
// that stand in for them here.
var guideHosts = map[string]string{"10.0.0.1": "127.0.1.1", "10.0.0.2": "127.0.1.2", "10.0.0.3": "127.0.1.3"}

// onLoopback is a guide file with the machines' addresses replaced by
// loopback ones and /var/lib/ledgermq by dataRoot.
func onLoopback(t *testing.T, path, dataRoot string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for from, to := range guideHosts {
		s = strings.ReplaceAll(s, from, to)
	}
	return strings.ReplaceAll(s, "/var/lib/ledgermq", dataRoot)
}

func guideConfs(t *testing.T) []string {
	t.Helper()
	confs, err := filepath.Glob("guide/*.conf")
	if err != nil || len(confs) != 6 {
		t.Fatalf("guide configs: %v %v", confs, err)
	}
	return confs
}

func TestSystemdUnitsVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("LEDGERMQ_REQUIRE_SYSTEMD") != "" {
			t.Fatal("systemd-analyze not found")
		}
		t.Skip("systemd-analyze not found")
	}
	bin := builtBin
	dir := t.TempDir()
	units := map[string]string{"ledgermq-namesrv.service": "ledgermq-namesrv.service", "ledgermq-broker@.service": "ledgermq-broker@n0.service"}
	var args []string
	for file, name := range units {
		b, err := os.ReadFile(filepath.Join("systemd", file))
		if err != nil {
			t.Fatal(err)
		}
		// verify checks that ExecStart's program exists: the one built here.
		text := strings.ReplaceAll(string(b), "/usr/local/bin/ledgermq", bin)
		if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, filepath.Join(dir, name))
	}
	cmd := exec.Command(sa, append([]string{"verify"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	for file := range units {
		b, _ := os.ReadFile(filepath.Join("systemd", file))
		for _, want := range []string{"User=ledgermq", "NoNewPrivileges=yes", "ProtectSystem=strict", "Restart=on-failure"} {
			if !bytes.Contains(b, []byte(want+"\n")) {
				t.Errorf("%s lacks %s", file, want)
			}
		}
	}
}

// TestDockerfileRules checks what a Dockerfile linter would of this one.
func TestDockerfileRules(t *testing.T) {
	f, err := os.Open("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var froms, users, entry []string
	sc := bufio.NewScanner(f)
	var line string
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") && line == "" {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			line += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		line += l
		fields := strings.Fields(line)
		line = ""
		if len(fields) == 0 {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			froms = append(froms, fields[1])
		case "USER":
			users = append(users, fields[1])
		case "ENTRYPOINT":
			entry = fields[1:]
		case "ADD":
			t.Errorf("ADD %v: use COPY (no remote or archive magic)", fields[1:])
		case "RUN":
			if strings.Contains(strings.Join(fields, " "), "curl ") || strings.Contains(strings.Join(fields, " "), "wget ") {
				t.Errorf("RUN downloads: %v", fields)
			}
		}
	}
	if len(froms) < 2 || froms[len(froms)-1] != "scratch" {
		t.Errorf("stages %v: the last must be FROM scratch", froms)
	}
	for _, f := range froms[:len(froms)-1] {
		if !strings.Contains(f, ":") || strings.HasSuffix(f, ":latest") {
			t.Errorf("base image %s is not pinned to a tag", f)
		}
	}
	if len(users) == 0 || !regexp.MustCompile(`^[1-9][0-9]*:[1-9][0-9]*$`).MatchString(users[len(users)-1]) {
		t.Errorf("USER %v: want a numeric non-root uid:gid last", users)
	}
	if len(entry) == 0 || !strings.HasPrefix(entry[0], "[") {
		t.Errorf("ENTRYPOINT %v: want the exec form", entry)
	}
}

// TestGuideConfigs: every guide config is a valid broker config as the
// binary reads it.
func TestGuideConfigs(t *testing.T) {
	bin := builtBin
	dir := t.TempDir()
	for _, c := range guideConfs(t) {
		p := filepath.Join(dir, filepath.Base(c))
		if err := os.WriteFile(p, []byte(onLoopback(t, c, dir)), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "broker", "--config", p, "--check-config").CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", c, err, out)
		}
	}
}

// TestGuideClusterOnLoopback runs the guide's cluster on this machine: three
// name servers and two groups of three nodes, each "machine" a loopback
// address. Both groups elect leaders and register with every name server,
// and a topic created on the cluster stores messages in both.
func TestGuideClusterOnLoopback(t *testing.T) {
	bin := builtBin
	dir := t.TempDir()
	secret := strings.Repeat("ab", 32)
	secretFile := filepath.Join(dir, "cluster.secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var procs []*exec.Cmd
	start := func(name string, args ...string) {
		t.Helper()
		logf, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.Env = append(os.Environ(), "LEDGERMQ_CLUSTER_SECRET="+secret)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			logf.Close()
		})
	}
	var namesrvs []string
	for i, h := range []string{"127.0.1.1", "127.0.1.2", "127.0.1.3"} {
		// The guide's namesrv.env, machine by machine.
		env := onLoopback(t, "guide/namesrv.env", dir)
		args := strings.Fields(strings.TrimPrefix(strings.TrimSpace(lastLine(env)), "NAMESRV_ARGS="))
		for j := range args {
			args[j] = strings.ReplaceAll(args[j], "127.0.1.1", h)
			args[j] = strings.ReplaceAll(args[j], "/etc/ledgermq/cluster.secret", secretFile)
		}
		start(fmt.Sprintf("namesrv%d", i), append([]string{"namesrv"}, args...)...)
		namesrvs = append(namesrvs, h+":9876")
	}
	for _, c := range guideConfs(t) {
		p := filepath.Join(dir, filepath.Base(c))
		if err := os.WriteFile(p, []byte(onLoopback(t, c, dir)), 0o600); err != nil {
			t.Fatal(err)
		}
		start(strings.TrimSuffix(filepath.Base(c), ".conf"), "broker", "--config", p, "--log-level", "warn")
	}

	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, ns := range namesrvs {
		for _, g := range []string{"broker-a", "broker-b"} {
			testwait.ForEvery(t, 60*time.Second, 100*time.Millisecond, g+" leader registered with "+ns, func() bool {
				l, err := devcluster.Leader(ctx, rc, ns, g)
				return err == nil && l != ""
			})
		}
	}
	admin, err := client.NewAdmin(client.WithAdminNameServers(namesrvs...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const topic = "GuideTopic"
	if created, err := admin.CreateTopic(ctx, client.TopicConfig{Topic: topic, ReadQueues: 2, WriteQueues: 2}, client.Target{Cluster: "DefaultCluster"}); err != nil || len(created) != 2 {
		t.Fatalf("topic on the cluster: %v %v", created, err)
	}
	p, err := client.NewProducer(client.WithNameServers(namesrvs...), client.WithGroup("guide"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	groups := map[string]int{}
	for i := 0; i < 40; i++ {
		r, err := p.Send(ctx, &client.Message{Topic: topic, Body: []byte(fmt.Sprintf("guide %d", i))})
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		groups[r.Queue.BrokerName]++
	}
	if groups["broker-a"] == 0 || groups["broker-b"] == 0 {
		t.Fatalf("sends by group: %v", groups)
	}
	// systemctl stop: SIGTERM, and every process exits cleanly.
	for _, cmd := range procs {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, cmd := range procs {
		if err := cmd.Wait(); err != nil {
			t.Errorf("%v: %v (logs in %s)", cmd.Args[1:3], err, dir)
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
