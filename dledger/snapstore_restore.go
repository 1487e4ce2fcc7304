package dledger

import (
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/internal/vfs"
	"github.com/ledgermq/ledgermq/metadata"
)

// stagedSnapshot is a snapshot whose files are already on this node's
// disk. The snapshot store's readers implement it, so Restore swaps their
// segments in instead of reading the stream.
type stagedSnapshot interface {
	StagedDir() string
	SnapshotIndex() uint64
	SnapshotTerm() uint64
}

// unwrapReader strips raft's wrappers (it counts restore progress) to get
// at the snapshot store's reader.
func unwrapReader(rc io.ReadCloser) io.ReadCloser {
	for {
		w, ok := rc.(raft.ReadCloserWrapper)
		if !ok {
			return rc
		}
		rc = w.WrappedReadCloser()
	}
}

// stageStream copies a snapshot stream (or a bare manifest) that does not
// come from this node's snapshot store into a new staging directory and
// returns it with the manifest. The caller removes the directory.
func (f *fsm) stageStream(r io.Reader) (string, manifest, error) {
	var dir string
	var err error
	fs := vfs.Default
	if f.snaps != nil {
		fs = f.snaps.fs
		dir, err = f.snaps.stagingDir()
	} else {
		dir, err = os.MkdirTemp("", "ledgermq-restore-*")
	}
	if err != nil {
		return "", manifest{}, fmt.Errorf("dledger: restore: %w", err)
	}
	w := newStagingWriter(fs, dir, f.store.SegmentSize(), f.store)
	if _, err := io.Copy(w, r); err != nil {
		w.abort()
		return dir, manifest{}, fmt.Errorf("dledger: restore: %w", err)
	}
	m, err := w.finish()
	if err != nil {
		return dir, manifest{}, fmt.Errorf("dledger: restore: %w", err)
	}
	return dir, m, nil
}

// install brings the FSM to a snapshot staged in dir and taken at raft
// index index (0 if unknown), on the FSM goroutine or before raft starts.
//
//  1. The manifest's metadata is adopted when it is newer than this
//     node's, and saved at once: raft will not re-deliver the entries
//     before the snapshot, so a crash must not lose what they did.
//  2. A store that already holds the snapshot's data is kept. Otherwise
//     the staged segments replace its CommitLog and its queues and index
//     are rebuilt from them (store.RestoreFrom); a snapshot without
//     segments cannot help such a store (ErrSnapshotNeedsData) and leaves
//     it untouched. A crash in between is finished at the next start
//     (newSnapshotStore), since the snapshot stays ahead of the store.
func (f *fsm) install(dir string, m manifest, index uint64) error {
	if len(m.Metadata) > 0 {
		next := metadata.New()
		if err := next.Unmarshal(m.Metadata); err != nil {
			return fmt.Errorf("dledger: restore: %w", err)
		}
		if next.AppliedIndex() > f.meta.AppliedIndex() {
			if err := f.meta.Unmarshal(m.Metadata); err != nil {
				return fmt.Errorf("dledger: restore: %w", err)
			}
			if err := f.meta.Save(f.metaPath); err != nil {
				return fmt.Errorf("dledger: restore: %w", err)
			}
		}
	}
	if have := f.store.LastSeq(); have < m.StoreSeq {
		segs, err := segmentsIn(f.store, dir, f.store.SegmentSize(), m.CommitLogMax)
		if err != nil {
			return fmt.Errorf("dledger: restore: %w", err)
		}
		if len(segs) == 0 {
			return fmt.Errorf("%w: have seq %d, snapshot %d", ErrSnapshotNeedsData, have, m.StoreSeq)
		}
		if err := f.store.RestoreFrom(dir, m.StoreSeq); err != nil {
			return fmt.Errorf("dledger: restore: %w", err)
		}
		if f.snaps != nil {
			f.snaps.restored.Add(1)
			f.snaps.log.Info("store restored from snapshot", "dir", dir, "from_seq", have, "seq", m.StoreSeq,
				"segments", len(segs), "commitlog_max", m.CommitLogMax)
		}
	}
	if index > f.applied.Load() {
		f.applied.Store(index)
	}
	return nil
}
