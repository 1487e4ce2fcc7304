package dledger

import (
	"errors"
	"fmt"
)

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
	// ErrRepeatNotStored answers a send that repeated one the leader had
	// in flight when that one was not stored after all (refused, or lost
	// with the leadership): the producer sends it again. It is ErrBusy
	// (SYSTEM_BUSY, which clients retry).
	ErrRepeatNotStored = busyError{"dledger: the send this message repeats was not stored; send it again"}
	// ErrOutcomeUnknown: leadership was lost while the proposal was in
	// flight; it may or may not have been committed by the next leader.
	ErrOutcomeUnknown = errors.New("dledger: outcome unknown")
	// ErrClosed: the group is shut down.
	ErrClosed = errors.New("dledger: closed")
	// ErrFailed: the node has stopped (its store failed to write, or
	// raft reached a state only a restart clears); see Group.Failed.
	ErrFailed = errors.New("dledger: node failed")
	// ErrRestartNeeded: raft's in-memory state no longer matches its log
	// (see fsm.Restore); the node stops so that a restart reloads it.
	ErrRestartNeeded = errors.New("dledger: node needs a restart")
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

// ErrCannotStart: the node's own files (raft log or message store) cannot
// be opened or read, so it cannot start. Restarting will not help; the way
// out is to rebuild the node from the rest of the group (see StartError).
var ErrCannotStart = errors.New("dledger: node cannot start from its files")

// StartError says which of a node's files stop it from starting, why, and
// what the operator can do. It matches ErrCannotStart and the cause with
// errors.Is.
type StartError struct {
	NodeID, DataDir string
	// Part is what failed: "raft log" or "message store".
	Part string
	// Path is the file or directory that failed.
	Path string
	Err  error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("node %s cannot start: its %s in %s cannot be read: %v. "+
		"Restarting will not help. The rest of the group keeps serving without this node; to rebuild it "+
		"from the group, run on this host `ledgermq admin raft replace-node %s -n NAMESRV --data-dir %s` (it "+
		"removes the node from the group, moves its data aside and lets it rejoin empty and catch up). Do not "+
		"delete the files by hand while the node is still a voting member.", e.NodeID, e.Part, e.Path, e.Err, e.NodeID, e.DataDir)
}

// Unwrap lets errors.Is see ErrCannotStart and the cause.
func (e *StartError) Unwrap() []error { return []error{ErrCannotStart, e.Err} }

// ErrSettings: this node's configuration differs from the group's on a
// setting it cannot adopt (a store that already holds data written with
// another geometry); the error names the key and both values.
var ErrSettings = errors.New("dledger: settings differ from the group's")

// ApplyError is why a node stopped applying: the raft index of the entry
// it could not decode or apply, and the cause. A node never skips such an
// entry (its replica would then differ from the others); it stops, and
// Group.Err matches ErrFailed, ErrCannotApply and the cause with errors.Is.
type ApplyError struct {
	Index uint64
	Err   error
}

// ErrCannotApply matches an ApplyError.
var ErrCannotApply = errors.New("dledger: entry cannot be applied")

func (e *ApplyError) Error() string {
	return fmt.Sprintf("the entry at raft index %d cannot be applied on this node, which stops rather than skip it: %v", e.Index, e.Err)
}

// Unwrap lets errors.Is see ErrCannotApply and the cause.
func (e *ApplyError) Unwrap() []error { return []error{ErrCannotApply, e.Err} }

// ErrDiverged: a replica checkpoint found this node's CommitLog bytes
// different from the leader's; the node stops serving.
var ErrDiverged = errors.New("dledger: replica diverged from the leader")

// ErrFormatVersion: the group's format version does not allow the entry
// yet (not every member runs a binary that applies it).
var ErrFormatVersion = errors.New("dledger: group format version too low")

// busyError is an error that is ErrBusy (errors.Is) with its own text.
type busyError struct{ text string }

func (e busyError) Error() string        { return e.text }
func (e busyError) Is(target error) bool { return target == ErrBusy }
