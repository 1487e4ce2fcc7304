package dledger

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Snapshots by bytes. raft takes a snapshot every SnapshotThreshold
// entries, but an entry carries a whole batch of messages (up to
// MaxBatchBytes), so under load thousands of entries are hundreds of
// megabytes: raft reads every entry after the last snapshot when a node
// starts (to find configuration changes) and hands them to the FSM again,
// so a restart's time grows with them. The raft log therefore also asks
// for a snapshot once SnapshotBytes of entries have been appended since
// the last one began. A snapshot is cheap (fsm.Snapshot: the store forced
// to disk and a small manifest).

// snapshotCounter counts the entry bytes appended since the last snapshot
// began; past snapshotBytes (when positive) an append signals snapshotDue.
type snapshotCounter struct {
	sinceSnapshot atomic.Int64
	snapshotBytes int64
	snapshotDue   chan struct{}
}

// countForSnapshot adds n appended bytes and signals snapshotDue when
// they pass snapshotBytes. Called by StoreLogs (raft's goroutines).
func (l *snapshotCounter) countForSnapshot(n int) {
	if l.snapshotBytes <= 0 || l.sinceSnapshot.Add(int64(n)) < l.snapshotBytes {
		return
	}
	select {
	case l.snapshotDue <- struct{}{}:
	default: // one is pending already
	}
}

// snapshotTaken restarts the count: a snapshot (raft's or requested)
// covers what was appended before it began. Called by fsm.Snapshot.
func (l *snapshotCounter) snapshotTaken() { l.sinceSnapshot.Store(0) }

// snapshotRetry spaces the requests for a snapshot that could not be
// taken (one in progress, nothing new yet).
const snapshotRetry = time.Second

// snapshotOnBytes asks raft for a snapshot whenever the raft log signals
// that enough bytes were appended, until ctx ends. It runs on a goroutine
// the group owns.
func (g *Group) snapshotOnBytes(ctx context.Context, due <-chan struct{}) {
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-due:
		}
		err := g.raft.Snapshot().Error()
		switch {
		case err == nil:
			g.log.Debug("snapshot taken: raft log bytes since the last one", "limit", g.cfg.SnapshotBytes)
		case errors.Is(err, raft.ErrNothingNewToSnapshot), errors.Is(err, raft.ErrRaftShutdown):
		default:
			g.log.Debug("snapshot by bytes not taken; retrying", "error", err)
		}
		// Space attempts: a snapshot in progress, or raft's own, ends
		// soon, and the count triggers again while it stays high.
		retry.Reset(snapshotRetry)
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
		}
	}
}
