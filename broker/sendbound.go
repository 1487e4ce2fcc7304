package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ledgermq/ledgermq/remoting"
)

// proposeBoundGrain is how long one connection's sends share a bound:
// each send is bounded by at least proposeTimeout and at most
// proposeTimeout plus this.
const proposeBoundGrain = time.Second

// proposeBounds bounds the proposals of sends by proposeTimeout without a
// timer per send. context.WithTimeout per send makes a context, registers
// it with the connection's, and starts and stops a timer, all for a bound
// that almost never fires (the group answers a proposal in milliseconds,
// or fails it when leadership is lost). Instead the sends of one
// connection that arrive within proposeBoundGrain share one context,
// derived from the connection's (so a closed connection still ends their
// wait) with a deadline proposeTimeout after the last of them may arrive.
// A connection pays one timer per grain while it sends.
type proposeBounds struct {
	conns sync.Map // connection ID -> *atomic.Pointer[proposeBound]
}

// proposeBound is one grain's shared context.
type proposeBound struct {
	ctx    context.Context
	cancel context.CancelFunc
	until  time.Time // sends arriving before it may use ctx
}

// get returns the context a send that arrived at now on conn, whose
// handler has ctx, proposes with, and the function to call once the
// proposal is over. The shared bound needs ctx to be the connection's own
// context (the server hands every handler that one); any other ctx gets a
// context.WithTimeout of its own, as it did before.
func (p *proposeBounds) get(ctx context.Context, conn *remoting.Conn, now time.Time) (context.Context, context.CancelFunc) {
	if conn == nil || ctx != conn.Context() {
		return context.WithTimeout(ctx, proposeTimeout)
	}
	return p.shared(ctx, conn.ID(), now), noCancel
}

// shared is the bound of the connection id, whose context is ctx, for a
// send that arrived at now.
func (p *proposeBounds) shared(ctx context.Context, id uint64, now time.Time) context.Context {
	if ctx.Err() != nil {
		// A closed connection's send ends its wait at once either way.
		return ctx
	}
	v, ok := p.conns.Load(id)
	if !ok {
		v, _ = p.conns.LoadOrStore(id, new(atomic.Pointer[proposeBound]))
		if ctx.Err() != nil {
			// The connection closed meanwhile, and forget may have run
			// before the store: no entry is left behind for it.
			p.conns.CompareAndDelete(id, v)
			return ctx
		}
	}
	slot := v.(*atomic.Pointer[proposeBound])
	if cur := slot.Load(); cur != nil && now.Before(cur.until) {
		return cur.ctx
	}
	until := now.Add(proposeBoundGrain)
	bctx, cancel := context.WithDeadline(ctx, until.Add(proposeTimeout))
	// Concurrent sends may each make a bound; every one is a valid bound
	// for the send that made it and expires on its own at its deadline,
	// and the last stored serves the sends after.
	slot.Store(&proposeBound{ctx: bctx, cancel: cancel, until: until})
	return bctx
}

// forget drops a closed connection's bound. The connection's context is
// cancelled already, and with it every bound derived from it.
func (p *proposeBounds) forget(conn *remoting.Conn) { p.forgetID(conn.ID()) }

func (p *proposeBounds) forgetID(id uint64) {
	if v, ok := p.conns.LoadAndDelete(id); ok {
		if cur := v.(*atomic.Pointer[proposeBound]).Load(); cur != nil {
			cur.cancel()
		}
	}
}

// noCancel is the cancel function of a shared bound: the bound outlives
// the send, and its own deadline releases its timer.
func noCancel() {}
