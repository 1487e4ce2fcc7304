//go:build unix

package dledger

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// The child role of TestRaftLogTailTruncationSurvivesRestart is chosen by
// these variables: the log's directory and the case's name.
const (
	crashChildDirEnv  = "LEDGERMQ_LOGSTORE_CRASH_DIR"
	crashChildCaseEnv = "LEDGERMQ_LOGSTORE_CRASH_CASE"
	// crashChildReady is the line the child prints once its writes are
	// durable (StoreLogs and DeleteRange have returned).
	crashChildReady = "LEDGERMQ-LOGSTORE-CHILD-READY"
	// crashChildLinger bounds how long a child waits to be killed, so one
	// whose parent died does not outlive it by much.
	crashChildLinger = 60 * time.Second
)

// tailTruncationCase is one log history: entries 1..written at term 1,
// then raft's "clearing log suffix" (DeleteRange(from, written)), then
// from..rewriteTo at term 2.
type tailTruncationCase struct {
	name string
	// segmentSize is the raft log's segment size (0: raft-wal's 64 MiB).
	segmentSize int
	// body pads each entry's data, to spread the log over segments.
	body int
	// batch is how many entries one StoreLogs carries: raft-wal fills a
	// segment batch by batch, so only small batches rotate mid-history.
	batch     int
	written   uint64
	from      uint64
	rewriteTo uint64
	// segments is where from must lie (checked from the segment files
	// before the truncation, so a change in raft-wal's framing that moves
	// the boundaries fails loudly instead of testing something else):
	// "only" (one segment), "tail" (strictly inside the tail segment, after
	// at least one rotation) or "sealed" (strictly inside a segment that was
	// already sealed when the tail was truncated).
	segments string
	// clean: the child closes the log and exits instead of being killed.
	clean bool
}

// About 21 entries of 3 KiB fit in a 64 KiB segment: the segmented cases
// hold 1-21, 22-42, 43-63, 64-84 and 85-100 (the child checks where from
// lies, not these exact bounds).
var tailTruncationCases = []tailTruncationCase{
	{name: "one-segment-kill", body: 64, batch: 100, written: 100, from: 100, rewriteTo: 110, segments: "only"},
	{name: "one-segment-close", body: 64, batch: 100, written: 100, from: 100, rewriteTo: 110, segments: "only", clean: true},
	{name: "rotated-tail-kill", segmentSize: 64 << 10, body: 3 << 10, batch: 1, written: 100, from: 100, rewriteTo: 110, segments: "tail"},
	{name: "rotated-tail-close", segmentSize: 64 << 10, body: 3 << 10, batch: 1, written: 100, from: 95, rewriteTo: 105, segments: "tail", clean: true},
	{name: "sealed-segment-kill", segmentSize: 64 << 10, body: 3 << 10, batch: 1, written: 100, from: 50, rewriteTo: 60, segments: "sealed"},
}

// TestRaftLogTailTruncationSurvivesRestart checks that a raft log whose tail
// was truncated, as a follower does when a new leader's entries conflict
// with its uncommitted ones, can be opened and read in full after the
// process dies (SIGKILL) or closes it and exits. raft-wal v0.4.0 marked the
// truncated tail segment sealed without writing its index block
// (hashicorp/raft-wal#31): the running process kept reading it through the
// old writer, but after any restart every read of that segment failed with
// "sealed segment has no index block" and raft.NewRaft panicked on it, so
// the node could never start again. The log is opened through openRaftLog,
// as Open does. The crash has to be a real one: a killed child process
// leaves the files exactly as the kernel has them, which no in-process
// close can imitate.
func TestRaftLogTailTruncationSurvivesRestart(t *testing.T) {
	if dir := os.Getenv(crashChildDirEnv); dir != "" {
		tailTruncationChild(t, dir, os.Getenv(crashChildCaseEnv))
		return
	}
	for _, tc := range tailTruncationCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			runTailTruncationChild(t, dir, tc)
			l, err := openRaftLog(dir, hclog.NewNullLogger(), tc.segmentSize, nil, nil)
			if err != nil {
				t.Fatalf("reopen after the child's %s: %v", exitKind(tc), err)
			}
			defer func() {
				if err := l.Close(); err != nil {
					t.Error(err)
				}
			}()
			checkTruncatedLog(t, l, tc)
			// The reopened log takes appends and serves them too.
			next := tc.rewriteTo + 1
			if err := l.StoreLog(truncationEntry(tc, next, 3)); err != nil {
				t.Fatalf("append %d after reopen: %v", next, err)
			}
			checkEntry(t, l, truncationEntry(tc, next, 3))
		})
	}
}

// runTailTruncationChild runs the case's writes in a child process and
// ends it: SIGKILL once it reports its writes are done or, for a clean
// case, waits for it to close the log and exit.
func runTailTruncationChild(t *testing.T, dir string, tc tailTruncationCase) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRaftLogTailTruncationSurvivesRestart$", "-test.count=1",
		fmt.Sprintf("-test.timeout=%v", crashChildLinger+30*time.Second))
	cmd.Env = append(os.Environ(), crashChildDirEnv+"="+dir, crashChildCaseEnv+"="+tc.name)
	var stderr bytes.Buffer
	stdout := &readyWriter{ready: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A child that never gets ready is killed after a bound, so it cannot
	// hang the test.
	ok := false
	select {
	case <-stdout.ready:
		ok = true
	case <-time.After(30 * time.Second):
	}
	if !ok || !tc.clean {
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Fatal(err)
		}
	}
	werr := cmd.Wait()
	if !ok {
		t.Fatalf("child did not get ready (%v)\nstdout:\n%s\nstderr:\n%s", werr, stdout.String(), stderr.String())
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case tc.clean && werr != nil:
		t.Fatalf("child did not exit cleanly: %v\nstderr:\n%s", werr, stderr.String())
	case !tc.clean && !(ws.Signaled() && ws.Signal() == syscall.SIGKILL):
		t.Fatalf("child was not killed by SIGKILL: %v\nstderr:\n%s", werr, stderr.String())
	}
}

// readyWriter is a child's stdout: it keeps what the child prints and
// closes ready once the child has printed crashChildReady on a line of its
// own.
type readyWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan struct{}
	seen  bool
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.seen && slices.Contains(strings.Split(w.buf.String(), "\n"), crashChildReady) {
		w.seen = true
		close(w.ready)
	}
	return len(p), nil
}

func (w *readyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func exitKind(tc tailTruncationCase) string {
	if tc.clean {
		return "clean exit"
	}
	return "SIGKILL"
}

// tailTruncationChild is the child process: it writes the case's history
// the way raft would, says so and waits to be killed (or closes the log).
func tailTruncationChild(t *testing.T, dir, name string) {
	i := slices.IndexFunc(tailTruncationCases, func(c tailTruncationCase) bool { return c.name == name })
	if i < 0 {
		t.Fatalf("child: unknown case %q", name)
	}
	tc := tailTruncationCases[i]
	l, err := openRaftLog(dir, hclog.NewNullLogger(), tc.segmentSize, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for first := uint64(1); first <= tc.written; first += uint64(tc.batch) {
		var batch []*raft.Log
		for i := first; i < first+uint64(tc.batch) && i <= tc.written; i++ {
			batch = append(batch, truncationEntry(tc, i, 1))
		}
		if err := l.StoreLogs(batch); err != nil {
			t.Fatalf("child: store %d..: %v", first, err)
		}
	}
	if err := checkSegmentPremise(dir, tc); err != nil {
		t.Fatalf("child: %v", err)
	}
	// raft.appendEntries: "clearing log suffix", then the leader's entries.
	if err := l.DeleteRange(tc.from, tc.written); err != nil {
		t.Fatalf("child: truncate %d..%d: %v", tc.from, tc.written, err)
	}
	var rewrite []*raft.Log
	for i := tc.from; i <= tc.rewriteTo; i++ {
		rewrite = append(rewrite, truncationEntry(tc, i, 2))
	}
	if err := l.StoreLogs(rewrite); err != nil {
		t.Fatalf("child: store %d..%d at term 2: %v", tc.from, tc.rewriteTo, err)
	}
	if tc.clean {
		if err := l.Close(); err != nil {
			t.Fatalf("child: close: %v", err)
		}
		fmt.Println(crashChildReady)
		return
	}
	fmt.Println(crashChildReady)
	<-time.After(crashChildLinger)
	t.Fatalf("child: not killed within %v", crashChildLinger)
}

// checkSegmentPremise checks, from the segment files' names (base index
// first), that tc.from lies where the case says.
func checkSegmentPremise(dir string, tc tailTruncationCase) error {
	names, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil {
		return err
	}
	var bases []uint64
	for _, n := range names {
		var base uint64
		if _, err := fmt.Sscanf(filepath.Base(n), "%020d-", &base); err != nil {
			return fmt.Errorf("segment file %s: %v", n, err)
		}
		bases = append(bases, base)
	}
	slices.Sort(bases)
	// holder is the segment holding from; it must hold an entry before it
	// too, or the truncation would delete the whole segment.
	holder := -1
	for i, b := range bases {
		if b < tc.from {
			holder = i
		}
	}
	ok := holder >= 0
	switch tc.segments {
	case "only":
		ok = ok && len(bases) == 1
	case "tail":
		ok = ok && len(bases) > 1 && holder == len(bases)-1
	case "sealed":
		ok = ok && holder < len(bases)-1
	default:
		return fmt.Errorf("case %s: unknown premise %q", tc.name, tc.segments)
	}
	if !ok {
		return fmt.Errorf("case %s: index %d is not strictly inside the %s segment (segment bases %v)", tc.name, tc.from, tc.segments, bases)
	}
	return nil
}

// truncationEntry is entry i as written at term: its data names both, so a
// read of the wrong generation shows.
func truncationEntry(tc tailTruncationCase, i, term uint64) *raft.Log {
	data := fmt.Appendf(nil, "term %d index %d ", term, i)
	data = append(data, bytes.Repeat([]byte{byte('a' + i%26)}, tc.body)...)
	return &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: data}
}

// checkTruncatedLog checks that the log holds 1..from-1 at term 1 and
// from..rewriteTo at term 2, each readable, and nothing after.
func checkTruncatedLog(t *testing.T, l *raftLog, tc tailTruncationCase) {
	t.Helper()
	first, err := l.FirstIndex()
	if err != nil || first != 1 {
		t.Fatalf("FirstIndex %d %v, want 1", first, err)
	}
	last, err := l.LastIndex()
	if err != nil || last != tc.rewriteTo {
		t.Fatalf("LastIndex %d %v, want %d", last, err, tc.rewriteTo)
	}
	for i := uint64(1); i <= tc.rewriteTo; i++ {
		term := uint64(1)
		if i >= tc.from {
			term = 2
		}
		checkEntry(t, l, truncationEntry(tc, i, term))
	}
	var e raft.Log
	if err := l.GetLog(tc.rewriteTo+1, &e); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog(%d) past the end: %v, want ErrLogNotFound", tc.rewriteTo+1, err)
	}
}

func checkEntry(t *testing.T, l *raftLog, want *raft.Log) {
	t.Helper()
	var got raft.Log
	if err := l.GetLog(want.Index, &got); err != nil {
		t.Fatalf("GetLog(%d): %v", want.Index, err)
	}
	if got.Index != want.Index || got.Term != want.Term || got.Type != want.Type || !bytes.Equal(got.Data, want.Data) {
		t.Fatalf("entry %d: got index %d term %d type %v data %.24q…, want term %d data %.24q…",
			want.Index, got.Index, got.Term, got.Type, got.Data, want.Term, want.Data)
	}
}

// TestRaftLogDropsStableWritesAfterClose: raft handles heartbeats on
// transport goroutines it does not wait for at shutdown and panics when the
// stable store fails to save a term; a write after Close is dropped.
func TestRaftLogDropsStableWritesAfterClose(t *testing.T) {
	l, err := openRaftLog(t.TempDir(), hclog.NewNullLogger(), 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetUint64([]byte("CurrentTerm"), 3); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.SetUint64([]byte("CurrentTerm"), 4); err != nil {
		t.Fatalf("SetUint64 after Close: %v", err)
	}
	if err := l.Set([]byte("LastVoteCand"), []byte("n1")); err != nil {
		t.Fatalf("Set after Close: %v", err)
	}
}
