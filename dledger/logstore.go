package dledger

import (
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
)

// raftLog is the raft log and stable store of one node (raft-wal), with
// the metadata database it keeps its segment list in.
type raftLog struct {
	*wal.WAL
	// meta is raft-wal's metadata database, opened by us: WAL.Close closes
	// it (raft-wal v0.4.1 and later), but a wal.Open that fails part-way
	// leaves it open and its file lock held, so a retry in the same process
	// would block on it.
	meta *metadb.BoltMetaDB
	// plan says what raft's next removeOldLogs call does (see DeleteRange);
	// fsm.Restore sets it.
	plan atomic.Pointer[installPlan]
	log  hclog.Logger
	// observer hears every append (observe.go); nil: none.
	observer LogObserver
}

// installPlan is what to do with the log once raft has installed a
// snapshot on this node.
//
// raft v1.8.0, with a monotonic log store such as raft-wal, deletes the
// whole log after it installs a snapshot (removeOldLogs: DeleteRange(0,
// last)) but keeps its in-memory last log index. When the log reached past
// the snapshot (a follower that had appended entries the leader's stale
// view of it did not know of), every later AppendEntries then asks for an
// entry that is gone, is rejected, and the leader sends the snapshot again
// for ever (the family of hashicorp/raft#697). The Raft paper's rule for
// InstallSnapshot avoids that: when the log holds the snapshot's last
// entry with the snapshot's term, keep the entries that follow it; only
// otherwise discard the whole log.
type installPlan struct {
	index uint64 // the snapshot's last index
	// retain: the log holds entry index with the snapshot's term; delete
	// only up to it.
	retain bool
	// afterFull, if set, runs after the whole log was deleted while raft's
	// in-memory last index is beyond the snapshot: only a restart makes
	// raft read a consistent last index again (the emptied log and the
	// snapshot).
	afterFull func()
}

// DeleteRange is raft-wal's, except for raft's call right after a snapshot
// install (min 0), which follows the plan fsm.Restore left: keep the
// entries after the snapshot when they continue it (installPlan).
func (l *raftLog) DeleteRange(min, max uint64) error {
	if min != 0 {
		return l.WAL.DeleteRange(min, max)
	}
	p := l.plan.Swap(nil)
	if p == nil {
		return l.WAL.DeleteRange(min, max)
	}
	if p.retain {
		first, err := l.WAL.FirstIndex()
		if err != nil {
			return err
		}
		l.log.Info("snapshot installed; keeping the log entries that follow it", "snapshot", p.index, "last", max)
		return l.WAL.DeleteRange(first, p.index) // a head truncation; empty when first > index
	}
	err := l.WAL.DeleteRange(min, max)
	if p.afterFull != nil {
		p.afterFull()
	}
	return err
}

// termAt returns the term of entry index, if the log still holds it.
func (l *raftLog) termAt(index uint64) (uint64, bool) {
	var e raft.Log
	if err := l.WAL.GetLog(index, &e); err != nil {
		return 0, false
	}
	return e.Term, true
}

// openRaftLog opens (or creates) the raft log in dir. segmentSize 0 means
// raft-wal's default (64 MiB).
func openRaftLog(dir string, log hclog.Logger, segmentSize int) (*raftLog, error) {
	l := &raftLog{meta: &metadb.BoltMetaDB{}, log: log}
	w, err := wal.Open(dir, wal.WithLogger(log), wal.WithMetaStore(l.meta), wal.WithSegmentSize(segmentSize))
	if err != nil {
		_ = l.meta.Close()
		return nil, fmt.Errorf("dledger: open raft log %s: %w", dir, err)
	}
	l.WAL = w
	return l, nil
}

// Close closes the log and its metadata database.
func (l *raftLog) Close() error {
	err := l.WAL.Close()
	if cerr := l.meta.Close(); err == nil {
		err = cerr
	}
	return err
}
