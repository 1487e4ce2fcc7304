package faultnet

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Layer is one node's presence on a Network: a loopback TCP listener plus
// the connections the node dialed or accepted. It implements
// raft.StreamLayer, so raft.NewNetworkTransport can run over it.
//
// A Layer owns one accept goroutine and one short-lived handshake goroutine
// per incoming connection whose preamble is still being read; Close (or
// Network.Kill / Network.Close) stops them and waits for them.
//
// All methods are safe for concurrent use.
type Layer struct {
	nw   *Network
	id   string
	ln   net.Listener
	addr net.Addr

	acceptCh chan *Conn
	done     chan struct{} // closed when the Layer goes down
	wg       sync.WaitGroup

	badHandshakes atomic.Int64

	// Guarded by nw.mu.
	down    bool
	reason  error                 // ErrClosed or ErrKilled once down
	pending map[net.Conn]struct{} // accepted sockets still in handshake
}

var _ raft.StreamLayer = (*Layer)(nil)

// ID returns the node id the Layer listens for.
func (l *Layer) ID() string { return l.id }

// Addr implements net.Listener. The address is the canonical "ip:port" the
// Network maps to this node; give it to raft (transport.LocalAddr uses it).
func (l *Layer) Addr() net.Addr { return l.addr }

// BadHandshakes returns how many incoming connections were dropped because
// their preamble was malformed or too slow, or named a node that is
// unknown, down, or not allowed to reach this one.
func (l *Layer) BadHandshakes() int { return int(l.badHandshakes.Load()) }

// Accept implements net.Listener. It returns the next incoming connection
// whose preamble has been read and that the current faults allow; the
// returned net.Conn is a *Conn. After Close or Kill it returns an error
// wrapping ErrClosed or ErrKilled. Safe to call from several goroutines.
func (l *Layer) Accept() (net.Conn, error) {
	select {
	case <-l.done:
		return nil, l.downErr()
	default:
	}
	select {
	case c := <-l.acceptCh:
		return c, nil
	case <-l.done:
		return nil, l.downErr()
	}
}

// Dial implements raft.StreamLayer. It connects to the node listening on
// address and announces this node in the preamble. It fails at once, without
// touching the network, with an error wrapping ErrUnreachable when a fault
// forbids this node from reaching that one, ErrNodeDown when that node is
// closed or killed, ErrUnknownAddress when no node ever listened there, or
// ErrClosed/ErrKilled when this Layer is down. timeout bounds the TCP
// connect and the preamble write (0: no bound). The returned net.Conn is a
// *Conn. Safe for concurrent use.
func (l *Layer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	addr, remote, err := l.nw.admitDial(l, string(address))
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: timeout}
	raw, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("faultnet: dial %s (%s): %w", remote, addr, err)
	}
	pre, err := appendPreamble(nil, l.id)
	if err == nil {
		if timeout > 0 {
			err = raw.SetWriteDeadline(time.Now().Add(timeout))
		}
		if err == nil {
			_, err = raw.Write(pre)
		}
		if err == nil && timeout > 0 {
			err = raw.SetWriteDeadline(time.Time{})
		}
	}
	if err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("faultnet: dial %s (%s): preamble: %w", remote, addr, err)
	}
	c := newConn(l.nw, l, raw, remote, true)
	if err := l.nw.register(c); err != nil {
		_ = raw.Close()
		return nil, err
	}
	c.stats.dials.Add(1)
	return c, nil
}

// Close implements net.Listener. It closes the listener and every
// connection to or from this node (both ends, as if the process exited),
// then waits for the Layer's goroutines. The node may Listen again
// afterwards. Idempotent; safe for concurrent use.
func (l *Layer) Close() error {
	l.nw.shutLayer(l, ErrClosed)
	l.wg.Wait()
	return nil
}

func (l *Layer) downErr() error {
	l.nw.mu.Lock()
	defer l.nw.mu.Unlock()
	return fmt.Errorf("faultnet: node %s: %w", l.id, l.reason)
}

// acceptLoop accepts sockets and hands each to a handshake goroutine. It
// ends when the listener is closed by shutLayer.
func (l *Layer) acceptLoop() {
	defer l.wg.Done()
	var backoff time.Duration
	for {
		raw, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient (e.g. out of file descriptors): back off briefly
			// unless the Layer is going down.
			backoff = min(max(2*backoff, time.Millisecond), 100*time.Millisecond)
			t := time.NewTimer(backoff)
			select {
			case <-l.done:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		backoff = 0
		if !l.nw.trackPending(l, raw) {
			_ = raw.Close()
			return
		}
		l.wg.Add(1)
		go l.handshake(raw)
	}
}

// handshake reads the preamble of one accepted socket within the Network's
// handshake timeout, registers the connection and queues it for Accept.
func (l *Layer) handshake(raw net.Conn) {
	defer l.wg.Done()
	remote, err := l.readRemote(raw)
	l.nw.untrackPending(l, raw)
	if err != nil {
		l.badHandshakes.Add(1)
		_ = raw.Close()
		return
	}
	c := newConn(l.nw, l, raw, remote, false)
	if err := l.nw.register(c); err != nil {
		if !errors.Is(err, ErrClosed) && !errors.Is(err, ErrKilled) {
			l.badHandshakes.Add(1)
		}
		_ = raw.Close()
		return
	}
	select {
	case l.acceptCh <- c:
	case <-l.done:
		_ = c.Close()
	}
}

func (l *Layer) readRemote(raw net.Conn) (string, error) {
	if err := raw.SetReadDeadline(time.Now().Add(l.nw.handshakeTimeout)); err != nil {
		return "", err
	}
	id, err := readPreamble(raw)
	if err != nil {
		return "", err
	}
	if err := raw.SetReadDeadline(time.Time{}); err != nil {
		return "", err
	}
	return id, nil
}
