package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/internal/vfs"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// raftStatusAt asks the node at addr for its raft view (RAFT_STATUS).
func raftStatusAt(ctx context.Context, c *remoting.Client, addr string) (protocol.RaftStatus, error) {
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	resp, err := c.Invoke(rctx, addr, remoting.NewRequest(remoting.RaftStatus, nil, nil))
	if err != nil {
		return protocol.RaftStatus{}, err
	}
	if err := remoting.CheckResponse(resp); err != nil {
		return protocol.RaftStatus{}, err
	}
	return protocol.DecodeRaftStatus(resp.Body)
}

// nodeLog returns node id's log as dev wrote it so far.
func nodeLog(t *testing.T, d *devcluster.Process, id string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.Dir, id+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// others returns the nodes of f other than id.
func others(f devcluster.File, id string) []devcluster.Node {
	var out []devcluster.Node
	for _, n := range f.Nodes {
		if n.ID != id {
			out = append(out, n)
		}
	}
	return out
}

// waitCaughtUp waits until every node of d answers RAFT_STATUS in the
// leader's term and has applied what the leader has applied, and returns
// the leader's view. (Configuration entries never reach the FSM, so the
// applied index can stay below the commit index.)
func waitCaughtUp(t *testing.T, ctx context.Context, c *remoting.Client, d *devcluster.Process, timeout time.Duration) protocol.RaftStatus {
	t.Helper()
	var leader protocol.RaftStatus
	var views []protocol.RaftStatus
	deadline := time.Now().Add(timeout)
	for {
		views = views[:0]
		leader = protocol.RaftStatus{}
		ok := true
		for _, n := range d.File.Nodes {
			st, err := raftStatusAt(ctx, c, n.Addr)
			if err != nil {
				ok = false
				st = protocol.RaftStatus{Node: n.ID, Role: err.Error()}
			}
			if st.Role == "leader" {
				leader = st
			}
			views = append(views, st)
		}
		ok = ok && leader.Node != ""
		for _, st := range views {
			ok = ok && st.AppliedIndex >= leader.AppliedIndex && st.Term == leader.Term
		}
		if ok {
			return leader
		}
		if time.Now().After(deadline) {
			var logs strings.Builder
			for _, n := range d.File.Nodes {
				text := nodeLog(t, d, n.ID)
				lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
				fmt.Fprintf(&logs, "--- %s.log (last lines)\n%s\n", n.ID, strings.Join(lines[max(0, len(lines)-40):], "\n"))
			}
			t.Fatalf("after %v not every node serves and has applied the leader's entries: %+v\ndev:\n%s\n%s", timeout, views, d.Output(), logs.String())
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not synchronisation
	}
}

// TestDevSuffixTruncatedNodeSurvivesKill9 is the raft-wal v0.4.0 crash
// loop with real processes: an old leader keeps entries it could not
// commit (its followers are stopped), the other two elect a new leader,
// the old one comes back and raft clears its conflicting suffix ("clearing
// log suffix"), then it is killed with SIGKILL. It must start again, catch
// up and serve every acknowledged message. On raft-wal v0.4.0 the restart
// fails for good with "sealed segment has no index block".
func TestDevSuffixTruncatedNodeSurvivesKill9(t *testing.T) {
	// Two raft entries of sends in flight: with one (the default) the old
	// leader proposes nothing past the entry its stopped followers already
	// hold in their sockets, so it never keeps a suffix to clear.
	lc := beforeLeaderStop(t, "--restart", "--log-level", "info", "--node-conf", "raft.max_inflight_entries=2")
	ctx, c, d := lc.ctx, lc.client, lc.d
	// A follower resumed from SIGSTOP still reads the AppendEntries that
	// waited in its socket, so a cycle only leaves the old leader a
	// conflicting suffix when it appended entries past that request; a
	// cycle that did not is repeated with the group's next leader.
	var old devcluster.Node
	for attempt := 1; ; attempt++ {
		addr, err := d.Leader(ctx, c)
		if err != nil || addr == "" {
			t.Fatalf("leader: %q %v", addr, err)
		}
		old, _ = d.File.NodeByAddr(addr)
		acked := isolateAndReplaceLeader(t, lc, old)
		lc.acked = append(lc.acked, acked...)
		if strings.Contains(nodeLog(t, d, old.ID), "clearing log suffix") {
			break
		}
		if attempt == 5 {
			t.Fatalf("no cycle left the old leader a suffix to clear")
		}
		t.Logf("attempt %d: %s had no conflicting suffix; again", attempt, old.ID)
	}

	// SIGKILL; dev starts it again; it must serve and catch up.
	if err := d.Kill9(old.PID); err != nil {
		t.Fatal(err)
	}
	restarted := fmt.Sprintf("dev: restarted %s (pid ", old.ID)
	waitFor(t, 30*time.Second, "dev to restart the old leader", func() bool {
		return strings.Contains(d.Output(), restarted)
	})
	waitFor(t, 60*time.Second, "the old leader to serve again", func() bool {
		if out := d.Output(); strings.Contains(out, "cannot start from its own files") || strings.Contains(out, "keeps failing") {
			t.Fatalf("the old leader does not start again:\n%s\n%s's last error: %s", out, old.ID, lastErrorLine(filepath.Join(d.Dir, old.ID+".log")))
		}
		_, err := raftStatusAt(ctx, c, old.Addr)
		return err == nil
	})
	leader := waitCaughtUp(t, ctx, c, d, 60*time.Second)
	for _, n := range d.File.Nodes {
		checkServes(t, ctx, c, n.Addr, lc.acked)
	}
	t.Logf("old leader %s restarted after its suffix was cleared and killed; leader %s term %d, all %d nodes at commit index %d",
		old.ID, leader.Node, leader.Term, len(d.File.Nodes), leader.CommitIndex)
}

// isolateAndReplaceLeader stops old's followers under a stream of one-way
// sends (the leader appends entries it cannot commit), stops old, resumes
// the followers until one of them leads and acknowledges sends (returned),
// then resumes old and waits until it follows the new term.
func isolateAndReplaceLeader(t *testing.T, lc *leaderChange, old devcluster.Node) []string {
	t.Helper()
	ctx, c, d := lc.ctx, lc.client, lc.d
	fs := others(d.File, old.ID)
	sctx, stopSends := context.WithCancel(ctx)
	defer stopSends()
	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < 5000; i++ {
			select {
			case <-sctx.Done():
				return
			case <-tick.C:
			}
			req := sendRequest("KillTopic", fmt.Sprintf("stream-%d", i))
			_ = c.InvokeOneway(sctx, old.Addr, req)
		}
	}()
	defer func() { <-streamDone }()
	for _, f := range fs {
		if err := d.SignalNode(f.PID, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	resumed := false
	resume := func(ns ...devcluster.Node) {
		for _, n := range ns {
			if err := d.SignalNode(n.PID, syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer func() {
		if !resumed {
			resume(append(fs, old)...)
		}
	}()
	var before protocol.RaftStatus
	waitFor(t, 10*time.Second, "the isolated leader to stop taking entries", func() bool {
		st, err := raftStatusAt(ctx, c, old.Addr)
		if err != nil {
			return false
		}
		settled := st.LastIndex == before.LastIndex && st.Role != "leader"
		before = st
		return settled
	})
	stopSends()
	t.Logf("old leader %s: term %d, last index %d, commit index %d", old.ID, before.Term, before.LastIndex, before.CommitIndex)

	if err := d.SignalNode(old.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resume(fs...)
	var next protocol.RaftStatus
	waitFor(t, 30*time.Second, "a new leader among the followers", func() bool {
		for _, f := range fs {
			if st, err := raftStatusAt(ctx, c, f.Addr); err == nil && st.Role == "leader" && st.Term > before.Term {
				next = st
				return true
			}
		}
		return false
	})
	var acked []string
	for i := 0; i < 10; i++ {
		resp, err := c.Invoke(ctx, next.LeaderAddr, sendRequest("KillTopic", fmt.Sprintf("after-%d-%d", next.Term, i)))
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("send to the new leader %s: %v %+v", next.Node, err, resp)
		}
		acked = append(acked, resp.ExtFields["msgId"])
	}
	resume(old)
	resumed = true
	waitFor(t, 30*time.Second, "the old leader to follow the new term", func() bool {
		st, err := raftStatusAt(ctx, c, old.Addr)
		return err == nil && st.Term >= next.Term && st.AppliedIndex >= next.CommitIndex
	})
	return acked
}

// checkServes checks that the node at addr serves every acknowledged
// message (by its offset msgId) from its own replica.
func checkServes(t *testing.T, ctx context.Context, c *remoting.Client, addr string, acked []string) {
	t.Helper()
	for _, id := range acked {
		resp, err := c.Invoke(ctx, addr, viewByIDRequest(t, id))
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("node %s does not serve acknowledged message %s: %v %+v", addr, id, err, resp)
		}
	}
}

// viewByIDRequest is VIEW_MESSAGE_BY_ID for an offset msgId.
func viewByIDRequest(t *testing.T, msgID string) *remoting.Command {
	t.Helper()
	_, off, err := message.ParseOffsetMsgID(msgID)
	if err != nil {
		t.Fatalf("msgId %q: %v", msgID, err)
	}
	return remoting.NewRequest(remoting.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(off, 10)}, nil)
}

// TestDevReplaceNode damages a follower's raft log (a group in the wal
// layout, raft.log=wal, whose raft log is a file of its own): the node exits once
// with the error, the file and the way out (exit status 3, no panic), dev
// backs off and reports it, and `ledgermq admin raft replace-node` rebuilds
// it from the group: removed, emptied, started empty without bootstrapping,
// added back as a non-voter, caught up, promoted. Every acknowledged
// message is then served by the rebuilt node too.
func TestDevReplaceNode(t *testing.T) {
	bin := devcluster.Build(t)
	// Small raft log segments, few trailing entries and frequent
	// snapshots: the leader's log is compacted, so the emptied node
	// catches up by snapshot (segment streaming) rather than from the log.
	// Under load a leader this eager can also send the node a snapshot
	// older than entries it has just appended; raft (v1.8.0 with raft-wal)
	// then empties the node's log but keeps its last index and would loop
	// on snapshot installs for ever, so the node stops itself and dev
	// starts it again (dledger fsm.Restore, ErrRestartNeeded).
	d := devcluster.Start(t, bin, devcluster.Options{Args: []string{"--restart", "--node-conf", "raft.log=wal",
		"--node-conf", "raft.snapshot_interval=100ms", "--node-conf", "raft.snapshot_threshold=8",
		"--node-conf", "raft.trailing_logs=4", "--node-conf", "raft.segment_size=65536", "--log-level", "info"}})
	c := remoting.NewClient(remoting.ClientConfig{})
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	leaderAddr, err := d.Leader(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var acked []string
	body := []byte(strings.Repeat("x", 4096))
	for i := 0; i < 100; i++ {
		resp, err := c.Invoke(ctx, leaderAddr, sendKeyedRequest("ReplaceTopic", fmt.Sprintf("m-%d", i), body))
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("send %d: %v %+v", i, err, resp)
		}
		acked = append(acked, resp.ExtFields["msgId"])
	}
	leader, _ := d.File.NodeByAddr(leaderAddr)
	victim := others(d.File, leader.ID)[0]
	waitCaughtUp(t, ctx, c, d, 30*time.Second)

	// Kill it and damage the first raft log segment's header, holding the
	// node's store lock meanwhile so a restart by dev cannot open the files
	// half-way (it fails to lock and is retried).
	if err := d.Kill9(victim.PID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the victim's process to die", func() bool { return !devcluster.Alive(victim.PID) })
	damageRaftLog(t, victim.Dir)

	waitFor(t, 60*time.Second, "dev to report the node as unable to start", func() bool {
		return strings.Contains(d.Output(), fmt.Sprintf("dev: %s cannot start from its own files", victim.ID))
	})
	logText := nodeLog(t, d, victim.ID)
	t.Logf("the node's error: %s", lastErrorLine(filepath.Join(d.Dir, victim.ID+".log")))
	if strings.Contains(logText, "panic:") || strings.Contains(logText, "goroutine ") {
		t.Fatalf("the node died with a panic instead of an error:\n%s", logText)
	}
	for _, want := range []string{"cannot start", filepath.Join(victim.Dir, "raft", "wal"), "replace-node " + victim.ID} {
		if !strings.Contains(logText, want) {
			t.Fatalf("the node's error lacks %q:\n%s", want, logText)
		}
	}

	// The way out, as an operator types it.
	cmd := exec.CommandContext(ctx, bin, "admin", "raft", "replace-node", victim.ID, "--dev-dir", d.Dir, "--timeout", "90s")
	out, err := cmd.CombinedOutput()
	t.Logf("replace-node:\n%s", out)
	if err != nil {
		t.Fatalf("replace-node: %v\ndev:\n%s", err, d.Output())
	}
	st, err := raftStatusAt(ctx, c, leaderAddr)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := st.Member(victim.ID); !ok || !m.Voter {
		t.Fatalf("after replace-node %s is not a voter: %+v", victim.ID, st.Members)
	}
	waitCaughtUp(t, ctx, c, d, 60*time.Second)
	checkServes(t, ctx, c, victim.Addr, acked)
	if log := nodeLog(t, d, victim.ID); !strings.Contains(log, "store restored from snapshot") {
		t.Fatalf("the rebuilt node did not catch up by snapshot:\n%s", log)
	}
	matches, _ := filepath.Glob(victim.Dir + ".replaced-*")
	if len(matches) != 1 {
		t.Fatalf("old data moved aside: %v", matches)
	}

	// raft status lists all three as voters, in a table and as JSON.
	out, err = exec.CommandContext(ctx, bin, "admin", "raft", "status", "-n", d.Namesrv).CombinedOutput()
	if err != nil || strings.Count(string(out), " voter ") != 3 {
		t.Fatalf("raft status: %v\n%s", err, out)
	}
	t.Logf("raft status:\n%s", out)
}

// damageRaftLog overwrites the magic of every raft log segment of the node
// in dataDir, as a disk fault would.
func damageRaftLog(t *testing.T, dataDir string) {
	t.Helper()
	lock, err := vfs.Lock(filepath.Join(dataDir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	segs, err := filepath.Glob(filepath.Join(dataDir, "raft", "wal", "*.wal"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("raft log segments in %s: %v %v", dataDir, segs, err)
	}
	for _, s := range segs {
		f, err := os.OpenFile(s, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte{0xde, 0xad, 0xbe, 0xef}, 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
