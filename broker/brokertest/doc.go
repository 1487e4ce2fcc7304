// Package brokertest runs a name server and a broker group inside a test
// process: StartCluster starts the name server, an n-node raft group
// (dledger/dledgertest) and a broker.Broker per node, each serving the
// remoting protocol on its own loopback port, and waits for a leader.
// Tests kill and restart nodes with their brokers, and find the leader's
// client address.
//
// It is for tests only (it imports testing and, through dledgertest,
// internal/faultnet); production code never imports it, and
// cmd/ledgermq's deps test keeps it out of the binary. The broker's own
// tests that use it are external tests (package broker_test).
package brokertest
