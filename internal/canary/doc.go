// Package canary holds the deliberately broken behaviours the chaos
// harness must catch (jepsen/doc.go, "Testing the tester"). They exist
// only in a binary built with the build tag jepsenbroken, switched on by
// the JEPSEN_BROKEN environment variable (a comma-separated list of the
// names below); a plain build compiles every check to a constant false,
// so the shipped binary has no such switch. The write path's behaviours
// (dledger and store below) reach it only as dledger.Faults (WritePath),
// which cmd/ledgermq sets in a broken build; the broker asks this package
// directly.
//
//	name                 where          what it breaks
//	-------------------  -------------  ---------------------------------------------
//	ack-before-commit    dledger        Propose answers as soon as the entry is queued
//	                                    for raft, before a majority commits it (the
//	                                    positions it returns are made up)
//	apply-twice          dledger        every 50th raft entry of messages is stored
//	                                    twice (on every replica alike)
//	reset-offsets        broker         a node answers consumer offset 0 for
//	                                    every queue no client has committed to
//	                                    this process since it started, ignoring
//	                                    the replicated offsets (so a restarted
//	                                    node has forgotten them)
//	skip-fsync           dledger        in a node that runs SYNC_FLUSH, the raft
//	                                    log fsyncs each segment file once (its
//	                                    header and first entries) and skips every
//	                                    later fsync, and StoreLogs returns as if
//	                                    the entries were on disk: sends are
//	                                    acknowledged from the page cache. No
//	                                    durable-length record is written for a
//	                                    skipped fsync (internal/syncreport), so the
//	                                    power-loss nemesis drops those entries.
//	serve-uncommitted    broker         every 3rd consumer-offset commit is answered
//	                                    to reads for 100 ms and never proposed to
//	                                    raft: a node serving entries it has taken
//	                                    but raft never commits (and then drops)
//	pop-ack-in-memory    broker         a POP ack is answered OK and never proposed
//	                                    to raft: the leader only remembers it (its
//	                                    own receives skip that receipt), so a new
//	                                    leader delivers the acknowledged message
//	                                    again once its invisible time ends
package canary

// WritePath is the broken behaviours of the write path as the node's
// dledger.Faults: cmd/ledgermq sets it in a jepsenbroken build only, so the
// write path itself holds no switch. SyncFlush: the node's store runs
// SYNC_FLUSH (skip-fsync acts only then).
type WritePath struct{ SyncFlush bool }

// AckBeforeCommit: ack-before-commit.
func (WritePath) AckBeforeCommit() bool { return AckBeforeCommit() }

// ApplyTwice: apply-twice, for the entry at raft index.
func (WritePath) ApplyTwice(index uint64) bool { return ApplyTwice(index) }

// SkipFsync: skip-fsync, in a store that runs SYNC_FLUSH.
func (w WritePath) SkipFsync() bool { return w.SyncFlush && SkipFsync() }

// Names of the broken behaviours.
const (
	AckBeforeCommitName  = "ack-before-commit"
	ResetOffsetsName     = "reset-offsets"
	ApplyTwiceName       = "apply-twice"
	SkipFsyncName        = "skip-fsync"
	ServeUncommittedName = "serve-uncommitted"
	PopAckInMemoryName   = "pop-ack-in-memory"
)

// EnvVar switches broken behaviours on in a jepsenbroken build.
const EnvVar = "JEPSEN_BROKEN"
