package procs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a child for the tests below: "run"
// (until signalled), "stubborn" (ignores SIGTERM and SIGINT), "exit3".
const helperEnv = "PROCS_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "run":
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		fmt.Println("running")
		<-ch
		os.Exit(0)
	case "stubborn":
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
		fmt.Println("running")
		select {}
	case "exit3":
		os.Exit(3)
	}
}

func helper(t *testing.T, mode string) *Proc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return New(Spec{Name: mode, Bin: exe, LogPath: filepath.Join(t.TempDir(), mode+".log"),
		Env: append(os.Environ(), helperEnv+"="+mode), DeathSignal: syscall.SIGKILL})
}

func TestFreePorts(t *testing.T) {
	first, release, err := FreePorts(3, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Held: none of them can be listened on until release.
	for _, p := range first {
		if CheckFree(Loopback(p)) == nil {
			t.Fatalf("port %d is not held", p)
		}
	}
	skip := map[int]bool{}
	for _, p := range first {
		skip[p] = true
	}
	release()
	release()
	more, release2, err := FreePorts(5, skip)
	if err != nil {
		t.Fatal(err)
	}
	defer release2()
	seen := map[int]bool{}
	for _, p := range more {
		if skip[p] || seen[p] || p == 0 {
			t.Fatalf("ports %v: repeated or skipped one (skip %v)", more, first)
		}
		seen[p] = true
	}
	if PortOf(Loopback(more[0])) != more[0] || PortOf("nonsense") != 0 {
		t.Fatalf("PortOf")
	}
}

func TestWaitListening(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	never := make(chan struct{})
	if err := WaitListening(context.Background(), addr, never, time.Second); err != nil {
		t.Fatalf("listening: %v", err)
	}
	l.Close()
	exited := make(chan struct{})
	close(exited)
	if err := WaitListening(context.Background(), addr, exited, 0); !errors.Is(err, ErrExited) {
		t.Fatalf("exited: %v", err)
	}
	if err := WaitListening(context.Background(), addr, never, 100*time.Millisecond); !errors.Is(err, ErrNotListening) {
		t.Fatalf("timeout: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := WaitListening(ctx, addr, never, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestNames(t *testing.T) {
	if got := strings.Join(GroupNames(3), ","); got != "broker-a,broker-b,broker-c" {
		t.Fatalf("GroupNames: %s", got)
	}
	for _, c := range []struct {
		g, i int
		id   string
	}{{0, 0, "n0"}, {0, 4, "n4"}, {1, 2, "b2"}, {4, 0, "e0"}} {
		if id := NodeID(c.g, c.i); id != c.id {
			t.Fatalf("NodeID(%d, %d) = %s, want %s", c.g, c.i, id, c.id)
		}
		if g, i, ok := ParseNodeID(c.id); !ok || g != c.g || i != c.i {
			t.Fatalf("ParseNodeID(%s) = %d %d %v", c.id, g, i, ok)
		}
	}
	for _, bad := range []string{"", "n", "a0", "f0", "namesrv", "b01", "n-1", "leader"} {
		if _, _, ok := ParseNodeID(bad); ok {
			t.Fatalf("ParseNodeID(%q) accepted", bad)
		}
	}
}

func TestNodeConfigText(t *testing.T) {
	c := NodeConfig{Header: "Written by a test.", Group: "broker-b", ID: "b1", Advertised: "127.0.0.1:7001",
		Listen: "127.0.0.1:7002", Namesrv: "127.0.0.1:9876", StoreDir: `/tmp/a b\c `, RegisterPeriodMS: 2000,
		Peers: []string{"b0-127.0.0.1:1", "b1-127.0.0.1:2"}, RaftBind: "127.0.0.1:3",
		ClientAddrs: []string{"b0-127.0.0.1:4", "b1-127.0.0.1:5"}, Timing: "lan", HTTP: "127.0.0.1:6",
		Extra: []string{"cluster_secret=x"}}
	want := "# Written by a test.\nbrokerClusterName=DefaultCluster\nbrokerName=broker-b\nbrokerIP1=127.0.0.1\nlistenPort=7001\n" +
		"listen_addr=127.0.0.1:7002\nnamesrvAddr=127.0.0.1:9876\nstorePathRootDir=/tmp/a b\\\\c\\ \nregisterNameServerPeriod=2000\n" +
		"enableDLegerCommitLog=true\ndLegerGroup=broker-b\ndLegerSelfId=b1\ndLegerPeers=b0-127.0.0.1:1;b1-127.0.0.1:2\n" +
		"raft.bind=127.0.0.1:3\nraft.client_addrs=b0-127.0.0.1:4;b1-127.0.0.1:5\nraft.timing=lan\nhttp_addr=127.0.0.1:6\ncluster_secret=x\n"
	if got := string(c.Text()); got != want {
		t.Fatalf("config:\n%s\nwant:\n%s", got, want)
	}
	c.Listen, c.RaftBind, c.GRPCListen, c.GRPCAddrs = "", "", "127.0.0.1:8", []string{"b1-127.0.0.1:8"}
	got := string(c.Text())
	if strings.Contains(got, "listen_addr") || strings.Contains(got, "raft.bind") || !strings.Contains(got, "http_addr=127.0.0.1:6\ngrpc_listen=127.0.0.1:8\ngrpc_addrs=b1-127.0.0.1:8\n") {
		t.Fatalf("config without listen and bind, with gRPC:\n%s", got)
	}
}

// waitLog waits until p's log holds s (the child has started up).
func waitLog(t *testing.T, p *Proc, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		b, _ := os.ReadFile(p.LogPath())
		if strings.Contains(string(b), s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's log never said %q: %q", p.Name(), s, b)
		}
		<-tick.C
	}
}

func TestProcLifecycle(t *testing.T) {
	p := helper(t, "run")
	exits := make(chan Exit, 4)
	p.OnExit(func(e Exit) { exits <- e })
	if p.Running() || p.Pid() != 0 {
		t.Fatal("running before Start")
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Done of a Proc that never ran is open")
	}
	if err := p.Signal(syscall.SIGSTOP); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("signal before Start: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	pid := p.Pid()
	if err := p.Start(); err != nil || p.Pid() != pid || p.Run() != 1 {
		t.Fatalf("a second Start of a running Proc: %v, pid %d→%d, run %d", err, pid, p.Pid(), p.Run())
	}
	waitLog(t, p, "running")
	// Paused, it still runs; Stop resumes it before signalling.
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if killed, err := p.Stop(syscall.SIGTERM, 30*time.Second); err != nil || killed {
		t.Fatalf("stop of a paused process: killed %v, %v", killed, err)
	}
	if e := <-exits; e.Expected || e.Err != nil || e.Pid != pid || e.Run != 1 {
		t.Fatalf("exit %+v", e)
	}
	if p.Running() || p.LastPid() != pid {
		t.Fatalf("after the exit: running %v, last pid %d", p.Running(), p.LastPid())
	}
	// Again, killed: an expected exit.
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if e := <-exits; !e.Expected || e.Run != 2 || e.Err == nil {
		t.Fatalf("exit of a kill %+v", e)
	}
	p.Wait()
}

func TestProcExitsOnItsOwn(t *testing.T) {
	p := helper(t, "exit3")
	exits := make(chan Exit, 1)
	p.OnExit(func(e Exit) { exits <- e })
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	e := <-exits
	var xe *exec.ExitError
	if e.Expected || !errors.As(e.Err, &xe) || xe.ExitCode() != 3 || !errors.As(p.Err(), &xe) {
		t.Fatalf("exit %+v, Err %v", e, p.Err())
	}
	if ExitText(nil) != "exit status 0" || ExitText(e.Err) != "exit status 3" {
		t.Fatalf("ExitText: %q", ExitText(e.Err))
	}
	p.Wait()
}

func TestStopAll(t *testing.T) {
	polite, stubborn, never := helper(t, "run"), helper(t, "stubborn"), helper(t, "run")
	for _, p := range []*Proc{polite, stubborn} {
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		waitLog(t, p, "running")
	}
	got := StopAll([]*Proc{polite, never, stubborn}, syscall.SIGTERM, 3*time.Second)
	if len(got) != 2 || got[0].Name != "run" || got[0].Killed || got[0].Err != nil ||
		got[1].Name != "stubborn" || !got[1].Killed || got[1].Pid == 0 {
		t.Fatalf("StopAll: %+v", got)
	}
	if polite.Running() || stubborn.Running() {
		t.Fatal("a process runs after StopAll")
	}
}

func TestStartFails(t *testing.T) {
	if err := New(Spec{Name: "x"}).Start(); !errors.Is(err, ErrNoBinary) {
		t.Fatalf("no binary: %v", err)
	}
	p := New(Spec{Name: "x", Bin: filepath.Join(t.TempDir(), "absent"), LogPath: filepath.Join(t.TempDir(), "x.log")})
	if err := p.Start(); err == nil || p.Running() {
		t.Fatalf("absent binary: %v", err)
	}
	if killed, err := p.Stop(syscall.SIGTERM, time.Second); killed || !errors.Is(err, ErrNotRunning) {
		t.Fatalf("stop of nothing: %v %v", killed, err)
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("kill of nothing: %v", err)
	}
}
