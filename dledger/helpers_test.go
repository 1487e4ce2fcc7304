package dledger_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/store"
)

// leaderOtherThan returns c's leader once it is not node id (leadership
// handed to n0 if id leads): tests of a node that must stay a follower.
func leaderOtherThan(t testing.TB, ctx context.Context, c *dledgertest.Cluster, id string) *dledgertest.Node {
	t.Helper()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if leader.ID == id {
		if err := leader.Group().TransferLeadership(ctx, "n0"); err != nil {
			t.Fatal(err)
		}
		if leader, err = c.Leader(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return leader
}

// stableTiming is the timing of tests that hold one leader from start to
// end (they propose on it, then inspect its followers): TimingDefault's
// second of heartbeat timeout, so that a scheduling stall on a loaded
// machine (every package's tests at once, under -race) does not elect
// another leader midway, as TimingTest's 200 ms may.
var stableTiming = dledger.TimingDefault

// proposeOnLeaderOtherThan proposes op on a leader other than id until one
// applies it: leadership may move between finding the leader and
// proposing (an election on a loaded machine), and then the proposal goes
// to the next leader. op must be one that may be applied twice (an
// outcome unknown is retried too).
func proposeOnLeaderOtherThan(t *testing.T, ctx context.Context, c *dledgertest.Cluster, id string, op metadata.Op) {
	t.Helper()
	waitUntil(t, ctx, fmt.Sprintf("a leader other than %s applies %s", id, op.Kind), func() bool {
		err := leaderOtherThan(t, ctx, c, id).Group().ProposeMetadata(ctx, op)
		if err != nil && !retryable(err) && !errors.Is(err, dledger.ErrOutcomeUnknown) {
			t.Fatalf("%s: %v", op.Kind, err)
		}
		return err == nil
	})
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// retryable reports errors after which a client goes to the (new) leader.
func retryable(err error) bool {
	return errors.Is(err, dledger.ErrNotLeader) || errors.Is(err, dledger.ErrNotReady) || errors.Is(err, dledger.ErrClosed) ||
		errors.Is(err, dledger.ErrBusy) || errors.Is(err, dledger.ErrFailed)
}

// load is a set of writers proposing unique messages to whichever node
// leads, recording what was acknowledged and what ended unknown.
type load struct {
	c        *dledgertest.Cluster
	mu       sync.Mutex
	acked    map[string]store.PutResult
	unknown  map[string]bool
	errs     []error
	stop     chan struct{}
	haltOnce sync.Once
	wg       sync.WaitGroup
}

func startLoad(_ *testing.T, c *dledgertest.Cluster, writers int, topic string) *load {
	return startPaddedLoad(c, writers, 0, topic)
}

// startPaddedLoad is startLoad with message bodies of about pad bytes, so
// the CommitLog fills segments quickly. The body is also the message's key
// (testMsg), so pad stays under the IndexFile's 1 KiB key limit.
func startPaddedLoad(c *dledgertest.Cluster, writers, pad int, topic string) *load {
	l := &load{c: c, acked: map[string]store.PutResult{}, unknown: map[string]bool{}, stop: make(chan struct{})}
	suffix := ""
	if pad > 0 {
		suffix = "-" + strings.Repeat("p", pad)
	}
	for w := 0; w < writers; w++ {
		l.wg.Add(1)
		go func(w int) {
			defer l.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				l.send(topic, int32(w%4), fmt.Sprintf("w%d-%d%s", w, i, suffix))
			}
		}(w)
	}
	return l
}

// send proposes one message until it is acknowledged, the outcome is
// unknown, or the load stops.
func (l *load) send(topic string, q int32, body string) {
	for attempt := 0; attempt < 1000; attempt++ {
		select {
		case <-l.stop:
			return
		default:
		}
		var leader *dledger.Group
		for _, n := range l.c.Up() {
			if g := n.Group(); g != nil && g.IsLeader() {
				leader = g
			}
		}
		if leader == nil {
			time.Sleep(2 * time.Millisecond) // waiting for an election; bounded by attempts
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := leader.Propose(ctx, []*message.Ext{dledger.NewTestMsg(topic, q, body)})
		cancel()
		l.mu.Lock()
		switch {
		case err == nil:
			l.acked[body] = res[0]
			l.mu.Unlock()
			return
		case errors.Is(err, dledger.ErrOutcomeUnknown):
			l.unknown[body] = true
			l.mu.Unlock()
			return
		case retryable(err):
			l.mu.Unlock()
		default:
			l.errs = append(l.errs, err)
			l.mu.Unlock()
			return
		}
	}
}

// halt stops the writers and waits for them; a second call does nothing.
func (l *load) halt() {
	l.haltOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
}

func (l *load) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// waitAcked waits until at least n messages are acknowledged.
func (l *load) waitAcked(t *testing.T, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for l.ackedCount() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d messages acknowledged in %v (errors: %v)", l.ackedCount(), n, d, l.errs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// bodies reads every queue of topic on a node and counts message bodies.
func bodies(t *testing.T, g *dledger.Group, topic string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for q := int32(0); q < 8; q++ {
		for off := int64(0); ; {
			res, err := messagestore.Of(g).Get(topic, q, off, 256, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res.Records {
				m, _, err := message.DecodeRecord(r.Bytes)
				if err != nil {
					t.Fatal(err)
				}
				out[string(m.Body)]++
			}
			next := res.NextBeginOffset
			res.Release()
			if next <= off || res.Status != store.Found {
				break
			}
			off = next
		}
	}
	return out
}

// checkNoLoss asserts every acknowledged message is on every running node
// and reports duplicates (only possible for retried unknown outcomes).
func checkNoLoss(t *testing.T, c *dledgertest.Cluster, l *load, topic string) {
	t.Helper()
	for _, n := range c.Up() {
		got := bodies(t, n.Group(), topic)
		dups := 0
		for b, k := range got {
			if k > 1 {
				dups++
				if !l.unknown[b] {
					t.Errorf("%s: %q stored %d times but was never retried", n.ID, b, k)
				}
			}
		}
		for b := range l.acked {
			if got[b] == 0 {
				t.Fatalf("%s: acknowledged message %q lost", n.ID, b)
			}
		}
		t.Logf("%s: %d acknowledged, %d unknown outcome, %d stored, %d duplicated", n.ID, len(l.acked), len(l.unknown), len(got), dups)
	}
}

// finish stops the load, waits for every running node to apply everything,
// and checks that replicas are byte-identical and no acknowledged message
// was lost.
func (l *load) finish(t *testing.T, ctx context.Context, topic string) {
	t.Helper()
	l.halt()
	if len(l.errs) > 0 {
		t.Fatalf("unexpected errors: %v", l.errs)
	}
	if err := l.c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.c.CompareReplicas(); err != nil {
		t.Fatal(err)
	}
	checkNoLoss(t, l.c, l, topic)
}

// loadedCluster starts a 3-node group, waits for its leader and starts 4
// writers, returning once 100 messages are acknowledged.
func loadedCluster(t *testing.T, opts ...dledgertest.ClusterOption) (*dledgertest.Cluster, context.Context, *dledgertest.Node, *load) {
	t.Helper()
	c := dledgertest.MakeCluster(t, 3, opts...)
	ctx := ctxT(t, 60*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l := startLoad(t, c, 4, "T")
	l.waitAcked(t, 100, 30*time.Second)
	return c, ctx, leader, l
}

// followerOf returns a running node other than leader.
func followerOf(c *dledgertest.Cluster, leader *dledgertest.Node) *dledgertest.Node {
	var f *dledgertest.Node
	for _, n := range c.Up() {
		if n != leader {
			f = n
		}
	}
	return f
}
