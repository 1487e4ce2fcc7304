package faultnet

import (
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// DefaultHandshakeTimeout bounds how long an accepting Layer waits for a
// dialer's preamble before dropping the connection.
const DefaultHandshakeTimeout = 2 * time.Second

// MaxDelay is the largest latency SetDelay accepts.
const MaxDelay = 10 * time.Second

// Network is the fault-controllable loopback network of one test cluster:
// it creates a Layer per node, knows which address belongs to which node,
// tracks every connection made through its Layers and applies faults to
// them. All methods are safe for concurrent use; a fault takes effect on
// existing connections before the method returns.
type Network struct {
	handshakeTimeout time.Duration

	mu     sync.Mutex
	closed bool
	nodes  map[string]*node  // by node id
	addrs  map[string]string // canonical address -> node id
	pol    policy
	delays map[link]time.Duration
	conns  map[*Conn]struct{}
	stats  map[link]*linkStats
}

// node is what the Network remembers about a node id across restarts.
type node struct {
	addr  string // canonical address of the last Listen
	layer *Layer // nil while the node is down
}

// Option configures a Network.
type Option func(*Network)

// WithHandshakeTimeout sets how long an accepting Layer waits for a
// dialer's preamble (default DefaultHandshakeTimeout). Values <= 0 are
// ignored.
func WithHandshakeTimeout(d time.Duration) Option {
	return func(n *Network) {
		if d > 0 {
			n.handshakeTimeout = d
		}
	}
}

// NewNetwork returns an empty Network with no faults.
func NewNetwork(opts ...Option) *Network {
	n := &Network{
		handshakeTimeout: DefaultHandshakeTimeout,
		nodes:            map[string]*node{},
		addrs:            map[string]string{},
		pol:              newPolicy(),
		delays:           map[link]time.Duration{},
		conns:            map[*Conn]struct{}{},
		stats:            map[link]*linkStats{},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

// Listen starts node id listening on addr, which must be a loopback IP
// literal or "localhost" with a port ("127.0.0.1:0" picks a free port).
// The id must not have a live Layer; after Close or Kill the same id may
// Listen again, on the same address (the port is rebound at once) or a new
// one. Safe for concurrent use.
func (n *Network) Listen(id, addr string) (*Layer, error) {
	if !validID(id) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidID, id)
	}
	if err := checkLoopback(addr); err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, fmt.Errorf("faultnet: listen %s: %w", id, ErrClosed)
	}
	nd := n.nodes[id]
	if nd != nil && nd.layer != nil {
		return nil, fmt.Errorf("%w: %s on %s", ErrNodeExists, id, nd.addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("faultnet: listen %s on %s: %w", id, addr, err)
	}
	canon := ln.Addr().String()
	if owner, ok := n.addrs[canon]; ok && owner != id {
		if o := n.nodes[owner]; o.layer != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("%w: %s is %s's", ErrAddressTaken, canon, owner)
		}
		// The port was reused after its previous owner went down.
		n.nodes[owner].addr = ""
	}
	if nd == nil {
		nd = &node{}
		n.nodes[id] = nd
	}
	if nd.addr != "" && nd.addr != canon && n.addrs[nd.addr] == id {
		delete(n.addrs, nd.addr)
	}
	nd.addr = canon
	n.addrs[canon] = id
	l := &Layer{
		nw:       n,
		id:       id,
		ln:       ln,
		addr:     ln.Addr(),
		acceptCh: make(chan *Conn),
		done:     make(chan struct{}),
		pending:  map[net.Conn]struct{}{},
	}
	nd.layer = l
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

// checkLoopback accepts "host:port" where host is a loopback IP literal or
// "localhost"; no name resolution, no wildcard hosts.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: %q: %w", ErrNotLoopback, addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: %q", ErrNotLoopback, addr)
}

// Addr returns the canonical address node id last listened on, or "" if it
// never listened (or another node has since taken the port).
func (n *Network) Addr(id string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if nd := n.nodes[id]; nd != nil {
		return nd.addr
	}
	return ""
}

// Partition splits the nodes into groups that cannot reach each other:
// dials between groups fail with ErrUnreachable and existing connections
// between groups are cut (in-flight bytes are dropped). Nodes not listed in
// any group form one further group together, so Partition([]string{"a"})
// cuts "a" from everyone else, who still reach each other. Node ids not yet
// listening are allowed and apply when they do. A node listed in two groups
// is an error (ErrBadPartition) and changes nothing. Partition replaces the
// previous partition; isolations, blocks and delays stay. Partition with no
// groups removes the partition.
func (n *Network) Partition(groups ...[]string) error {
	m, err := partitionGroups(groups)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(groups) == 0 {
		m = nil
	}
	n.pol.groups = m
	n.enforceLocked()
	return nil
}

// Heal removes every partition, isolation and one-way block. Connections
// cut earlier stay closed; new dials succeed. Delays stay (SetDelay to 0
// removes one).
func (n *Network) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pol.clear()
}

// Isolate cuts node id from every other node, in addition to any partition
// in force, until Rejoin(id) or Heal.
func (n *Network) Isolate(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pol.isolated[id] = true
	n.enforceLocked()
}

// Rejoin undoes Isolate(id); partitions and blocks still apply.
func (n *Network) Rejoin(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.pol.isolated, id)
}

// Block forbids node from opening connections to node to, until
// Unblock(from, to) or Heal. It is one-way at the level of connection
// initiation, which for raft's NetworkTransport is the RPC direction:
// Dial from -> to fails with ErrUnreachable and existing connections that
// from dialed to to are cut, while connections to dials to from are
// untouched (requests and their responses both flow). Bytes inside one
// connection are never dropped selectively, because that would corrupt the
// stream rather than model a lossy link.
func (n *Network) Block(from, to string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pol.blocked[link{from, to}] = true
	n.enforceLocked()
}

// Unblock undoes Block(from, to).
func (n *Network) Unblock(from, to string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.pol.blocked, link{from, to})
}

// SetDelay makes every Write by node from on a connection to node to wait
// d before its bytes reach the socket, on existing and future connections;
// d = 0 removes the delay. The wait is per Write call and holds up the
// writer, so it also caps throughput; it honours the write deadline. d must
// be in [0, MaxDelay] (ErrBadDelay).
func (n *Network) SetDelay(from, to string, d time.Duration) error {
	if d < 0 || d > MaxDelay {
		return fmt.Errorf("%w: %v (want 0..%v)", ErrBadDelay, d, MaxDelay)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	k := link{from, to}
	if d == 0 {
		delete(n.delays, k)
	} else {
		n.delays[k] = d
	}
	for c := range n.conns {
		if c.local == from && c.remote == to {
			c.delay.Store(int64(d))
		}
	}
	return nil
}

// Kill crashes node id: its listener and every connection to or from it
// are closed at once, its Layer's Accept and Dial return errors wrapping
// ErrKilled, and Kill waits for the Layer's goroutines. The owner restarts
// the node with Listen(id, n.Addr(id)). Faults naming id stay in force.
// Returns ErrUnknownNode or ErrNodeDown if there is nothing to kill.
func (n *Network) Kill(id string) error {
	n.mu.Lock()
	nd := n.nodes[id]
	var l *Layer
	if nd != nil {
		l = nd.layer
	}
	n.mu.Unlock()
	switch {
	case nd == nil:
		return fmt.Errorf("%w: %q", ErrUnknownNode, id)
	case l == nil:
		return fmt.Errorf("%w: %q", ErrNodeDown, id)
	}
	n.shutLayer(l, ErrKilled)
	l.wg.Wait()
	return nil
}

// LinkStats counts what happened on the directed link from -> to.
type LinkStats struct {
	Dials   int   // connections from dialed to to successfully
	Refused int   // dials from -> to refused by a fault
	Cut     int   // connections from dialed to to that the Network cut
	Bytes   int64 // bytes from wrote to to (either connection direction)
	Open    int   // open connection ends at from whose other end is to
}

// Stats returns the counters of the link from -> to since the Network was
// created.
func (n *Network) Stats(from, to string) LinkStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	var s LinkStats
	if ls := n.stats[link{from, to}]; ls != nil {
		s.Dials = int(ls.dials.Load())
		s.Refused = int(ls.refused.Load())
		s.Cut = int(ls.cut.Load())
		s.Bytes = ls.bytes.Load()
	}
	for c := range n.conns {
		if c.local == from && c.remote == to {
			s.Open++
		}
	}
	return s
}

// Close shuts every Layer (as Layer.Close does) and waits for their
// goroutines. Listen fails afterwards. Idempotent.
func (n *Network) Close() error {
	n.mu.Lock()
	n.closed = true
	var layers []*Layer
	for _, nd := range n.nodes {
		if nd.layer != nil {
			layers = append(layers, nd.layer)
		}
	}
	n.mu.Unlock()
	for _, l := range layers {
		n.shutLayer(l, ErrClosed)
	}
	for _, l := range layers {
		l.wg.Wait()
	}
	return nil
}

// linkStatsLocked returns the counters of from -> to, creating them.
func (n *Network) linkStatsLocked(from, to string) *linkStats {
	k := link{from, to}
	s := n.stats[k]
	if s == nil {
		s = &linkStats{}
		n.stats[k] = s
	}
	return s
}

// lookupLocked maps a dialed address to its canonical form and node id,
// accepting any spelling of a loopback IP and "localhost" without name
// resolution.
func (n *Network) lookupLocked(address string) (string, string, bool) {
	if id, ok := n.addrs[address]; ok {
		return address, id, true
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return "", "", false
	}
	var hosts []string
	if host == "localhost" {
		hosts = []string{"127.0.0.1", "::1"}
	} else if ip := net.ParseIP(host); ip != nil {
		hosts = []string{ip.String()}
	}
	for _, h := range hosts {
		canon := net.JoinHostPort(h, port)
		if id, ok := n.addrs[canon]; ok {
			return canon, id, true
		}
	}
	return "", "", false
}

// admitDial checks, before any socket is opened, that l may dial address,
// and returns the canonical address and the remote node id.
func (n *Network) admitDial(l *Layer, address string) (string, string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l.down {
		return "", "", fmt.Errorf("faultnet: node %s: %w", l.id, l.reason)
	}
	canon, remote, ok := n.lookupLocked(address)
	if !ok {
		return "", "", fmt.Errorf("%w: %q", ErrUnknownAddress, address)
	}
	if nd := n.nodes[remote]; nd.layer == nil {
		return "", "", fmt.Errorf("%w: %s (%s): %w", ErrNodeDown, remote, canon, syscall.ECONNREFUSED)
	}
	if !n.pol.allows(l.id, remote) {
		n.linkStatsLocked(l.id, remote).refused.Add(1)
		return "", "", fmt.Errorf("%w: %s -> %s", ErrUnreachable, l.id, remote)
	}
	return canon, remote, nil
}

// register admits a connection end after its handshake. The check and the
// insertion are atomic with respect to faults, so every end is either
// rejected here or seen (and cut if needed) by the next fault change.
func (n *Network) register(c *Conn) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return fmt.Errorf("faultnet: %w", ErrClosed)
	}
	if c.layer.down {
		return fmt.Errorf("faultnet: node %s: %w", c.local, c.layer.reason)
	}
	rn := n.nodes[c.remote]
	if rn == nil {
		return fmt.Errorf("%w: peer %q", ErrUnknownNode, c.remote)
	}
	if rn.layer == nil {
		return fmt.Errorf("%w: %s", ErrNodeDown, c.remote)
	}
	if !n.pol.allows(c.initiator(), c.acceptor()) {
		if c.dialed {
			n.linkStatsLocked(c.local, c.remote).refused.Add(1)
		}
		return fmt.Errorf("%w: %s -> %s", ErrUnreachable, c.initiator(), c.acceptor())
	}
	c.stats = n.linkStatsLocked(c.local, c.remote)
	c.delay.Store(int64(n.delays[link{c.local, c.remote}]))
	n.conns[c] = struct{}{}
	return nil
}

// forget drops a connection the user closed.
func (n *Network) forget(c *Conn) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.conns, c)
}

// enforceLocked cuts every connection the current policy forbids.
func (n *Network) enforceLocked() {
	for c := range n.conns {
		if !n.pol.allows(c.initiator(), c.acceptor()) {
			n.cutLocked(c, ErrUnreachable)
		}
	}
}

func (n *Network) cutLocked(c *Conn, reason error) {
	delete(n.conns, c)
	if c.dialed {
		c.stats.cut.Add(1)
	}
	c.shut(reason)
}

// shutLayer takes l down with reason: no new connections, listener and
// in-handshake sockets closed, every connection to or from the node cut.
// The caller waits on l.wg afterwards (not under the lock).
func (n *Network) shutLayer(l *Layer, reason error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l.down {
		return
	}
	l.down = true
	l.reason = reason
	close(l.done)
	_ = l.ln.Close()
	for raw := range l.pending {
		_ = raw.Close()
	}
	clear(l.pending)
	for c := range n.conns {
		if c.layer == l || c.remote == l.id {
			n.cutLocked(c, reason)
		}
	}
	if nd := n.nodes[l.id]; nd != nil && nd.layer == l {
		nd.layer = nil
	}
}

// trackPending records an accepted socket whose preamble is being read, so
// shutLayer can close it; false if the Layer is already down.
func (n *Network) trackPending(l *Layer, raw net.Conn) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l.down {
		return false
	}
	l.pending[raw] = struct{}{}
	return true
}

func (n *Network) untrackPending(l *Layer, raw net.Conn) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(l.pending, raw)
}
