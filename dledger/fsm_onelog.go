package dledger

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/store"
)

// applyOneLog applies a committed entry when the CommitLog is the raft log
// (Config.OneLog): the entry's records were written when raft appended it,
// so applying it dispatches them (store.DispatchEntry), and every entry the
// FSM sees is dispatched, records or not, so that the store's LastSeq is
// the FSM's applied index (a snapshot's StoreSeq and CommitLogMax name the
// same entry).
func (f *fsm) applyOneLog(l *raft.Log) applyResult {
	if f.failed.Load() {
		return f.notApplied(l.Index)
	}
	if l.Type != raft.LogCommand {
		return f.dispatchOnly(l.Index)
	}
	if len(l.Data) < entryHeaderSize {
		return f.stop(l.Index, fmt.Errorf("%w: %d bytes", ErrBadEntry, len(l.Data)))
	}
	if uint32(l.Data[0]) > f.maxVersion() {
		return f.stop(l.Index, fmt.Errorf("%w: an entry of format version %d, this node applies up to %d; run a newer binary",
			ErrBadEntry, l.Data[0], f.maxVersion()))
	}
	if l.Data[1] == entryTypeMessages {
		if l.Data[0] != entryVersion {
			return f.stop(l.Index, fmt.Errorf("%w: version %d of type %d", ErrBadEntry, l.Data[0], l.Data[1]))
		}
		return f.dispatchMessages(l.Index)
	}
	// The records (if any) were split off and checked when the entry was
	// appended; here only the rest is decoded.
	e, err := decodeEntryChecked(l.Data, true)
	if err != nil {
		return f.stop(l.Index, err)
	}
	switch e.typ {
	case entryTypeMessagesOp:
		return f.applyMessagesOp(l.Index, e.op, func() applyResult { return f.dispatchMessages(l.Index) })
	case entryTypeCheckpoint:
		if res := f.verify(l.Index, e); res.err != nil {
			return res
		}
		return f.dispatchOnly(l.Index)
	case entryTypeMetadata:
		// The records appended after a topic deletion were given queue
		// offsets from 0 (store.Entry.DeletesTopic).
		res := f.applyMetadata(l.Index, e.op, nil)
		if res.err != nil || f.failed.Load() {
			return res
		}
		if d := f.dispatchOnly(l.Index); d.err != nil {
			return d
		}
		return res
	}
	return f.stop(l.Index, fmt.Errorf("%w: type %d", ErrBadEntry, e.typ))
}

// dispatchMessages makes the records of entry index visible.
func (f *fsm) dispatchMessages(index uint64) applyResult {
	res, err := f.store.DispatchEntry(index)
	switch {
	case err == nil:
		return applyResult{results: res}
	case errors.Is(err, store.ErrSeqApplied):
		return applyResult{err: errApplied}
	default:
		// A queue offset that is not its queue's next, or a write that
		// failed: this replica cannot go on like the others.
		return f.stop(index, err)
	}
}

// dispatchOnly records entry index as applied in the store (an entry
// without records); one applied before a restart is fine.
func (f *fsm) dispatchOnly(index uint64) applyResult {
	if _, err := f.store.DispatchEntry(index); err != nil && !errors.Is(err, store.ErrSeqApplied) {
		return f.stop(index, err)
	}
	return applyResult{}
}
