package store

import "errors"

// Sentinel errors. Compare with errors.Is; most are wrapped with detail.
var (
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("store: closed")
	// ErrSeqApplied is returned by Put when the batch's sequence number is
	// not above LastSeq: the batch was applied before (a re-delivered raft
	// entry) and was skipped. Callers treat it as success without results.
	ErrSeqApplied = errors.New("store: sequence number already applied")
	// ErrBadMessage is returned by Put for a message the store cannot hold
	// (empty or over-long topic, body over MaxMessageSize, bad queue id).
	ErrBadMessage = errors.New("store: bad message")
	// ErrBatchTooLarge is returned by Put for a batch that does not fit in
	// one CommitLog segment.
	ErrBatchTooLarge = errors.New("store: batch too large")
	// ErrDiskFull is returned by Put when the disk holding the store is
	// fuller than the refuse ratio.
	ErrDiskFull = errors.New("store: disk full")
	// ErrBadCheckpoint is returned by DecodeCheckpoint for bytes that are
	// not a checkpoint of a known version.
	ErrBadCheckpoint = errors.New("store: bad checkpoint")
	// ErrBadMarker is returned by decodeMarker for bytes that are not a
	// batch marker.
	ErrBadMarker = errors.New("store: bad batch marker")
	// ErrCorrupt marks a record that failed its checksum; it is never served.
	ErrCorrupt = errors.New("store: corrupt record")
	// ErrNotFound is returned for a message id or offset that holds no
	// message.
	ErrNotFound = errors.New("store: message not found")
	// ErrWriteFailed marks a failed write to the CommitLog; the store stops
	// accepting writes (the raft layer steps the node down).
	ErrWriteFailed = errors.New("store: write failed")
	// ErrRestore is returned by RestoreFrom: bad staged segments, an I/O
	// failure while swapping them in, or restored data that does not end
	// at the expected sequence number.
	ErrRestore = errors.New("store: restore failed")
	// ErrLayout is returned by Open for a store created in the other
	// layout (Config.OneLog) than the one asked for.
	ErrLayout = errors.New("store: layout differs")
)
