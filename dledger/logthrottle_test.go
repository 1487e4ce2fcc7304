package dledger

import (
	"bytes"
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
