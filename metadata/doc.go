// Package metadata is the replicated broker metadata of one broker group:
// topic configs, subscription groups, consumer offsets, group-wide
// settings and the group's access-control rules. Every change is
// an Op carried in a raft entry and applied in log order by the group's
// FSM, so failover neither forgets topics nor rewinds consumers (docs/invariants.md
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
//	{"version":1,"appliedIndex":N,"topics":{...},"groups":{...},"offsets":{"group@topic":{"0":12,...}},
//	 "settings":{"segmentSize":S,"maxMessageSize":M,"unitsPerQueueFile":U,"indexSlots":I,"indexEntries":E,
//	             "messageDelayLevel":"1s 5s ..."},"formatVersion":3,
//	 "acl":{"content":"<base64 plain_acl.yml>","hash":"<hex sha256>","index":N,"modified":T,"node":"n0"}}
//
// # Group-wide settings and format version
//
// Settings (settings.go) are the values that change what a replica writes
// at apply; OpSettings records them (a bootstrap op that finds settings
// changes nothing, so racing first leaders agree on the first).
// OpFormatVersion raises the group's format version (FormatVersion, 1
// until raised; an op at or below it changes nothing). OpRaftLog records
// the index from which the group's raft log is the CommitLog
// (OneLogSince, "oneLogSince": dledger converts each node's data when it
// has applied it). settings, formatVersion and oneLogSince are absent
// from files of groups that never recorded them.
//
// # Access-control rules (acl.go)
//
// OpACL carries a plain_acl.yml (at most MaxACLSize bytes) and its file's
// modification time; the state keeps the content, its SHA-256, the raft
// index that put it in force and that time. The state never parses the
// content (the broker does), so apply does not depend on the YAML decoder.
// An op whose content is the rules in force changes nothing; an IfNewer op
// (a node's file at its start) changes them only when none are in force or
// its time is after theirs; any other op replaces them. ACLIndex reads the
// index without a lock (the broker compares it on every request). A state
// file whose rules do not match their hash is refused (ErrBadFile).
//
// # POP consumption (pop.go)
//
// OpPop carries changes of the POP state: per group, topic and queue the
// position and the receipts of the messages in flight. Each change names
// the state the leader saw (the position a move starts from, the epoch a
// receipt replaces or removes) and is skipped where the state differs, so
// replicas agree whatever raced. The state is saved under "pop" (absent
// until a group pops) and goes with its topic or group.
//
// # Concurrency
//
// Apply, Save and Load are called by the FSM goroutine. Readers (Topic,
// Topics, Group, Offset, ...) may run concurrently from any goroutine.
package metadata
