package jepsen

import (
	"fmt"
	"net"
	"net/netip"
)

// ProxyTo listens on a free 127.0.0.1 port and forwards every connection
// to target (a loopback address) as the link source(conn) → to: one proxy
// per destination, shared by every sender, each connection under the
// policy of the link from whoever opened it. source returns "" for a
// connection it cannot name, which is refused (raft dials again), so no
// traffic passes outside the policies.
//
// The raft peers use it: a membership change hands every node the
// leader's address for each server, so every node must dial a server at
// the same address, and the per-pair proxies of Proxy cannot be told
// apart by address any more.
func (n *Net) ProxyTo(to, target string, source func(net.Conn) string) (string, error) {
	ap, err := netip.ParseAddrPort(target)
	if err != nil || !ap.Addr().IsLoopback() {
		return "", fmt.Errorf("%w: %q", errNotLoopback, target)
	}
	return n.listen(&proxy{n: n, from: "*", to: to, target: target, source: source})
}

// Unidentified is the number of connections ProxyTo proxies refused
// because their source could not be named.
func (n *Net) Unidentified() int64 { return n.unidentified.Load() }

// SourceByProcess names an accepted connection's source by the process
// that holds its other end: owners lists the candidate processes (pid →
// endpoint name). Every process of the cluster dials from 127.0.0.1, so
// the address alone cannot tell them apart; the kernel's socket table
// can (socketOwner, Linux only: elsewhere every connection is refused).
func SourceByProcess(owners func() map[int]string) func(net.Conn) string {
	return func(c net.Conn) string {
		pid := socketOwner(c, owners)
		if pid == 0 {
			return ""
		}
		return owners()[pid]
	}
}
