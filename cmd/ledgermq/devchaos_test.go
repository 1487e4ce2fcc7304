package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/remoting"
)

const (
	chaosTopic = "ChaosTopic"
	// chaosDefaultFaults is the plan's length for `make test` (about a
	// minute); LEDGERMQ_CHAOS_FAULTS sets a longer one (`make chaos`).
	chaosDefaultFaults = 6
	// chaosRecover bounds each wait for the group to be whole again: dev's
	// restart back-off grows with every restart of a node (16 s and more
	// after a few kills of the same one), then the node recovers its raft
	// log and store. A node that never serves again fails the test here.
	chaosRecover = 2 * time.Minute
	// chaosCalmAcks is how many sends the load must have acknowledged
	// since the group was whole again before the next fault, so that every
	// fault hits a group that is taking writes.
	chaosCalmAcks = 300
	// chaosCheckGroup is the consumer group of the read-back pulls (created
	// on the fly, nothing committed).
	chaosCheckGroup = "chaos-check"
)

// TestDevChaos runs `ledgermq dev --restart` (a name server and a 3-node
// broker group as OS processes) under a load of four producers and puts
// it through a seeded sequence of process faults: kill -9 of the leader,
// of a follower, of two nodes at once, SIGSTOP/SIGCONT of the leader and
// of a follower. Between faults it waits until dev restarted what was
// killed, every node serves and a leader acknowledges a send again. Then
// it checks what a broker group promises across crashes:
//
//   - every node serves again (a node whose raft log or store cannot be
//     opened after a kill -9 keeps the group degraded forever: that is
//     how the raft-wal v0.4.0 "sealed segment has no index block" defect
//     showed);
//   - nothing acknowledged is lost: every acked message is read back at
//     its offset with its body, and is in its topic's queues;
//   - a message is stored twice only if its producer sent it twice after
//     an attempt that was not acked (at-least-once, not more);
//   - the replicas are identical: byte for byte the same CommitLog once
//     they have converged and stopped.
//
// LEDGERMQ_CHAOS_SEED repeats a run's fault plan (the roles hit, the
// holds); which node holds which role, and the load's timing, are up to
// the processes. The figures line at the end sums the run up; its
// log-suffix-truncations say how often the run went down the path of the
// v0.4.0 defect (a raft log-suffix truncation on a node, then a restart of
// it). Kill faults that pick a follower prefer a node with a truncation
// since its start, because raft's election rule (the longest log wins)
// makes truncations rare and random picks would seldom restart one.
func TestDevChaos(t *testing.T) {
	began := time.Now()
	seed := chaosEnvInt(t, "LEDGERMQ_CHAOS_SEED", time.Now().UnixNano())
	nFaults := int(chaosEnvInt(t, "LEDGERMQ_CHAOS_FAULTS", chaosDefaultFaults))
	if nFaults < 1 {
		t.Fatalf("LEDGERMQ_CHAOS_FAULTS=%d: want at least 1", nFaults)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)>>32^0x6c6d71))
	plan := devcluster.PlanFaults(rng, nFaults)
	fig := newChaosFigures(seed)
	var d *devcluster.Process
	defer func() { // also when the test stops early: the line shows how far it got
		fig.duration = time.Since(began)
		if d != nil {
			fig.restarts = 0
			for _, n := range d.Restarts() {
				fig.restarts += n
			}
			fig.truncations = d.SuffixTruncations()
			if file, err := devcluster.ReadFile(d.Dir); err == nil && fig.serving < 0 {
				// Stopped before the final checks: how many nodes serve now.
				c := remoting.NewClient(remoting.ClientConfig{})
				fig.nodes, fig.serving = len(file.Nodes), chaosCountServing(c, file)
				c.Close()
			}
		}
		t.Logf("%s", fig)
	}()
	t.Logf("chaos: seed=%d plan %v (LEDGERMQ_CHAOS_SEED=%d LEDGERMQ_CHAOS_FAULTS=%d repeats it)", seed, plan, seed, nFaults)

	d = devcluster.Start(t, devcluster.Build(t), devcluster.Options{Args: []string{"--restart"}})
	client := remoting.NewClient(remoting.ClientConfig{})
	defer client.Close()
	load := devcluster.StartLoad(devcluster.LoadConfig{
		Namesrv: d.Namesrv, Topic: chaosTopic, Prefix: "chaos",
		Messages: 8000*nFaults + 10000, Duration: time.Duration(nFaults)*chaosRecover + 5*time.Minute,
	})
	defer load.Stop()
	waitFor(t, time.Minute, "the load's first acknowledged sends", func() bool { return load.Acked() >= chaosCalmAcks })

	in := &devcluster.Injector{P: d, Client: client, Rng: rng, PreferTruncated: true}
	for i, kind := range plan {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		f, err := in.Inject(ctx, kind)
		cancel()
		if err != nil {
			t.Fatalf("fault %d/%d %v: %v\n%s", i+1, len(plan), kind, err, chaosDiagnostics(d))
		}
		fig.faults[kind]++
		fig.done++
		fig.truncKilled += len(f.AfterTruncation)
		t.Logf("chaos: fault %d/%d at %v: %v", i+1, len(plan), f.At.Sub(began).Round(time.Millisecond), f)
		back := chaosRecovered(t, d, client, load, f)
		t.Logf("chaos: fault %d/%d: group whole and acknowledging sends %v after the fault ended", i+1, len(plan), back.Round(time.Millisecond))
	}

	res := load.Stop()
	fig.load(res)
	t.Logf("chaos: load stopped: %d messages, %d attempts, response codes %v, %d attempts without a response (%d refused dials)",
		len(res.Sends), res.Attempts, res.Codes, res.TransportErrs, res.Refusals)

	file, leader := chaosFinalServing(t, d, client, fig)
	chaosCheckAcked(t, client, leader, res, fig)
	chaosCheckQueues(t, client, leader, res, fig)

	// Stopped gracefully, the replicas' CommitLogs must be the same bytes.
	if err := d.Stop(45 * time.Second); err != nil {
		t.Errorf("dev stop: %v", err)
	}
	for _, n := range file.Nodes {
		if want := fmt.Sprintf("dev: %s (pid %d) stopped: exit status 0", n.ID, n.PID); !strings.Contains(d.Output(), want) {
			t.Errorf("%s did not stop cleanly: dev output lacks %q\n%s", n.ID, want, chaosDiagnostics(d))
		}
	}
	compared, err := devcluster.CompareCommitLogs(file.Nodes)
	fig.identical = chaosBool(err == nil)
	if err != nil {
		t.Errorf("replicas differ: %v", err)
	} else {
		t.Logf("chaos: CommitLogs of %d nodes identical (%d bytes each)", len(file.Nodes), compared)
	}
}

// chaosRecovered waits until the group is whole again after f: killed
// nodes restarted, every node serving, a leader acknowledging a send, and
// the load acknowledging sends again. It returns how long after the fault
// ended the group took a send.
func chaosRecovered(t *testing.T, d *devcluster.Process, client *remoting.Client, load *devcluster.Load, f devcluster.Fault) time.Duration {
	t.Helper()
	chaosWaitNil(t, chaosRecover, f.String()+": the killed nodes restarted", d, func() error { return d.Restarted(f) })
	chaosWaitNil(t, chaosRecover, f.String()+": every node serving", d, func() error {
		_, err := chaosServing(client, d)
		return err
	})
	waitFor(t, chaosRecover, f.String()+": a leader acknowledging a send", load.Probe)
	back := time.Since(f.Done)
	base := load.Acked()
	waitFor(t, chaosRecover, f.String()+": the load acknowledging sends again", func() bool {
		select {
		case <-load.Done(): // the load reached its bound; the probe is enough
			return true
		default:
			return load.Acked() >= base+chaosCalmAcks
		}
	})
	return back
}

// chaosServing reads cluster.json and checks that every node serves.
func chaosServing(client *remoting.Client, d *devcluster.Process) ([]devcluster.NodeStatus, error) {
	file, err := devcluster.ReadFile(d.Dir)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return devcluster.Serving(ctx, client, file)
}

// chaosFinalServing waits, after the load, for every node to serve and
// the replicas to converge (the same term, CommitLog end, metadata
// position and raft applied index on every node, twice in a row), and
// returns cluster.json and the leader.
func chaosFinalServing(t *testing.T, d *devcluster.Process, client *remoting.Client, fig *chaosFigures) (devcluster.File, devcluster.Node) {
	t.Helper()
	var last []devcluster.NodeStatus
	err := chaosPoll(chaosRecover, func() error {
		st, err := chaosServing(client, d)
		switch {
		case err != nil:
			last = nil
			return err
		case !devcluster.Converged(st):
			last = nil
			return fmt.Errorf("not converged: %s", chaosStatuses(st))
		case !slices.Equal(last, st):
			last = st
			return fmt.Errorf("converged at %s; checking it holds", chaosStatuses(st))
		}
		return nil
	})
	file, ferr := devcluster.ReadFile(d.Dir)
	if ferr != nil {
		t.Fatalf("after the load: %v", ferr)
	}
	fig.nodes, fig.serving = len(file.Nodes), chaosCountServing(client, file)
	if err != nil {
		t.Fatalf("after the load, %d/%d nodes serving; timed out after %v waiting for every node to serve and converge: %v\n%s",
			fig.serving, fig.nodes, chaosRecover, err, chaosDiagnostics(d))
	}
	leader, _ := devcluster.LeaderOf(file, last)
	t.Logf("chaos: after the load every node serves and the replicas converged: %s", chaosStatuses(last))
	return file, leader
}

// chaosCountServing counts the nodes of file whose process runs and that
// answer with a leader or follower role.
func chaosCountServing(client *remoting.Client, file devcluster.File) int {
	n := 0
	for _, node := range file.Nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s, err := devcluster.Status(ctx, client, node)
		cancel()
		if err == nil && devcluster.Alive(node.PID) && (s.Role == devcluster.RoleLeader || s.Role == devcluster.RoleFollower) {
			n++
		}
	}
	return n
}

// chaosCheckAcked reads every acknowledged message back from the leader at
// the offset of its msgId and compares key and body.
func chaosCheckAcked(t *testing.T, client *remoting.Client, leader devcluster.Node, res devcluster.LoadResult, fig *chaosFigures) {
	t.Helper()
	fig.lost = 0
	for _, s := range res.Sends {
		if s.Outcome() != devcluster.Acked {
			continue
		}
		why := ""
		if s.Offset < 0 {
			why = fmt.Sprintf("msgId %q is not an offset msgId", s.MsgID)
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			m, err := devcluster.View(ctx, client, leader.Addr, s.Offset)
			cancel()
			switch {
			case err != nil:
				why = err.Error()
			case devcluster.KeyOf(m) != s.Key || !bytes.Equal(m.Body, s.Body):
				why = fmt.Sprintf("offset %d holds key %q body %q", s.Offset, devcluster.KeyOf(m), chaosShort(m.Body))
			}
		}
		if why != "" {
			fig.lost++
			fig.lostKeys[s.Key] = true
			if fig.lost <= 20 {
				t.Errorf("acknowledged message %s (msgId %s, attempts %s) lost: %s", s.Key, s.MsgID, chaosAttempts(s.Attempts), why)
			}
		}
	}
}

// chaosCheckQueues reads the topic's queues back from the leader and
// counts, by body, what each message left there: an acked message must be
// there, and no message may be there twice (the duplicate window).
func chaosCheckQueues(t *testing.T, client *remoting.Client, leader devcluster.Node, res devcluster.LoadResult, fig *chaosFigures) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ms, err := devcluster.ReadTopic(ctx, client, leader.Addr, chaosTopic, chaosCheckGroup)
	if err != nil {
		t.Errorf("reading %s back from %s: %v", chaosTopic, leader.ID, err)
		return
	}
	copies := make(map[string]int, len(ms))
	for _, m := range ms {
		copies[string(m.Body)]++
	}
	fig.duplicates, fig.failedStored, fig.unknownStored = 0, 0, 0
	sent := make(map[string]bool, len(res.Sends))
	reported := 0
	for _, s := range res.Sends {
		sent[string(s.Body)] = true
		n := copies[string(s.Body)]
		switch o := s.Outcome(); {
		case o == devcluster.Acked && n == 0:
			if !fig.lostKeys[s.Key] {
				fig.lost++
			}
			t.Errorf("acknowledged message %s (msgId %s) is in none of %s's queues", s.Key, s.MsgID, chaosTopic)
		case o == devcluster.Failed && n > 0:
			fig.failedStored++
		case o == devcluster.Unknown && n > 0:
			fig.unknownStored++
		}
		if n <= 1 {
			continue
		}
		// Every attempt of a send carries its UNIQ_KEY, so the group's
		// duplicate window answers a retry with the first store: a
		// message is stored once however often it was sent.
		fig.duplicates += n - 1
		if reported++; reported <= 20 {
			t.Errorf("message %s (UNIQ_KEY %s) stored %d times; %s attempts %s", s.Key, s.Uniq, n, s.Outcome(), chaosAttempts(s.Attempts))
		}
	}
	foreign := 0
	for body := range copies {
		if !sent[body] {
			if foreign++; foreign <= 5 {
				t.Errorf("%s holds a message nobody sent: %q", chaosTopic, chaosShort([]byte(body)))
			}
		}
	}
	t.Logf("chaos: %d records in %s's queues on %s; %d sends that failed and %d of unknown outcome were stored",
		len(ms), chaosTopic, leader.ID, fig.failedStored, fig.unknownStored)
}

// chaosWaitNil is waitFor for a check that says why it does not hold yet;
// on timeout the failure names the last reason and shows the processes'
// recent output.
func chaosWaitNil(t *testing.T, timeout time.Duration, what string, d *devcluster.Process, check func() error) {
	t.Helper()
	if err := chaosPoll(timeout, check); err != nil {
		t.Fatalf("timed out after %v waiting for %s: %v\n%s", timeout, what, err, chaosDiagnostics(d))
	}
}

// chaosPoll polls check every 50 ms until it returns nil or timeout passes,
// and returns its last error.
func chaosPoll(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not synchronisation
	}
}

// chaosDiagnostics is the tail of dev's output and of every node's log.
func chaosDiagnostics(d *devcluster.Process) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- dev output (tail):\n%s\n", chaosTail(d.Output(), 30))
	logs, _ := filepath.Glob(filepath.Join(d.Dir, "n*.log"))
	for _, p := range logs {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "--- %s (tail):\n%s\n", filepath.Base(p), chaosTail(string(data), 15))
	}
	return b.String()
}

func chaosTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func chaosStatuses(st []devcluster.NodeStatus) string {
	var parts []string
	for _, s := range st {
		parts = append(parts, fmt.Sprintf("%s %s term %d commitlog %d metadata %d applied %d",
			s.ID, s.Role, s.Term, s.CommitLogMaxOffset, s.MetadataApplied, s.RaftApplied))
	}
	return strings.Join(parts, "; ")
}

func chaosAttempts(as []devcluster.Attempt) string {
	var parts []string
	for _, a := range as {
		p := a.Outcome.String() + "@" + a.Addr
		if a.Code >= 0 {
			p += " code " + strconv.Itoa(int(a.Code))
		}
		if a.Detail != "" {
			p += " (" + a.Detail + ")"
		}
		parts = append(parts, p)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func chaosShort(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// chaosEnvInt reads an integer environment variable, def when unset.
func chaosEnvInt(t *testing.T, name string, def int64) int64 {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// chaosFigures is the run's summary; a check that did not run shows "?".
type chaosFigures struct {
	seed                                   int64
	faults                                 map[devcluster.FaultKind]int
	done                                   int
	sent, acked, failed, unknown           int
	attempts, attemptsFailed, attemptsUnkn int
	lost, duplicates                       int
	lostKeys                               map[string]bool // the lost messages, counted once
	failedStored, unknownStored            int
	identical                              string
	serving, nodes                         int
	restarts                               int
	truncations, truncKilled               int
	duration                               time.Duration
}

func newChaosFigures(seed int64) *chaosFigures {
	return &chaosFigures{seed: seed, faults: map[devcluster.FaultKind]int{}, lostKeys: map[string]bool{},
		sent: -1, acked: -1, failed: -1, unknown: -1, attempts: -1, attemptsFailed: -1, attemptsUnkn: -1, lost: -1, duplicates: -1,
		failedStored: -1, unknownStored: -1, identical: "?", serving: -1, nodes: -1, restarts: -1,
		truncations: -1}
}

func (f *chaosFigures) load(r devcluster.LoadResult) {
	f.sent, f.acked, f.failed, f.unknown = len(r.Sends), r.Acked, r.Failed, r.Unknown
	f.attempts, f.attemptsFailed, f.attemptsUnkn = r.Attempts, r.AttemptsFailed, r.AttemptsUnknown
}

func chaosBool(b bool) string { return strconv.FormatBool(b) }

// String is the figures line.
func (f *chaosFigures) String() string {
	n := func(v int) string {
		if v < 0 {
			return "?"
		}
		return strconv.Itoa(v)
	}
	var kinds []string
	for _, k := range devcluster.FaultKinds() {
		kinds = append(kinds, fmt.Sprintf("%v=%d", k, f.faults[k]))
	}
	return fmt.Sprintf("chaos: seed=%d faults=%d (%s) sent=%s acked=%s failed=%s unknown=%s lost=%s duplicates=%s "+
		"replicas-identical=%s nodes-serving=%s/%s duration=%v attempts=%s (failed=%s unknown=%s) failed-stored=%s unknown-stored=%s restarts=%s "+
		"log-suffix-truncations=%s (nodes killed after one: %d)",
		f.seed, f.done, strings.Join(kinds, " "), n(f.sent), n(f.acked), n(f.failed), n(f.unknown), n(f.lost), n(f.duplicates),
		f.identical, n(f.serving), n(f.nodes), f.duration.Round(time.Millisecond),
		n(f.attempts), n(f.attemptsFailed), n(f.attemptsUnkn), n(f.failedStored), n(f.unknownStored), n(f.restarts),
		n(f.truncations), f.truncKilled)
}
