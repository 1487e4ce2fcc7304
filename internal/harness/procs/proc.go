package procs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Errors of a Proc.
var (
	ErrNotRunning = errors.New("procs: not running")
	ErrNoBinary   = errors.New("procs: no binary to run")
)

// Spec is what a Proc runs.
type Spec struct {
	// Name names the process in errors and reports.
	Name string
	// Bin is the program, Args its arguments.
	Bin  string
	Args []string
	// LogPath gets the process's stdout and stderr, appended.
	LogPath string
	// Env is the process's environment (nil: the parent's).
	Env []string
	// DeathSignal is sent to the process by the kernel if the parent
	// dies (Linux; 0: none).
	DeathSignal syscall.Signal
}

// Exit is one run of a Proc ending.
type Exit struct {
	Name string
	Pid  int
	Err  error // as exec.Cmd.Wait returned it
	// Expected: Kill or StopAll ended it (or Expect was called).
	Expected bool
	// Run is the run's number (1 for the first Start); Proc.Run is the
	// latest, so an Exit of an earlier run can be told apart.
	Run int
}

// Proc is one child process that can be started again after it exits.
// Its methods are safe from any goroutine.
type Proc struct {
	spec Spec

	mu       sync.Mutex
	cmd      *exec.Cmd     // the running run; nil when none runs
	done     chan struct{} // closed when the latest run has exited
	lastPid  int
	err      error // the latest finished run's exit error
	started  time.Time
	run      int
	expected bool
	onExit   func(Exit)
	wg       sync.WaitGroup
}

// New is a Proc of s; nothing runs until Start.
func New(s Spec) *Proc {
	done := make(chan struct{})
	close(done)
	return &Proc{spec: s, done: done}
}

// Name is the Spec's name.
func (p *Proc) Name() string { return p.spec.Name }

// LogPath is where the process's output goes.
func (p *Proc) LogPath() string { return p.spec.LogPath }

// Args are the process's arguments.
func (p *Proc) Args() []string { return p.spec.Args }

// OnExit has f called (from the run's own goroutine, after Done closes)
// whenever a run ends; nil stops the calls.
func (p *Proc) OnExit(f func(Exit)) {
	p.mu.Lock()
	p.onExit = f
	p.mu.Unlock()
}

// Start starts the process unless it runs already, its output appended
// to its log, in a process group of its own.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.spec.Bin == "" {
		return fmt.Errorf("%w: %s", ErrNoBinary, p.spec.Name)
	}
	if p.cmd != nil {
		return nil
	}
	f, err := os.OpenFile(p.spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("procs: %s's log: %w", p.spec.Name, err)
	}
	cmd := exec.Command(p.spec.Bin, p.spec.Args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = p.spec.Env
	cmd.SysProcAttr = sysProcAttr(p.spec.DeathSignal)
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("procs: start %s: %w", p.spec.Name, err)
	}
	done := make(chan struct{})
	p.run++
	run := p.run
	p.cmd, p.done, p.expected, p.started, p.lastPid = cmd, done, false, time.Now(), cmd.Process.Pid
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		werr := cmd.Wait()
		f.Close()
		p.mu.Lock()
		if p.cmd == cmd {
			p.cmd = nil
		}
		p.err = werr
		ex := Exit{Name: p.spec.Name, Pid: cmd.Process.Pid, Err: werr, Expected: p.expected, Run: run}
		onExit := p.onExit
		p.mu.Unlock()
		close(done)
		if onExit != nil {
			onExit(ex)
		}
	}()
	return nil
}

// Running reports whether a run is under way (a stopped process counts).
func (p *Proc) Running() bool { return p.Pid() != 0 }

// Pid is the running process's pid, 0 when none runs.
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// LastPid is the pid of the latest run, running or not (0: never run).
func (p *Proc) LastPid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastPid
}

// Done is closed when the latest run has exited (at once when none
// ran).
func (p *Proc) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Err is the exit error of the latest finished run.
func (p *Proc) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Run is the number of the latest run (0: never started).
func (p *Proc) Run() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.run
}

// Started is when the latest run started.
func (p *Proc) Started() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started
}

// Signal sends sig to the running process (SIGSTOP pauses it, SIGCONT
// resumes it).
func (p *Proc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("%w: %s", ErrNotRunning, p.spec.Name)
	}
	return p.cmd.Process.Signal(sig)
}

// Expect marks the current run's end as the caller's doing (its Exit
// says Expected).
func (p *Proc) Expect() {
	p.mu.Lock()
	p.expected = true
	p.mu.Unlock()
}

// current is the running command and its done channel (cmd nil: none).
func (p *Proc) current() (*exec.Cmd, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.done
}

// Kill sends SIGKILL (a stopped process dies too) and waits for the exit;
// the exit is expected. Nothing running is not an error.
func (p *Proc) Kill() error {
	cmd, done := p.current()
	if cmd == nil {
		return nil
	}
	p.Expect()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
	return nil
}

// Stop sends SIGCONT (a stopped process cannot act on sig) and sig, waits
// up to grace for the exit, then sends SIGKILL and waits; killed says
// whether it had to. The exit is not marked expected (see Expect).
func (p *Proc) Stop(sig syscall.Signal, grace time.Duration) (killed bool, err error) {
	cmd, done := p.current()
	if cmd == nil {
		return false, fmt.Errorf("%w: %s", ErrNotRunning, p.spec.Name)
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	if err := cmd.Process.Signal(sig); err != nil {
		return false, fmt.Errorf("procs: signal %s: %w", p.spec.Name, err)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return false, nil
	case <-t.C:
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return true, nil
	}
}

// Wait waits until every run's goroutine has ended (call it once the
// process is stopped).
func (p *Proc) Wait() { p.wg.Wait() }

// Stopped is how StopAll ended one process.
type Stopped struct {
	Name   string
	Pid    int
	Err    error // the exit error
	Killed bool  // it did not exit within the grace
}

// StopAll stops every running process of ps at once: each exit is
// expected; SIGCONT, then sig; SIGKILL to whichever has not exited when
// grace has passed since the signals. It waits for every run's goroutine
// and returns how each running process stopped, in ps's order.
func StopAll(ps []*Proc, sig syscall.Signal, grace time.Duration) []Stopped {
	type stopping struct {
		p    *Proc
		cmd  *exec.Cmd
		done <-chan struct{}
	}
	var all []stopping
	for _, p := range ps {
		p.Expect()
		cmd, done := p.current()
		if cmd == nil {
			continue
		}
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Signal(sig)
		all = append(all, stopping{p, cmd, done})
	}
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	expired := false
	out := make([]Stopped, 0, len(all))
	for _, s := range all {
		st := Stopped{Name: s.p.spec.Name, Pid: s.cmd.Process.Pid}
		if !expired {
			select {
			case <-s.done:
			case <-deadline.C:
				expired = true
			}
		}
		if expired {
			select {
			case <-s.done:
			default:
				_ = s.cmd.Process.Signal(syscall.SIGKILL)
				<-s.done
				st.Killed = true
			}
		}
		st.Err = s.p.Err()
		out = append(out, st)
	}
	for _, p := range ps {
		p.Wait()
	}
	return out
}

// ChildEnv is the parent's environment without the variables that would
// give every child the same broker settings (LEDGERMQ_*, NAMESRV_ADDR).
func ChildEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "LEDGERMQ_") || strings.HasPrefix(kv, "NAMESRV_ADDR=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// ExitText is err as a report says it ("exit status 0" for nil).
func ExitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
