package broker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/metadata"
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

// blockingGroup is an offsetGroup whose Metadata blocks once, until
// release, so that a test can look at the committer in mid-flush.
type blockingGroup struct {
	md            *metadata.State
	once          sync.Once
	inMD, release chan struct{}
	index         uint64
}

func (g *blockingGroup) Metadata() *metadata.State {
	g.once.Do(func() { close(g.inMD); <-g.release })
	return g.md
}

func (g *blockingGroup) ProposeMetadata(_ context.Context, op metadata.Op) error {
	g.index++
	_, err := g.md.Apply(g.index, op)
	return err
}

func (g *blockingGroup) IsLeader() bool { return true }

// A commit being flushed is in flight from the moment it leaves the
// pending table: a linearizable read must wait for it, never find it in
// neither and answer the older replicated value.
func TestOffsetReadWaitsForACommitInMidFlush(t *testing.T) {
	g := &blockingGroup{md: metadata.New(), inMD: make(chan struct{}), release: make(chan struct{})}
	c := newOffsetCommitter(offsetDeps{group: g, log: hclog.NewNullLogger()})
	k := offsetKey{"g", "T", 0}
	c.commit(k.group, k.topic, k.queueID, 5, "")
	done := make(chan error, 1)
	go func() { done <- c.flush(context.Background()) }()
	<-g.inMD
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	err := c.awaitFlushed(ctx, k)
	cancel()
	if err == nil {
		t.Fatal("a read found nothing to wait for while the commit was being flushed")
	}
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := c.awaitFlushed(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	if off, ok := c.committed(k); !ok || off != 5 {
		t.Fatalf("committed %d %v, want 5", off, ok)
	}
}
