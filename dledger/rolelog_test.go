package dledger_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/internal/testwait"
)

// lockedBuffer is a bytes.Buffer safe for the loggers of several nodes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestGroupLogLinesRoleAndTerm: in a real group's log, raft's lines carry
// the node's role and term as raft has them when the line is written (the
// winner's "election won" is not tagged with the follower role and older
// term it had before the election), and no line has a key twice.
func TestGroupLogLinesRoleAndTerm(t *testing.T) {
	var out lockedBuffer
	c := dledgertest.MakeCluster(t, 3, func(i int, cfg *dledger.Config) {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Info}).With("node", cfg.NodeID)
	})
	ctx := ctxT(t, 30*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", out.String())
		}
	})
	testwait.For(t, 10*time.Second, "the leader's role line", func() bool {
		return strings.Contains(out.String(), "role changed: group=g node="+leader.ID+" role=leader writable=true")
	})
	won := false
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		_, kv, _ := strings.Cut(line, ": ")
		seen := map[string]bool{}
		for _, f := range strings.Fields(kv) {
			k, _, ok := strings.Cut(f, "=")
			if !ok || strings.ContainsAny(k, `"[]{}`) {
				continue
			}
			if seen[k] {
				t.Fatalf("key %q twice in %q", k, line)
			}
			seen[k] = true
		}
		if strings.Contains(line, "election won:") {
			won = true
			if strings.Contains(line, "role=follower") {
				t.Fatalf("the winner's line carries the role it had before the election: %q", line)
			}
		}
		if strings.Contains(line, "entering leader state:") && !strings.Contains(line, "role=leader") {
			t.Fatalf("the new leader's line does not say leader: %q", line)
		}
	}
	if !won {
		t.Fatalf("no election line:\n%s", out.String())
	}
}
