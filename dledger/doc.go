// Package dledger runs one broker group as one Raft group
// (hashicorp/raft, log and stable store hashicorp/raft-wal): the group
// elects its leader and fails over on its own, and every replica's message
// store holds the same bytes.
//
// # Write path
//
//	broker ──Propose──▶ proposer ──raft.Apply──▶ raft log (fsync) ──▶ quorum commit
//	                                                                   │
//	        ◀── PutResults ◀── completer ◀── FSM.ApplyBatch ◀──────────┘
//	                                          store.Put(raft index, msgs)
//
// Propose runs on the leader. It stamps what varies between machines into
// each message before it is agreed on (store time from the leader's clock,
// store host = the group's identity, UNIQ_KEY if missing) and encodes it as
// a RocketMQ record. The proposer coalesces concurrent proposals into one
// raft entry (bounded by MaxBatchBytes and MaxBatchMessages) while at most
// MaxInFlight entries wait for commit: group commit, one fsync per entry
// on each node. A full queue answers ErrBusy; nothing queues without bound.
//
// # Entry format
//
//	offset size field
//	0      1    version (1)
//	1      1    type: 1 messages, 2 metadata op
//	2           messages: count uint32, then count × (length uint32, record)
//	            metadata: a metadata.Op as JSON
//
// # FSM (invariants I2, I3)
//
// The FSM applies entries in log order on raft's FSM goroutine. Messages go
// to store.Put with the entry's raft index as the batch's sequence number:
// physical and queue offsets come from apply order, nothing local enters
// the store, and the store skips an index at or below the last one it holds
// durably, so entries re-delivered after a crash (raft replays the log after
// the last snapshot: NoSnapshotRestoreOnStart) are applied exactly once.
// Metadata ops go to metadata.State, which skips indexes the same way. A
// store that cannot write stops the node (it is not allowed to skip an
// entry); a leader whose store refuses writes hands leadership away.
//
// # Snapshots
//
// A snapshot is a small manifest (store sequence, CommitLog bounds,
// metadata) taken after the CommitLog, queues and index are forced to disk,
// so snapshots are cheap and the raft log stays short.
//
// # Leadership (I6)
//
// A new leader runs Barrier before it takes writes; only then is it
// announced (RoleEvent with role "leader" and its term), so the broker never
// registers as brokerId 0 before it can serve. TransferLeadership hands
// over to a named or to the most caught-up node; PreferredLeader moves
// leadership back once that node has caught up. Close transfers leadership
// before it stops a leader.
//
// # Membership
//
// AddNode joins a node as a non-voter and promotes it once it has caught up;
// RemoveNode removes one. Status reports a node's raft and store positions;
// a node's lag is the leader's commit index minus its applied index.
//
// # Goroutines
//
// A Group owns: the proposer's batcher and completer, the role watcher, the
// preferred-leader loop (if configured) and short-lived step-down and
// failure goroutines; Close and Kill stop and wait for all of them, and for
// raft's own.
//
// # Testing
//
// MakeCluster starts a group of real raft nodes in the process over
// loopback TCP through internal/faultnet (partitions, kills), each in its
// own temporary directory, with Kill/Restart/Wipe and replica comparison.
// The broker's tests and the chaos harness reuse it.
package dledger
