package dledger

import (
	"github.com/ledgermq/ledgermq/store"
)

// The message store as the replication layer's parts see it: one small
// interface per concern, each defined here, where it is used. The group
// does not open the store itself: Config.Stores (a StoreOpener) does, with
// the configuration the group decided (directory, layout, geometry), and
// the group holds it as a Storage, hands each part only the interface it
// needs and closes it. No part names a CommitLog file or the store's
// implementation; *store.Store implements them all (dledger/messagestore
// adapts it); entryStore (onelog.go) is the raft log's.
//
//	interface        used by                               for
//	applyTarget      fsm (fsm.go, fsm_onelog.go)            applying committed entries
//	settingsTarget   fsm (settings.go)                      adopting the group's geometry and limits
//	snapshotData     fsm, snapshotStore (snapstore*.go)     capturing, pinning, staging, restoring
//	checksumSource   fsm, Group (verifier.go)               the replicas' checkpoint checksums
//	recordChecks     proposer (propose.go)                  the leader's one check of a record
//	duplicateWindow  proposer (duplicates.go)               a send that repeats a stored message
//	segmentFiles     snapshot staging (snapstore*.go)       naming the store's segment files

// applyTarget is what the FSM applies committed entries to. LastSeq is the
// raft index of the last entry the store applied (replays at or below it
// are skipped: ErrSeqApplied).
type applyTarget interface {
	// PutChecked stores an entry's encoded records, already checked.
	PutChecked(seq uint64, recs [][]byte) ([]store.PutResult, error)
	// RecordSeq records entry seq as applied without storing anything (an
	// entry that carries no message, e.g. a topic deletion).
	RecordSeq(seq uint64) error
	// DispatchEntry applies an entry already in the CommitLog (one log).
	DispatchEntry(seq uint64) ([]store.PutResult, error)
	DeleteTopic(topic string) error
	LastSeq() uint64
	Flush() error
	// OneLog tells whether the raft log is the CommitLog.
	OneLog() bool
}

// settingsTarget is what adopting the group's settings changes.
type settingsTarget interface {
	Geometry() store.Geometry
	Reconfigure(g store.Geometry) error
	Empty() bool
	MaxMessageSize() int
	SetMaxMessageSize(n int) error
}

// segmentFiles names the store's segment files: snapshots link, stream and
// stage them by these names without knowing the CommitLog's naming.
type segmentFiles interface {
	SegmentFileName(start int64) string
	ParseSegmentFileName(name string) (start int64, ok bool)
}

// snapshotData is the store's data as a snapshot holds it: a contiguous
// run of fixed-size segment files up to AppliedEnd, which a snapshot pins
// (hard links), streams, and which a node behind installs (RestoreFrom).
type snapshotData interface {
	segmentFiles
	SegmentSize() int64
	SegmentPaths() []store.SegmentInfo
	MinPhysicalOffset() int64
	AppliedEnd() int64
	LastSeq() uint64
	OneLog() bool
	Flush() error
	// RestoreFrom replaces the store's data with the segments staged in
	// dir, which end with entry seq.
	RestoreFrom(dir string, seq uint64) error
	// MarkApplied and EntryEnd let a one-log snapshot end at its raft
	// index: the entries the FSM never sees (no-ops, barriers) up to seq
	// are recorded as applied, and the snapshot covers the CommitLog up to
	// where entry seq ends.
	MarkApplied(seq uint64) error
	EntryEnd(seq uint64) (int64, bool)
}

// checksumSource gives the checksums of CommitLog ranges that checkpoint
// entries compare across replicas.
type checksumSource interface {
	MinPhysicalOffset() int64
	MaxPhysicalOffset() int64
	AppliedEnd() int64
	CommitLogChecksum(from, to int64, readFiles bool) (uint32, error)
}

// recordChecks is what the leader checks a record against before it
// proposes it, and whether the store can take writes at all.
type recordChecks interface {
	CheckStamped(rec []byte) error
	PrepareStamped(p *store.PreparedRecords, rec []byte) error
	CheckWritable() error
	MaxMessageSize() int
	SegmentSize() int64
}

// fsmStore is the FSM's view: it applies entries, adopts settings, takes and
// installs snapshots and verifies checkpoints.
type fsmStore interface {
	applyTarget
	settingsTarget
	snapshotData
	checksumSource
}

// Storage is the message store as the group holds it: every part's
// interface, and closing.
type Storage interface {
	fsmStore
	recordChecks
	duplicateWindow
	entryStore
	// Close flushes and closes the store (a clean stop); CloseUnclean
	// closes it as a crash leaves it (no checkpoint, no flush).
	Close() error
	CloseUnclean() error
}

// StoreOpener opens the message store for the group and reads and changes
// its layout on disk (chooseLayout, convertToOneLog): the only way the
// group reaches the store's implementation.
type StoreOpener interface {
	// OpenStore opens (recovering) the store cfg describes.
	OpenStore(cfg store.Config) (Storage, error)
	// HasOneLog reports whether the store in dir is marked one-log,
	// HasCommitLog whether it holds CommitLog segments.
	HasOneLog(dir string) (bool, error)
	HasCommitLog(dir string) (bool, error)
	// ConvertToOneLog marks the two-log store in dir one-log (convert.go).
	ConvertToOneLog(dir string) error
}
