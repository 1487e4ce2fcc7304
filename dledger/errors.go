package dledger

import "errors"

// Sentinel errors. Compare with errors.Is.
var (
	// ErrNotLeader: this node is not the group's leader; LeaderAddr says
	// where to go.
	ErrNotLeader = errors.New("dledger: not the leader")
	// ErrNotReady: this node has just become leader and has not yet applied
	// everything before its term (Barrier), so it does not accept writes.
	ErrNotReady = errors.New("dledger: leader not ready")
	// ErrBusy: the proposal queue is full. Retry later.
	ErrBusy = errors.New("dledger: busy, proposal queue full")
	// ErrOutcomeUnknown: leadership was lost while the proposal was in
	// flight; it may or may not have been committed by the next leader.
	ErrOutcomeUnknown = errors.New("dledger: outcome unknown")
	// ErrClosed: the group is shut down.
	ErrClosed = errors.New("dledger: closed")
	// ErrFailed: the node's store failed to write; the node has stopped.
	ErrFailed = errors.New("dledger: node failed")
	// ErrBadEntry: a raft entry that cannot be decoded.
	ErrBadEntry = errors.New("dledger: bad entry")
	// ErrTooLarge: a proposal larger than one raft entry may be.
	ErrTooLarge = errors.New("dledger: proposal too large")
	// ErrTransfer: a leadership transfer did not complete.
	ErrTransfer = errors.New("dledger: leadership transfer failed")
	// ErrBadConfig: the configuration is invalid.
	ErrBadConfig = errors.New("dledger: bad config")
	// ErrBadSnapshot: a snapshot stream or snapshot directory that cannot
	// be decoded, fails its checksum or breaks a bound.
	ErrBadSnapshot = errors.New("dledger: bad snapshot")
	// ErrSnapshotNotFound: no snapshot with that id.
	ErrSnapshotNotFound = errors.New("dledger: snapshot not found")
)
