// Package brokertest runs a name server and a broker group inside a test
// process: StartCluster starts the name server, an n-node raft group
// (dledger/dledgertest, raft over loopback TCP) and a broker.Broker per
// node, each serving the remoting protocol on its own loopback port, and
// waits for a leader. StartNode does the same for one node whose raft
// layer is in memory (dledgertest.MakeNode): the broker tests that need
// neither replication nor failover use it; those of replication,
// failover, forwarding and followers' registration use StartCluster.
// Tests kill and restart nodes with their brokers, and find the leader's
// client address.
//
// It is for tests only (it imports testing and, through dledgertest,
// internal/faultnet); production code never imports it, and
// cmd/ledgermq's deps test keeps it out of the binary. The broker's own
// tests that use it are external tests (package broker_test).
package brokertest
