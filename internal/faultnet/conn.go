package faultnet

import (
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Conn is one end of a TCP connection created through a Layer (dialed or
// accepted). The Network can cut it at any time; from then on Read and Write
// return a *cutError and no byte is delivered to the user, even one the
// kernel had already received.
//
// Concurrency: like net.Conn, one Read and one Write may run concurrently
// with each other and with Close, SetDeadline and the Network cutting it.
// The hot path (Read/Write) takes no lock; the fields the Network changes
// later (delay, cut) are atomics.
type Conn struct {
	raw    net.Conn
	nw     *Network
	layer  *Layer // the local node's Layer
	local  string // node id of this end
	remote string // node id of the other end
	dialed bool   // this end initiated the connection
	stats  *linkStats

	delay     atomic.Int64 // nanoseconds added before each Write
	wDeadline atomic.Int64 // write deadline in Unix nanoseconds, 0 = none
	cut       atomic.Pointer[cutError]

	done     chan struct{} // closed by shut
	shutOnce sync.Once
}

func newConn(nw *Network, l *Layer, raw net.Conn, remote string, dialed bool) *Conn {
	return &Conn{
		raw:    raw,
		nw:     nw,
		layer:  l,
		local:  l.id,
		remote: remote,
		dialed: dialed,
		done:   make(chan struct{}),
	}
}

// LocalNode returns the node id of this end.
func (c *Conn) LocalNode() string { return c.local }

// RemoteNode returns the node id of the other end (for an accepted
// connection, the id the dialer announced in its preamble).
func (c *Conn) RemoteNode() string { return c.remote }

// Dialed reports whether this end initiated the connection.
func (c *Conn) Dialed() bool { return c.dialed }

// initiator and acceptor name the ends by who dialed; the policy is checked
// for initiator -> acceptor.
func (c *Conn) initiator() string {
	if c.dialed {
		return c.local
	}
	return c.remote
}

func (c *Conn) acceptor() string {
	if c.dialed {
		return c.remote
	}
	return c.local
}

// cutErr returns the cut error, or nil while the connection is intact.
func (c *Conn) cutErr() error {
	if e := c.cut.Load(); e != nil {
		return e
	}
	return nil
}

// shut records reason (nil for a close by the user) and closes the socket.
// The first call wins. It never touches the Network, so the Network may call
// it with its lock held.
func (c *Conn) shut(reason error) {
	c.shutOnce.Do(func() {
		if reason != nil {
			c.cut.Store(&cutError{reason: reason})
		}
		close(c.done)
		_ = c.raw.Close()
	})
}

// Read implements net.Conn. Bytes read concurrently with a cut are dropped.
func (c *Conn) Read(p []byte) (int, error) {
	if err := c.cutErr(); err != nil {
		return 0, err
	}
	n, err := c.raw.Read(p)
	if cerr := c.cutErr(); cerr != nil {
		return 0, cerr
	}
	return n, err
}

// Write implements net.Conn. A delay set with SetDelay is waited out before
// the bytes go to the socket; the wait honours the write deadline and ends
// early if the connection is cut or closed.
func (c *Conn) Write(p []byte) (int, error) {
	if err := c.cutErr(); err != nil {
		return 0, err
	}
	if d := time.Duration(c.delay.Load()); d > 0 {
		if err := c.wait(d); err != nil {
			return 0, err
		}
	}
	n, err := c.raw.Write(p)
	if cerr := c.cutErr(); cerr != nil {
		return 0, cerr
	}
	c.stats.bytes.Add(int64(n))
	return n, err
}

// wait blocks for d, for less if the write deadline comes first (then it
// returns os.ErrDeadlineExceeded), or until the connection is shut.
func (c *Conn) wait(d time.Duration) error {
	timeout := false
	if dl := c.wDeadline.Load(); dl != 0 {
		left := time.Until(time.Unix(0, dl))
		if left <= 0 {
			return os.ErrDeadlineExceeded
		}
		if left < d {
			d, timeout = left, true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		if timeout {
			return os.ErrDeadlineExceeded
		}
		return nil
	case <-c.done:
		if err := c.cutErr(); err != nil {
			return err
		}
		return net.ErrClosed
	}
}

// Close implements net.Conn: it closes the socket and forgets the
// connection. The other end sees EOF, as with plain TCP.
func (c *Conn) Close() error {
	c.nw.forget(c)
	err := net.ErrClosed
	c.shutOnce.Do(func() {
		close(c.done)
		err = c.raw.Close()
	})
	return err
}

// LocalAddr implements net.Conn.
func (c *Conn) LocalAddr() net.Addr { return c.raw.LocalAddr() }

// RemoteAddr implements net.Conn.
func (c *Conn) RemoteAddr() net.Addr { return c.raw.RemoteAddr() }

// SetDeadline implements net.Conn.
func (c *Conn) SetDeadline(t time.Time) error {
	c.storeWriteDeadline(t)
	return c.raw.SetDeadline(t)
}

// SetReadDeadline implements net.Conn.
func (c *Conn) SetReadDeadline(t time.Time) error {
	return c.raw.SetReadDeadline(t)
}

// SetWriteDeadline implements net.Conn.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.storeWriteDeadline(t)
	return c.raw.SetWriteDeadline(t)
}

func (c *Conn) storeWriteDeadline(t time.Time) {
	if t.IsZero() {
		c.wDeadline.Store(0)
		return
	}
	c.wDeadline.Store(t.UnixNano())
}

// linkStats counts traffic on one directed link; shared by every connection
// end with the same local and remote node.
type linkStats struct {
	dials   atomic.Int64
	refused atomic.Int64
	cut     atomic.Int64
	bytes   atomic.Int64
}
