// Package rawconn reads and writes TCP connections with raw system calls
// on their non-blocking sockets (Wrap), waiting for them through the
// runtime's poller as the net package does.
//
// The net package enters every read and write as a possibly blocking
// system call, which the runtime accounts for: the first one after the
// process was idle wakes the runtime's monitor thread, which then polls
// every 20 µs while anything runs, and a write that takes a while (a large
// one: on loopback the kernel delivers it to the peer in the writer's own
// call) can have its processor handed to another thread. On a socket that
// never blocks (it answers EAGAIN instead, and the poller waits) none of
// that is needed, and each of those thread switches costs more than a
// message's own work on a small virtual machine. What a wrapped connection
// reads and writes, its deadlines and the errors it returns are the net
// package's. The remoting client and server and the raft transport's
// connections use it; TLS connections are left as they are.
//
// It imports no package of this module (internal's ground floor).
package rawconn
