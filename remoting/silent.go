package remoting

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A client's connection to a peer that vanished without a FIN or a RST
// stays open until a read or a write fails, which on a silent network
// takes the kernel's retransmission timeout (about 15 minutes): every
// call sent meanwhile waits out its own deadline. So a client connection
// on which a call times out while nothing at all was read since the call
// was registered is closed (ErrConnSilent): its other calls fail at once
// and the next call dials afresh. A connection that reads anything while
// the call waits (another call's response, a request of the server's)
// is alive, and stays; a long poll answered before its deadline never
// times out, so never counts, however long the connection read nothing.
//
// The check costs the read path a clock read and an atomic store per
// read system call (readStamper), and a call an atomic load when it is
// registered (call.readMark): no lock, no allocation.

// monoEpoch is the origin of monoNow.
var monoEpoch = time.Now()

// monoNow reads the monotonic clock, in nanoseconds since monoEpoch: it
// does not move with the wall clock.
func monoNow() int64 { return int64(time.Since(monoEpoch)) }

// readStamper is the reader under a client connection's buffered reader:
// every read that returns bytes stamps the connection's lastRead, once
// per read system call however many frames it brings.
type readStamper struct{ c *Conn }

// Read reads from the connection and stamps lastRead if bytes came.
func (r readStamper) Read(p []byte) (int, error) {
	n, err := r.c.nc.Read(p)
	if n > 0 {
		r.c.stampRead()
	}
	return n, err
}

// stampRead sets lastRead to now, or just past its last value when the
// clock has not moved since (a coarse clock): every read changes it, so a
// call that finds it as it was when the call was registered knows that
// nothing was read meanwhile. Only the read goroutine stamps.
func (c *Conn) stampRead() {
	now := monoNow()
	if last := c.lastRead.Load(); now <= last {
		now = last + 1
	}
	c.lastRead.Store(now)
}

// timedOut is told of a call that left the pending set because its
// deadline passed, before the call is finished: on a client connection
// that has read nothing since the call was registered, it closes the
// connection (ErrConnSilent) so that the other pending calls fail now
// and the client dials afresh. Closing first means the caller finds the
// connection closed when its call returns.
func (c *Conn) timedOut(cl *call) {
	if !c.cfg.closeSilent || c.lastRead.Load() != cl.readMark || c.Closed() {
		return
	}
	silent := time.Duration(monoNow() - cl.readMark).Round(time.Millisecond)
	what := c.describeCode(cl.code)
	if !c.closeWith(fmt.Errorf("%w: nothing read for %s, through the whole wait of %s, which timed out",
		ErrConnSilent, silent, what)) {
		return
	}
	c.cfg.logger.Warn("closed a connection that read nothing while a call timed out",
		"peer", c.nc.RemoteAddr(), "conn", c.id, "call", RequestCodeName(cl.code), "silent", silent)
}

// contextTimedOut is timedOut for a call that its context ended: only a
// passed deadline counts, a cancellation does not.
func (c *Conn) contextTimedOut(ctx context.Context, cl *call) {
	if c.cfg.closeSilent && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		c.timedOut(cl)
	}
}
