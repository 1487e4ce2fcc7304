package broker

import (
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestOffsetCommitterCoalesces(t *testing.T) {
	c := newOffsetCommitter(offsetDeps{log: hclog.NewNullLogger()})
	c.commit("g", "T", 0, 1, "")
	c.commit("g", "T", 0, 4, "")
	c.commit("g", "T", 1, 2, "n1")
	c.commit("", "T", 1, 2, "")   // ignored
	c.commit("g", "T", 1, -1, "") // ignored
	if len(c.pending) != 2 || c.pending[offsetKey{"g", "T", 0}].offset != 4 || c.pending[offsetKey{"g", "T", 1}].forwardedBy != "n1" {
		t.Fatalf("pending = %+v", c.pending)
	}
	// A failed round is retried unless a newer commit arrived, and dropped
	// after maxCommitTries.
	batch := c.pending
	c.pending = map[offsetKey]pendingOffset{}
	c.commit("g", "T", 1, 9, "")
	c.requeue(batch, sortedKeys(batch), nil)
	if c.pending[offsetKey{"g", "T", 0}].tries != 1 || c.pending[offsetKey{"g", "T", 1}].offset != 9 {
		t.Fatalf("after requeue = %+v", c.pending)
	}
	b2 := map[offsetKey]pendingOffset{{"g", "T", 0}: {offset: 4, tries: maxCommitTries - 1}}
	c.pending = map[offsetKey]pendingOffset{}
	c.requeue(b2, sortedKeys(b2), nil)
	if len(c.pending) != 0 {
		t.Fatalf("not dropped: %+v", c.pending)
	}
}
