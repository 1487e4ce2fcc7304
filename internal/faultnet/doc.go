// Package faultnet is a TCP-over-loopback network with faults a test can
// switch on and off: partitions, isolation of one node, one-way blocks,
// added latency and node crashes. It exists so that raft groups (and later
// the chaos harness) run over real sockets while the test decides who can
// talk to whom.
//
// # Model
//
// A Network is one test cluster. Each node calls Network.Listen(id, addr)
// and gets a *Layer: a real TCP listener on a loopback address plus every
// connection the node dials or accepts. A Layer implements
// raft.StreamLayer, so
//
//	layer, _ := nw.Listen("n1", "127.0.0.1:0")
//	trans := raft.NewNetworkTransport(layer, 3, time.Second, logOutput)
//
// runs raft over it; raft's server addresses are the Layers' Addr().String().
// The Network maps canonical addresses ("127.0.0.1:port", "[::1]:port") to
// node ids and keeps the mapping across a node's restarts, so faults are
// expressed with node ids and survive Kill + Listen.
//
// Only loopback addresses are used: Listen rejects anything but a loopback
// IP literal or "localhost" with ErrNotLoopback, and Dial only connects to
// addresses a node of the same Network listens on.
//
// # Connection preamble
//
// A TCP connection does not say which node opened it, so the dialer writes
// a preamble right after connecting and the accepting Layer reads it before
// Accept returns the connection:
//
//	+--------+--------+---------+-------+--------------------+
//	| offset | 0..1   | 2       | 3     | 4 .. 4+idLen-1     |
//	+--------+--------+---------+-------+--------------------+
//	| field  | magic  | version | idLen | id                 |
//	| value  | FA 17  | 01      | 1-255 | dialer's node id,  |
//	|        |        |         |       | UTF-8              |
//	+--------+--------+---------+-------+--------------------+
//
// Everything after the preamble belongs to the connection's user. The read
// is bounded by a deadline (WithHandshakeTimeout, default 2 s); a
// connection whose preamble is malformed, late, from a node that is unknown
// or down, or forbidden by a fault is closed and counted in
// Layer.BadHandshakes, and the Layer keeps accepting. Handshakes run on
// their own goroutines, so one silent client never holds up Accept.
//
// # Faults
//
// The policy decides, per connection, whether the node that initiated it may
// reach the node that accepted it:
//
//	allowed(a, b) = a == b
//	             || ( !isolated[a] && !isolated[b]
//	                  && group(a) == group(b)      // when partitioned
//	                  && !blocked[a -> b] )
//
// The methods that change it:
//
//   - Partition(groups...): nodes in different groups cannot talk; nodes
//     named in no group form one extra group together. Replaces the previous
//     partition.
//   - Isolate(id) / Rejoin(id): cut one node from every other node, on top
//     of any partition.
//   - Block(from, to) / Unblock: one-way at the level of connection
//     initiation, which is the RPC direction for raft's NetworkTransport:
//     from cannot dial to and its existing connections to to are cut, while
//     to can still dial from and get responses. No byte of a connection is
//     dropped selectively (that would corrupt the stream, not model a link).
//   - Heal(): removes partitions, isolations and blocks (not delays).
//   - SetDelay(from, to, d): each Write by from on a connection to to waits
//     d first (bounded by MaxDelay and by the write deadline).
//   - Kill(id): the node's listener and every connection to or from it close
//     at once, as if its process crashed; its Layer returns errors wrapping
//     ErrKilled. Listen(id, nw.Addr(id)) restarts it on the same port.
//
// A forbidden Dial fails immediately with ErrUnreachable, without opening a
// socket. When a fault is switched on, every existing connection it forbids
// is cut at both ends before the call returns: Read and Write then return an
// error wrapping ErrCut, the reason (ErrUnreachable, ErrKilled, ErrClosed)
// and net.ErrClosed, and bytes already in flight are dropped, not
// delivered. Switching a fault off never revives a cut connection; callers
// redial, as raft does.
//
// # Invariants
//
//   - Every connection end the Network tracks was admitted by register,
//     which checks the policy and both nodes' liveness under the same lock
//     that fault changes take. So after a fault method returns, no tracked
//     connection violates the policy, and none can be admitted later.
//   - A cut end is cut for good: its first cut reason wins and no Read
//     returns data after it.
//   - A node id has at most one live Layer; an address belongs to at most
//     one node.
//
// # Goroutines and locking
//
// A Layer owns its accept goroutine and one handshake goroutine per
// connection still in its preamble; Layer.Close, Network.Kill and
// Network.Close take the Layer down and wait for all of them. Handshake
// goroutines block only on the preamble read (deadline-bounded and closed
// by shutdown) and on handing the connection to Accept (abandoned on
// shutdown). Nothing else in the package starts goroutines.
//
// One mutex, Network.mu, guards the node table, the address map, the
// policy, delays, the connection set and each Layer's down state and
// pending sockets. It is never held while blocking on the network except
// for the brief listen syscall in Listen. Read and Write take no lock; the
// values the Network changes on a live connection (delay, cut) are atomics.
//
// Network and Layer methods are safe for concurrent use from any goroutine.
// A *Conn follows net.Conn rules: one reader and one writer may run
// concurrently with each other, with Close and with the Network cutting it.
package faultnet
