package dledger

import "github.com/ledgermq/ledgermq/store"

// Faults are behaviours of the write path broken on purpose, so that the
// chaos harness can show it catches each one (`ledgermq jepsen`, the
// broken builds). Only a binary built with the jepsenbroken tag sets
// Config.Faults (cmd/ledgermq, internal/canary); nil, in every other
// build, is none. Each hook is asked where the behaviour it breaks
// happens, so production code holds no global fault switch.
type Faults interface {
	// AckBeforeCommit answers a proposal as soon as it is queued, before
	// raft commits it.
	AckBeforeCommit() bool
	// ApplyTwice stores the messages of the entry at raft index twice.
	ApplyTwice(index uint64) bool
	// SkipFsync acknowledges raft log appends from the page cache (the
	// message store hears it through store.Config.Faults).
	store.Faults
}

// ackBeforeCommit, applyTwice and skipFsync ask f, which may be nil.
func ackBeforeCommit(f Faults) bool { return f != nil && f.AckBeforeCommit() }

func applyTwice(f Faults, index uint64) bool { return f != nil && f.ApplyTwice(index) }

func skipFsync(f store.Faults) bool { return f != nil && f.SkipFsync() }
