// Package dledgertest runs broker groups of real raft nodes inside a test
// process: each node is a dledger.Group with its own temporary directory,
// talking TCP over loopback through internal/faultnet so a test can
// partition, kill, restart and wipe nodes, wait for the replicas to
// converge and compare them byte for byte (I2).
//
// MakeNode starts a one-node group instead, its raft layer on an
// in-memory network (MemNet: named listeners, each connection a
// net.Pipe) with TimingSingle, so it leads within milliseconds and needs
// no socket: for tests of what runs over a group (the broker's) that need
// neither replication nor failover. Its raft log, FSM and store are the
// real ones, on disk.
//
// It is for tests only (it imports testing and faultnet); production code
// never imports it, and cmd/ledgermq's deps test keeps it out of the
// binary. Tests of dledger itself are external tests (package
// dledger_test) so that they can use it without an import cycle.
//
// StoreConfig is the small-file store configuration every harness node
// starts with. Set LEDGERMQ_TEST_LOG=debug (or info) to see the nodes'
// logs.
package dledgertest
