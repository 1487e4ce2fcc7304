// Package canary holds the deliberately broken behaviours the chaos
// harness must catch (jepsen/doc.go, "Testing the tester"). They exist
// only in a binary built with the build tag jepsenbroken, switched on by
// the JEPSEN_BROKEN environment variable (a comma-separated list of the
// names below); a plain build compiles every check to a constant false,
// so the shipped binary has no such switch.
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
