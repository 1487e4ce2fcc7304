package dledger

import (
	"fmt"

	"github.com/hashicorp/go-hclog"
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
}

// openRaftLog opens (or creates) the raft log in dir. segmentSize 0 means
// raft-wal's default (64 MiB).
func openRaftLog(dir string, log hclog.Logger, segmentSize int) (*raftLog, error) {
	l := &raftLog{meta: &metadb.BoltMetaDB{}}
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
