package dledger

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"

	"github.com/ledgermq/ledgermq/internal/syncreport"
	"github.com/ledgermq/ledgermq/store"
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
	snapshotCounter

	// closeMu and closed order the stable store's writes against Close.
	// raft handles a heartbeat on a transport goroutine it does not wait
	// for at shutdown, and it panics when the stable store fails to save
	// the term the heartbeat raised; so a write that starts after Close is
	// dropped (the node has stopped: the term is learnt again at its next
	// start), and Close waits for one in progress.
	closeMu sync.RWMutex
	closed  atomic.Bool
}

// SetUint64 is raft-wal's, dropped once the log is closed (see closeMu).
func (l *raftLog) SetUint64(key []byte, v uint64) error {
	l.closeMu.RLock()
	defer l.closeMu.RUnlock()
	if l.closed.Load() {
		return nil
	}
	return l.WAL.SetUint64(key, v)
}

// Set is raft-wal's, dropped once the log is closed (see closeMu).
func (l *raftLog) Set(key, v []byte) error {
	l.closeMu.RLock()
	defer l.closeMu.RUnlock()
	if l.closed.Load() {
		return nil
	}
	return l.WAL.Set(key, v)
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
// raft-wal's default (64 MiB). faults (nil: none) may skip its fsyncs.
func openRaftLog(dir string, log hclog.Logger, segmentSize int, faults store.Faults, syncs *syncreport.Report) (*raftLog, error) {
	l := &raftLog{meta: &metadb.BoltMetaDB{}, log: log}
	filer := wal.WithSegmentFiler(nil) // nil: raft-wal's own
	if syncs.Enabled() || faults != nil {
		// The durable-length report (a test aid of the power-loss
		// nemesis) hears every fsync of the segment files.
		filer = wal.WithSegmentFiler(segment.NewFiler(dir, reportingVFS{VFS: walfs.New(), faults: faults, syncs: syncs}))
	}
	w, err := wal.Open(dir, wal.WithLogger(log), wal.WithMetaStore(l.meta), wal.WithSegmentSize(segmentSize), filer)
	if err != nil {
		_ = l.meta.Close()
		return nil, fmt.Errorf("dledger: open raft log %s: %w", dir, err)
	}
	l.WAL = w
	return l, nil
}

// Close closes the log and its metadata database, after any stable-store
// write in progress; later ones are dropped.
func (l *raftLog) Close() error {
	l.closed.Store(true)
	l.closeMu.Lock()
	defer l.closeMu.Unlock()
	err := l.WAL.Close()
	if cerr := l.meta.Close(); err == nil {
		err = cerr
	}
	return err
}

// reportingVFS is raft-wal's file system with every segment fsync
// recorded in the durable-length report (internal/syncreport). raft-wal
// fsyncs inside StoreLogs, so a segment is durable at its size when the
// sync began before StoreLogs returns to raft. Its metadata database
// (bbolt) is not recorded: see the report's package doc.
type reportingVFS struct {
	types.VFS
	faults store.Faults       // nil: none
	syncs  *syncreport.Report // nil: off
}

func (v reportingVFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	f, err := v.VFS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name)
	// Preallocated, never synced: it comes back zero-filled.
	v.syncs.Created(path, int64(size))
	return &reportingFile{WritableFile: f, path: path, faults: v.faults, syncs: v.syncs}, nil
}

func (v reportingVFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	f, err := v.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	rf := &reportingFile{WritableFile: f, path: filepath.Join(dir, name), faults: v.faults, syncs: v.syncs}
	rf.synced.Store(true) // it was there: synced before, as far as the canary cares
	return rf, nil
}

func (v reportingVFS) Delete(dir, name string) error {
	err := v.VFS.Delete(dir, name)
	if err == nil {
		v.syncs.Removed(filepath.Join(dir, name))
	}
	return err
}

type reportingFile struct {
	types.WritableFile
	path string
	// end is the end of everything written through this handle: the
	// segment is preallocated, so its size says nothing of its data. An
	// opened tail's earlier data lies below the first write (raft-wal
	// appends at its recovered write offset).
	end atomic.Int64
	// synced: a first fsync has happened (the broken build skip-fsync,
	// faults, skips every later one).
	synced atomic.Bool
	faults store.Faults
	syncs  *syncreport.Report
}

func (f *reportingFile) WriteAt(b []byte, off int64) (int, error) {
	n, err := f.WritableFile.WriteAt(b, off)
	if e := off + int64(n); n > 0 && e > f.end.Load() {
		f.end.Store(e) // raft-wal writes from one goroutine at a time
	}
	return n, err
}

func (f *reportingFile) Sync() error {
	if f.synced.Load() && skipFsync(f.faults) {
		return nil // broken on purpose: acknowledged from the page cache
	}
	f.synced.Store(true)
	end, size := f.end.Load(), int64(-1)
	if st, ok := f.WritableFile.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil {
			size = fi.Size()
		}
	}
	if err := f.WritableFile.Sync(); err != nil {
		return err
	}
	if size >= 0 {
		f.syncs.SyncedExtent(f.path, end, size)
	}
	return nil
}
