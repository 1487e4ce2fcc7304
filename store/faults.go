package store

// Faults are the store's behaviours broken on purpose, for the chaos
// harness's broken builds (dledger.Faults, which embeds it); nil in every
// other build.
type Faults interface {
	// SkipFsync acknowledges raft entries appended to the CommitLog (one
	// log) from the page cache, without waiting for them to be durable.
	SkipFsync() bool
}
