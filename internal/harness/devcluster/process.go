//go:build unix

package devcluster

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/ledgermq/ledgermq/remoting"
)

// TB is the part of *testing.T (or *testing.B) this package uses.
type TB interface {
	Helper()
	Cleanup(func())
	TempDir() string
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// CommandPath is the import path of the ledgermq command.
const CommandPath = "github.com/ledgermq/ledgermq/cmd/ledgermq"

// Build compiles the ledgermq command into a temporary directory of tb and
// returns the binary's path. It runs the go tool, which tests have.
func Build(tb TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "ledgermq")
	out, err := exec.Command("go", "build", "-o", bin, CommandPath).CombinedOutput()
	if err != nil {
		tb.Fatalf("go build %s: %v\n%s", CommandPath, err, out)
	}
	return bin
}

// Options adjust Start. The zero value starts three nodes with the lan
// timing profile, no restarts and warn-level logs.
type Options struct {
	// Args are extra arguments to `ledgermq dev` (e.g. "--restart").
	Args []string
	// StartTimeout bounds the wait for cluster.json; 0 means 45 s.
	StartTimeout time.Duration
}

// Process is a running `ledgermq dev`.
type Process struct {
	// Dir is the dev directory; Namesrv the name server's address.
	Dir, Namesrv string
	// File is cluster.json as first written.
	File File

	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
	err    error // set before exited is closed
}

// Start runs `bin dev` on a fresh directory of tb and a free loopback name
// server port, and returns once cluster.json names a leader. The process
// group is stopped (SIGTERM, then SIGKILL after 45 s) when tb's test ends,
// unless the test stopped it already.
func Start(tb TB, bin string, opt Options) *Process {
	tb.Helper()
	p := &Process{Dir: tb.TempDir(), out: &syncBuffer{}, exited: make(chan struct{})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("free port: %v", err)
	}
	p.Namesrv = l.Addr().String()
	_ = l.Close()
	args := append([]string{"dev", "--dir", p.Dir, "--namesrv", p.Namesrv, "--log-level", "warn"}, opt.Args...)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(func() {
		if err := p.Stop(45 * time.Second); err != nil {
			tb.Logf("dev stop: %v\n%s", err, p.Output())
		}
	})
	timeout := opt.StartTimeout
	if timeout == 0 {
		timeout = 45 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		if p.File, err = ReadFile(p.Dir); err == nil {
			return p
		}
		select {
		case <-p.exited:
			tb.Fatalf("dev exited before writing %s: %v\n%s", FileName, p.err, p.Output())
		case <-time.After(50 * time.Millisecond): // polling interval for a file another process writes
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no %s after %v: %v\n%s", FileName, timeout, err, p.Output())
		}
	}
}

// Leader asks the name server for the group's brokerId 0.
func (p *Process) Leader(ctx context.Context, c *remoting.Client) (string, error) {
	return Leader(ctx, c, p.Namesrv, GroupName)
}

// Kill9 sends SIGKILL to the node process pid (from File).
func (p *Process) Kill9(pid int) error { return p.SignalNode(pid, syscall.SIGKILL) }

// SignalNode sends sig to the node process pid (from File).
func (p *Process) SignalNode(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return errors.New("devcluster: no such process")
	}
	return syscall.Kill(pid, sig)
}

// Signal sends sig to the dev process itself.
func (p *Process) Signal(sig syscall.Signal) error {
	return p.cmd.Process.Signal(sig)
}

// Exited is closed once the dev process has exited; Err then returns how.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err returns the dev process's exit error; valid after Exited is closed.
func (p *Process) Err() error {
	<-p.exited
	return p.err
}

// Stop sends SIGTERM to the dev process and waits up to grace for it to
// exit, then kills it. It returns the exit error; stopping an exited
// process returns its earlier result.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.exited:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.err
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return errors.New("devcluster: dev did not stop after SIGTERM; killed")
	}
}

// Output returns everything the dev process printed so far.
func (p *Process) Output() string { return p.out.String() }

// Alive reports whether pid names a running process.
func Alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

// syncBuffer is a bytes.Buffer safe for the process's writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(b)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
