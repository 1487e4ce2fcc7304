package dledger

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// A peer that is down: raft's repeated error for it is printed once per
// interval, with the count held back; other peers and messages are not
// held back by it; lower levels pass untouched.
func TestThrottledLoggerCountsRepeats(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	clock := func() time.Time { return now }
	l := newThrottledLogger(hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Trace}), 10*time.Second, clock, func() []interface{} { return []interface{}{"role", "leader", "term", 7} })
	raftLog := l.Named("raft")
	for i := 0; i < 50; i++ {
		raftLog.Error("failed to heartbeat to", "peer", raft.ServerAddress("127.0.0.1:1"), "error", "connection refused")
		now = now.Add(100 * time.Millisecond)
	}
	raftLog.Error("failed to heartbeat to", "peer", "127.0.0.1:2", "error", "connection refused")
	raftLog.Info("entering follower state")
	raftLog.Info("entering follower state")
	now = now.Add(10 * time.Second)
	raftLog.Error("failed to heartbeat to", "peer", "127.0.0.1:1", "error", "connection refused")
	out := buf.String()
	if n := strings.Count(out, "failed to heartbeat to: peer=127.0.0.1:1"); n != 2 {
		t.Fatalf("peer 1's error printed %d times, want 2:\n%s", n, out)
	}
	if !strings.Contains(out, "repeated=49") {
		t.Fatalf("the count of held-back lines is missing:\n%s", out)
	}
	if strings.Count(out, "127.0.0.1:2") != 1 || strings.Count(out, "entering follower state") != 2 {
		t.Fatalf("other lines held back:\n%s", out)
	}
	// Every line, at every level, carries the node's role and term.
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(line, "role=leader term=7") {
			t.Fatalf("a line without role and term: %q", line)
		}
	}
}

// keysOf returns the keys of an hclog text line ("... msg: k=v k=v").
func keysOf(line string) []string {
	_, kv, ok := strings.Cut(line, ": ")
	if !ok {
		return nil
	}
	var keys []string
	for _, f := range strings.Fields(kv) {
		if k, _, ok := strings.Cut(f, "="); ok && !strings.ContainsAny(k, `"[]`) {
			keys = append(keys, k)
		}
	}
	return keys
}

// No line carries a key twice: a key of raft's that the logger binds
// (raft's "node" beside the group's) is renamed, and the role and term
// fields are added only when the line has no such key of its own (raft's
// "term" is the one the line is about).
func TestThrottledLoggerNoDuplicateKeys(t *testing.T) {
	var buf bytes.Buffer
	base := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Trace}).With("group", "g", "node", "n0")
	l := newThrottledLogger(base, time.Second, time.Now, func() []interface{} { return []interface{}{"role", "candidate", "term", 4} })
	raftLog := l.Named("raft")
	raftLog.Info("entering candidate state", "node", "Node at 127.0.0.1:1 [Candidate]", "term", 4)
	raftLog.Info("election won", "term", 4, "tally", 2)
	raftLog.With("node", "x").Info("with a bound key", "id", 1)
	raftLog.Info("an odd argument", "a")
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		seen := map[string]bool{}
		for _, k := range keysOf(line) {
			if seen[k] {
				t.Fatalf("key %q twice in %q", k, line)
			}
			seen[k] = true
		}
		if !seen["node"] || !seen["role"] || !seen["term"] {
			t.Fatalf("node, role or term missing in %q", line)
		}
	}
	out := buf.String()
	for _, want := range []string{
		`node=n0 raft-node="Node at 127.0.0.1:1 [Candidate]" term=4 role=candidate`,
		"election won: group=g node=n0 term=4 tally=2 role=candidate",
		"with a bound key: group=g node=n0 raft-node=x id=1",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("missing %q in:\n%s", want, out)
		}
	}
}

// While the members of a group start, failing to reach a peer that was
// never reached is logged at Debug; once the peer was reached, or after
// the start grace, raft's level applies.
func TestThrottledLoggerPeerNotReachedYet(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	reached := map[string]bool{}
	l := newThrottledLogger(hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info}), 10*time.Second,
		func() time.Time { return now }, nil)
	l.t.reached = func(addr string) bool { return reached[addr] }
	p1 := raft.Server{Suffrage: raft.Voter, ID: "n1", Address: "127.0.0.1:1"}
	p2 := raft.Server{Suffrage: raft.Voter, ID: "n2", Address: "127.0.0.1:2"}
	vote := func(p raft.Server) {
		l.Error("failed to make requestVote RPC", "target", p, "error", "dial tcp "+string(p.Address)+": connect: connection refused", "term", 1)
	}
	for range 3 {
		vote(p1)
		vote(p2)
		now = now.Add(100 * time.Millisecond)
	}
	l.Error("failed to heartbeat to", "peer", p1.Address, "error", "connection refused")
	if buf.Len() != 0 {
		t.Fatalf("errors about peers never reached were printed at start:\n%s", buf.String())
	}
	// n1 answers once, then fails: that is an error again.
	reached[string(p1.Address)] = true
	vote(p1)
	vote(p2)
	if out := buf.String(); !strings.Contains(out, "[ERROR] failed to make requestVote RPC") || strings.Count(out, "\n") != 1 || strings.Contains(out, "{Voter n2") {
		t.Fatalf("want one error, about n1:\n%s", out)
	}
	// n2, never reached, after the grace: a misconfigured or absent peer
	// is reported.
	now = now.Add(peerStartGrace)
	vote(p2)
	if out := buf.String(); strings.Count(out, "{Voter n2") != 1 {
		t.Fatalf("a peer never reached after the grace is not reported:\n%s", out)
	}
}

// The role line says what the node is: an elected leader that does not
// take writes yet is not "a candidate whose leader is itself".
func TestRoleLogArgs(t *testing.T) {
	for _, tt := range []struct {
		ev   RoleEvent
		want string
	}{
		{RoleEvent{Role: RoleCandidate, Term: 4, LeaderID: "n0"}, "[role leader writable false term 4]"},
		{RoleEvent{Role: RoleLeader, Term: 4, LeaderID: "n0"}, "[role leader writable true term 4]"},
		{RoleEvent{Role: RoleFollower, Term: 4, LeaderID: "n1"}, "[role follower term 4 leader n1]"},
		{RoleEvent{Role: RoleFollower, Term: 4}, "[role follower term 4]"},
		{RoleEvent{Role: RoleCandidate, Term: 5}, "[role candidate term 5]"},
	} {
		if got := fmt.Sprint(roleLogArgs(tt.ev, "n0")); got != tt.want {
			t.Errorf("%+v: %s, want %s", tt.ev, got, tt.want)
		}
	}
}
