// Package devcluster describes and drives a local cluster run by
// `ledgermq dev`: a name server and one broker group as separate OS
// processes on loopback.
//
// The dev command writes DIR/cluster.json once a leader is registered with
// the name server, and rewrites it when a node's process changes:
//
//	{"namesrv":"127.0.0.1:9876",
//	 "nodes":[{"id":"n0","pid":1234,"addr":"127.0.0.1:10911",
//	           "raft":"127.0.0.1:10912","dir":"DIR/n0"}, …]}
//
// addr is the client-facing address as the name server advertises it; pid
// is 0 for a node whose process is not running. File and Node are that
// file's types, shared by the writer (cmd/ledgermq) and every reader
// (integration tests, scripts, the chaos harness).
//
// Process starts the dev command from a built binary (Build) on a free
// loopback name server port, waits for cluster.json and stops everything
// when the test ends; Leader asks the name server which address is the
// group's brokerId 0. Nothing here imports package testing: Build and
// Start take the small TB interface that *testing.T satisfies, so the
// command itself can link this package.
//
// For fault tests (cmd/ledgermq's TestDevChaos, the chaos harness):
//
//   - Load (load.go) runs producers sending single messages to the leader
//     and classifies every attempt as acked, failed (certainly not stored)
//     or unknown, keeping each message's key, body and msgId for the
//     checks afterwards.
//   - Injector (faults.go) applies one FaultKind (kill -9 of the leader, a
//     follower or two nodes; SIGSTOP/SIGCONT of the leader or a follower),
//     its targets chosen by role with a seeded rand; PlanFaults draws a
//     sequence; Process.Restarted says when dev has restarted what a
//     fault killed.
//   - Status and Serving (status.go) ask the nodes for their raft role
//     and applied positions; Converged compares them.
//   - View, ReadTopic and CompareCommitLogs (verify.go) read messages back
//     and compare the replicas' CommitLog files.
//
// None of them waits for a condition: callers poll them with their own
// bounds (a test's waitFor), so a failure names what did not happen.
package devcluster
