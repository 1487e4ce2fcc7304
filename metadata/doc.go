// Package metadata is the replicated broker metadata of one broker group:
// topic configs, subscription groups and consumer offsets. Every change is
// an Op carried in a raft entry and applied in log order by the group's
// FSM, so failover neither forgets topics nor rewinds consumers (DESIGN.md
// I5).
//
// # Determinism and idempotence
//
// Apply takes the raft index of the entry that carries the op. An op at or
// below the state's applied index is skipped, so re-delivered entries after
// a restart apply once. Apply reads nothing but the op and the state.
//
// # Persistence
//
// The state is saved as one JSON document (with its applied index) by Save,
// which the raft group calls when it takes a snapshot, before raft may drop
// the log entries the state was built from. Load reads it back at start;
// raft then re-applies the entries after the snapshot, and those at or below
// the saved index are skipped.
//
//	{"version":1,"appliedIndex":N,"topics":{...},"groups":{...},"offsets":{"group@topic":{"0":12,...}}}
//
// # Concurrency
//
// Apply, Save and Load are called by the FSM goroutine. Readers (Topic,
// Topics, Group, Offset, ...) may run concurrently from any goroutine.
package metadata
