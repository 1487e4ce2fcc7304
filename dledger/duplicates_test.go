package dledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/store"
)

const testWindow = 2 * time.Minute

// keyed is a test message with the producer's UNIQ_KEY key.
func keyed(topic string, q int32, body, key string) *message.Ext {
	m := dledger.NewTestMsg(topic, q, body)
	m.SetProperty(message.PropertyUniqKey, key)
	return m
}

func sendOne(t *testing.T, ctx context.Context, g *dledger.Group, m *message.Ext, window time.Duration) store.PutResult {
	t.Helper()
	res, err := g.ProposeSend(ctx, []*message.Ext{m}, window)
	if err != nil {
		t.Fatalf("send %s: %v", m.UniqKey(), err)
	}
	if len(res) != 1 {
		t.Fatalf("%d results for one message", len(res))
	}
	return res[0]
}

// sameStore checks that a duplicate's answer names the first store.
func sameStore(t *testing.T, first, again store.PutResult, q int32) {
	t.Helper()
	if !again.Duplicate || again.PhysicalOffset != first.PhysicalOffset || again.QueueOffset != first.QueueOffset ||
		again.MsgID != first.MsgID || again.QueueID != q || again.Size != first.Size {
		t.Fatalf("repeat answered %+v, want the first store %+v in queue %d", again, first, q)
	}
}

// singleLeader is the group of a one-node cluster, elected.
func singleLeader(t *testing.T) (*dledger.Group, context.Context) {
	t.Helper()
	c := dledgertest.MakeNode(t)
	ctx := ctxT(t, 30*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return leader.Group(), ctx
}

func maxOffset(t *testing.T, g *dledger.Group, topic string, q int32) int64 {
	t.Helper()
	n, err := messagestore.Of(g).MaxOffset(topic, q)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestProposeSendStoresARepeatOnce: a message sent again with its
// UNIQ_KEY, to another queue, is answered with the first store and not
// stored; without a window, or to another topic, it is stored.
func TestProposeSendStoresARepeatOnce(t *testing.T) {
	g, ctx := singleLeader(t)
	first := sendOne(t, ctx, g, keyed("T", 0, "a", "K1"), testWindow)
	if first.Duplicate {
		t.Fatal("a first send answered as a duplicate")
	}
	again := sendOne(t, ctx, g, keyed("T", 1, "a", "K1"), testWindow)
	sameStore(t, first, again, 0)
	if n := maxOffset(t, g, "T", 1); n != 0 {
		t.Fatalf("the repeat was stored: queue 1 holds %d", n)
	}
	if g.DuplicatesFound() != 1 {
		t.Fatalf("DuplicatesFound = %d, want 1", g.DuplicatesFound())
	}
	// Off: stored again. Another topic: a different message.
	if r := sendOne(t, ctx, g, keyed("T", 1, "a", "K1"), 0); r.Duplicate {
		t.Fatal("a send without a window was answered as a duplicate")
	}
	if r := sendOne(t, ctx, g, keyed("U", 0, "a", "K1"), testWindow); r.Duplicate {
		t.Fatal("the same key in another topic was answered as a duplicate")
	}
	// Propose (internal writes) never looks.
	if res, err := g.Propose(ctx, []*message.Ext{keyed("T", 2, "a", "K1")}); err != nil || res[0].Duplicate {
		t.Fatalf("Propose: %v %+v", err, res)
	}
	if n := maxOffset(t, g, "T", 2); n != 1 {
		t.Fatalf("Propose stored %d", n)
	}
	// A batch that repeats a key within itself and one stored before:
	// one new store, the rest answered from it or the window.
	batch := []*message.Ext{keyed("B", 0, "x", "K2"), keyed("B", 0, "x", "K2"), keyed("B", 0, "y", "K1b"), keyed("B", 0, "z", "K3")}
	if _, err := g.ProposeSend(ctx, batch[2:3], testWindow); err != nil {
		t.Fatal(err)
	}
	res, err := g.ProposeSend(ctx, batch, testWindow)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Duplicate || !res[1].Duplicate || !res[2].Duplicate || res[3].Duplicate {
		t.Fatalf("batch answered %+v", res)
	}
	sameStore(t, res[0], res[1], 0)
	if n := maxOffset(t, g, "B", 0); n != 3 {
		t.Fatalf("queue B/0 holds %d messages, want 3 (K1b, K2, K3)", n)
	}
}

// TestProposeSendConcurrentRepeats: many sends of one key at once, from
// the async and the waiting path, store it once and all name that store.
func TestProposeSendConcurrentRepeats(t *testing.T) {
	g, ctx := singleLeader(t)
	const senders, keys = 16, 8
	var mu sync.Mutex
	got := map[string][]store.PutResult{}
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		for k := 0; k < keys; k++ {
			wg.Add(1)
			m := keyed("C", int32(s%4), fmt.Sprintf("body-%d", k), fmt.Sprintf("KEY%02d", k))
			record := func(res []store.PutResult, err error) {
				defer wg.Done()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[m.UniqKey()] = append(got[m.UniqKey()], res[0])
				mu.Unlock()
			}
			if s%2 == 0 {
				g.ProposeSendAsync([]*message.Ext{m}, testWindow, record)
			} else {
				go func() { record(g.ProposeSend(ctx, []*message.Ext{m}, testWindow)) }()
			}
		}
	}
	wg.Wait()
	stored := int64(0)
	for q := int32(0); q < 4; q++ {
		stored += maxOffset(t, g, "C", q)
	}
	if stored != keys {
		t.Fatalf("%d messages stored for %d keys", stored, keys)
	}
	for k, rs := range got {
		firsts := 0
		for _, r := range rs {
			if !r.Duplicate {
				firsts++
			}
			if r.PhysicalOffset != rs[0].PhysicalOffset || r.MsgID != rs[0].MsgID {
				t.Fatalf("key %s answered with two stores: %+v and %+v", k, rs[0], r)
			}
		}
		if firsts != 1 || len(rs) != senders {
			t.Fatalf("key %s: %d answers, %d of them first stores", k, len(rs), firsts)
		}
	}
}

// TestDuplicateWindowSurvivesFailoverAndRestart: the window is the
// group's: a new leader answers a repeat of what the old one stored, and
// after every node restarts (the window rebuilt from the CommitLog) so
// does the next leader.
func TestDuplicateWindowSurvivesFailoverAndRestart(t *testing.T) {
	c := dledgertest.MakeCluster(t, 3)
	ctx := ctxT(t, 60*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := sendOne(t, ctx, leader.Group(), keyed("F", 0, "a", "FAILOVER1"), testWindow)
	for i := 0; i < 50; i++ { // more entries, so the window does not start at the log's start
		sendOne(t, ctx, leader.Group(), keyed("F", 1, "b", fmt.Sprintf("FILL%03d", i)), testWindow)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(leader.ID); err != nil {
		t.Fatal(err)
	}
	next := leaderOtherThan(t, ctx, c, leader.ID)
	again := sendOne(t, ctx, next.Group(), keyed("F", 2, "a", "FAILOVER1"), testWindow)
	sameStore(t, first, again, 0)
	if err := c.Restart(leader.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Up() {
		if err := c.Stop(n.ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.Nodes {
		if err := c.Restart(n.ID); err != nil {
			t.Fatal(err)
		}
	}
	l, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again = sendOne(t, ctx, l.Group(), keyed("F", 3, "a", "FAILOVER1"), testWindow)
	sameStore(t, first, again, 0)
	for q := int32(2); q < 4; q++ {
		if n := maxOffset(t, l.Group(), "F", q); n != 0 {
			t.Fatalf("a repeat was stored in F/%d", q)
		}
	}
	if err := c.CompareReplicas(); err != nil {
		t.Fatal(err)
	}
}

// TestDoubtedKeyWaitsForTheNextIndex: the key of an entry whose outcome
// stayed unknown (leadership lost before the node learned whether it was
// committed) is not decided until the node's window is indexed afresh:
// a repeat is refused as busy (the producer sends it again) if the
// window does not hold it, answered with the first store if it does,
// and decided as any other once the doubts are settled.
func TestDoubtedKeyWaitsForTheNextIndex(t *testing.T) {
	g, ctx := singleLeader(t)
	stored := sendOne(t, ctx, g, keyed("Doubt", 0, "a", "KEY-STORED"), time.Minute)
	g.DoubtForTest("Doubt", "KEY-STORED")
	g.DoubtForTest("Doubt", "KEY-NEW")

	_, err := g.ProposeSend(ctx, []*message.Ext{keyed("Doubt", 1, "b", "KEY-NEW")}, time.Minute)
	if !errors.Is(err, dledger.ErrRepeatNotStored) || !errors.Is(err, dledger.ErrBusy) {
		t.Fatalf("a doubted key not in the window: %v, want ErrRepeatNotStored (busy)", err)
	}
	if n := maxOffset(t, g, "Doubt", 1); n != 0 {
		t.Fatalf("a doubted key was stored (%d in queue 1)", n)
	}
	sameStore(t, stored, sendOne(t, ctx, g, keyed("Doubt", 1, "a", "KEY-STORED"), time.Minute), 0)

	g.ClearDoubtsForTest()
	if r := sendOne(t, ctx, g, keyed("Doubt", 1, "b", "KEY-NEW"), time.Minute); r.Duplicate {
		t.Fatalf("a settled key that was never stored answered as a duplicate: %+v", r)
	}
	if n := maxOffset(t, g, "Doubt", 1); n != 1 {
		t.Fatalf("queue 1 holds %d, want 1", n)
	}
}
