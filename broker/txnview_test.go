package broker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestTxnViewRebuildCannotResurrectADecision: a rebuild whose scan ran
// before a decision was applied must not install its stale view after the
// decision removed the transaction. That happened at a new leader, where
// the check-back round and an END_TRANSACTION both rebuilt the view: the
// committed transaction came back as pending, was checked again, and its
// producer's answer committed it a second time (a duplicate the chaos
// harness found). The decision now waits for the rebuild in flight.
func TestTxnViewRebuildCannotResurrectADecision(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ts txnState
	const term = 5
	var decided atomic.Bool
	scanned, release := make(chan struct{}), make(chan struct{})
	// The first rebuild scanned before the decision: it finds K pending.
	stale := func(context.Context) (map[string]int64, error) {
		close(scanned)
		<-release
		return map[string]int64{"K": 7}, nil
	}
	// A rebuild after the decision's barrier sees it applied.
	now := func(context.Context) (map[string]int64, error) {
		if decided.Load() {
			return map[string]int64{}, nil
		}
		return map[string]int64{"K": 7}, nil
	}
	rebuilt := make(chan error, 1)
	go func() { rebuilt <- ts.ensure(ctx, term, stale) }()
	<-scanned
	decision := make(chan error, 1)
	go func() {
		decision <- ts.decide(ctx, func() uint64 { return term }, now, func() error {
			if _, ok := ts.latest("K"); ok {
				decided.Store(true)
				ts.done("K")
			}
			return nil
		})
	}()
	waitFor(t, "the decision done or waiting for the rebuild", func() bool { return len(decision) > 0 || ts.waiting.Load() > 0 })
	close(release)
	if err := <-rebuilt; err != nil {
		t.Fatal(err)
	}
	if err := <-decision; err != nil {
		t.Fatal(err)
	}
	if !decided.Load() {
		t.Fatal("the transaction was never decided")
	}
	if off, ok := ts.latest("K"); ok {
		t.Fatalf("the decided transaction is pending again (at %d): a check-back would decide it twice", off)
	}
}

// TestTxnViewDecideRebuildsAfterInvalidate: a decision on a view
// invalidated meanwhile (a proposal of unknown outcome) rebuilds it first.
func TestTxnViewDecideRebuildsAfterInvalidate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ts txnState
	var rebuilds atomic.Int32
	scan := func(context.Context) (map[string]int64, error) {
		rebuilds.Add(1)
		return map[string]int64{"K": 1}, nil
	}
	term := func() uint64 { return 3 }
	seen := func() error {
		if _, ok := ts.latest("K"); !ok {
			t.Error("K missing from a fresh view")
		}
		return nil
	}
	if err := ts.decide(ctx, term, scan, seen); err != nil {
		t.Fatal(err)
	}
	if err := ts.decide(ctx, term, scan, seen); err != nil || rebuilds.Load() != 1 {
		t.Fatalf("a fresh view was rebuilt: %d rebuilds, %v", rebuilds.Load(), err)
	}
	ts.invalidate()
	if err := ts.decide(ctx, term, scan, seen); err != nil || rebuilds.Load() != 2 {
		t.Fatalf("an invalidated view was not rebuilt: %d rebuilds, %v", rebuilds.Load(), err)
	}
}
