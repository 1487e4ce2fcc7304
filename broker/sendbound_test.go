package broker

import (
	"context"
	"testing"
	"time"
)

// A connection's sends within a grain share one bound, of at least
// proposeTimeout and at most proposeTimeout plus the grain; a later send
// gets a new one; connections do not share; a closed connection's bound
// is cancelled.
func TestProposeBoundsShared(t *testing.T) {
	var p proposeBounds
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	now := time.Now()

	a := p.shared(parent, 1, now)
	dl, ok := a.Deadline()
	if !ok || dl.Before(now.Add(proposeTimeout)) || dl.After(now.Add(proposeTimeout+proposeBoundGrain)) {
		t.Fatalf("deadline %v for a send at %v", dl, now)
	}
	if b := p.shared(parent, 1, now.Add(proposeBoundGrain/2)); b != a {
		t.Fatal("a send within the grain got a bound of its own")
	}
	later := now.Add(proposeBoundGrain)
	c := p.shared(parent, 1, later)
	if c == a {
		t.Fatal("a send after the grain shares the old bound")
	}
	if dl, _ := c.Deadline(); dl.Before(later.Add(proposeTimeout)) {
		t.Fatalf("deadline %v is less than proposeTimeout after the send at %v", dl, later)
	}
	if other := p.shared(parent, 2, later); other == c {
		t.Fatal("two connections share a bound")
	}

	p.forgetID(1)
	if c.Err() == nil {
		t.Fatal("the bound of a closed connection is not cancelled")
	}
	if d := p.shared(parent, 1, later); d == c {
		t.Fatal("a forgotten connection's bound is reused")
	}
	cancelParent()
	if a.Err() == nil {
		t.Fatal("a bound outlives its connection's context")
	}
	// A send of a closed connection leaves nothing behind.
	p.forgetID(1)
	p.forgetID(2)
	if got := p.shared(parent, 3, later); got != parent {
		t.Fatal("a closed connection's send got a bound")
	}
	p.conns.Range(func(k, _ any) bool {
		t.Fatalf("connection %v left an entry", k)
		return false
	})
}

// A send whose context is not its connection's (or has no connection)
// gets a bound of its own, as context.WithTimeout gives.
func TestProposeBoundsOwn(t *testing.T) {
	var p proposeBounds
	ctx, cancel := p.get(context.Background(), nil, time.Now())
	dl, ok := ctx.Deadline()
	if !ok || time.Until(dl) > proposeTimeout {
		t.Fatalf("deadline %v", dl)
	}
	cancel()
	if ctx.Err() == nil {
		t.Fatal("cancel did not end the send's own bound")
	}
}
