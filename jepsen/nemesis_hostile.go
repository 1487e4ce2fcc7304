//go:build unix

package jepsen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/remoting"
)

// The hostile fault (NemHostile): against each target, hostileConns
// connections each announce a hostileAnnounced-byte request frame, send a
// valid header and hostileSent bytes of it, and stop writing. A
// connection the server closes is opened again at once, so the attack
// lasts the whole fault. The nodes' client ports and the name server's
// port are attacked directly (not through the proxies: the attack is on
// the servers, not on the links).
const (
	hostileConns     = 32
	hostileAnnounced = remoting.DefaultMaxFrameSize
	hostileSent      = 12 << 20
	// hostileRedial is the pause before a closed attacker dials again.
	hostileRedial = 100 * time.Millisecond
)

// hostileAttack is one hostile fault's attackers; stop ends them.
type hostileAttack struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	opened int // connections opened
	closed int // connections the servers closed
}

// hostile starts the attackers against targets (node ids and Namesrv) of
// a fault in group g; the returned heal stops them and records what the
// servers did.
func (n *nemesis) hostile(ctx context.Context, g string, targets []string) (func() error, error) {
	ctx, cancel := context.WithCancel(ctx)
	a := &hostileAttack{cancel: cancel}
	var errs []error
	for _, t := range targets {
		addr, code := n.c.NamesrvAddr, remoting.RegisterBroker
		if t != Namesrv {
			nd := n.c.node(t)
			if nd == nil {
				errs = append(errs, fmt.Errorf("hostile: unknown target %q", t))
				continue
			}
			addr, code = nd.Addr, remoting.SendMessage
		}
		prefix, err := remoting.StallFramePrefix(code, hostileAnnounced, hostileSent)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for range hostileConns {
			a.wg.Add(1)
			go a.attacker(ctx, addr, prefix)
		}
	}
	return func() error {
		a.stop()
		a.mu.Lock()
		opened, closed := a.opened, a.closed
		a.mu.Unlock()
		n.h.Add(stepEvent(NemHostile, g, targets, fmt.Sprintf("stalled connections opened %d, closed by the servers %d", opened, closed), nil))
		n.log("nemesis: hostile: %d stalled connections opened, %d closed by the servers", opened, closed)
		return nil
	}, errors.Join(errs...)
}

func (a *hostileAttack) stop() {
	a.cancel()
	a.wg.Wait()
}

// attacker keeps one stalled frame open against addr until ctx ends.
func (a *hostileAttack) attacker(ctx context.Context, addr string, prefix []byte) {
	defer a.wg.Done()
	var d net.Dialer
	for ctx.Err() == nil {
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			a.mu.Lock()
			a.opened++
			a.mu.Unlock()
			stop := context.AfterFunc(ctx, func() { _ = nc.Close() })
			// The write blocks while the server does not read; it ends
			// when the server closes the connection or the fault heals.
			if _, err := nc.Write(prefix); err == nil {
				_, _ = io.Copy(io.Discard, nc) // until the server closes it
			}
			if stop() { // the server ended it, not the heal
				a.mu.Lock()
				a.closed++
				a.mu.Unlock()
			}
			_ = nc.Close()
		}
		t := time.NewTimer(hostileRedial)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}
