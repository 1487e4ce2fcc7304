package dledger

import (
	"context"
	"fmt"
	"sync/atomic"
)

// The replica verifier (see doc.go, "Replica verifier"). The leader
// proposes checkpoints "CRC-32C of my CommitLog bytes in [from, to)", each
// range starting where the previous checkpoint's ended; every replica,
// applying the checkpoint, computes the same range over its own bytes. The
// entries before the checkpoint in the log wrote those bytes on every
// replica, so they must be equal there.

// verifierState is the FSM's record of the checkpoints it applied.
type verifierState struct {
	// readFiles makes every checksum read its range from the files
	// (Config.VerifyFiles).
	readFiles  bool
	matched    atomic.Uint64
	mismatched atomic.Uint64
	skipped    atomic.Uint64
	lastIndex  atomic.Uint64
	// lastTo is the end of the last checkpoint applied (-1: none since this
	// node started): the next one starts there.
	lastTo       atomic.Int64
	lastMismatch atomic.Pointer[string]
}

// VerifierStatus is what a node's replica verifier found.
type VerifierStatus struct {
	// Matched, Mismatched and Skipped count the checkpoints applied:
	// equal bytes, different bytes (the node stopped), and ranges this
	// node no longer holds (retention deleted them, or a snapshot install
	// brought only later segments).
	Matched, Mismatched, Skipped uint64
	// LastIndex is the raft index of the last checkpoint applied, LastTo
	// the CommitLog offset it reached (-1: none since start).
	LastIndex uint64
	LastTo    int64
	// LastMismatch describes the mismatch ("" if none): index, range and
	// both checksums.
	LastMismatch string
}

// verify applies a checkpoint entry.
func (f *fsm) verify(index uint64, e entry) applyResult {
	v := &f.verifier
	v.lastTo.Store(e.to)
	v.lastIndex.Store(index)
	if e.from < f.store.MinPhysicalOffset() {
		v.skipped.Add(1)
		return applyResult{}
	}
	var msg string
	if end := f.store.MaxPhysicalOffset(); e.to > end {
		msg = fmt.Sprintf("checkpoint at raft index %d covers the CommitLog up to offset %d, this node's ends at %d", index, e.to, end)
	} else {
		sum, err := f.store.CommitLogChecksum(e.from, e.to, v.readFiles)
		switch {
		case err != nil && e.from < f.store.MinPhysicalOffset():
			// Retention removed the range meanwhile.
			v.skipped.Add(1)
			return applyResult{}
		case err != nil:
			return f.stop(index, fmt.Errorf("replica checkpoint: %w", err))
		case sum == e.sum:
			v.matched.Add(1)
			return applyResult{}
		}
		msg = fmt.Sprintf("checkpoint at raft index %d: CommitLog bytes [%d, %d) have CRC-32C %08x on the leader and %08x here",
			index, e.from, e.to, e.sum, sum)
	}
	v.mismatched.Add(1)
	v.lastMismatch.Store(&msg)
	if f.log != nil {
		f.log.Error("this replica's CommitLog differs from the leader's; stopping", "index", index, "from", e.from, "to", e.to,
			"detail", msg)
	}
	return f.stop(index, fmt.Errorf("%w: %s", ErrDiverged, msg))
}

func (v *verifierState) status() VerifierStatus {
	s := VerifierStatus{Matched: v.matched.Load(), Mismatched: v.mismatched.Load(), Skipped: v.skipped.Load(),
		LastIndex: v.lastIndex.Load(), LastTo: v.lastTo.Load()}
	if m := v.lastMismatch.Load(); m != nil {
		s.LastMismatch = *m
	}
	return s
}

// Verifier reports this node's replica verifier.
func (g *Group) Verifier() VerifierStatus { return g.fsm.verifier.status() }

// ProposeCheckpoint proposes a replica checkpoint of the CommitLog bytes
// written since the previous checkpoint and returns once this node has
// applied it. Leader only; ErrFormatVersion while some member cannot apply
// checkpoints. With nothing written since the previous one it proposes
// nothing. A leader that knows no previous checkpoint (none applied since
// it started) proposes an empty range, which starts the chain without
// reading the whole log.
func (g *Group) ProposeCheckpoint(ctx context.Context) error {
	if err := g.writable(); err != nil {
		return err
	}
	if v := g.meta.FormatVersion(); v < uint32(checkpointVersion) {
		return fmt.Errorf("%w: version %d, checkpoints need %d", ErrFormatVersion, v, checkpointVersion)
	}
	// Applied bytes only: with one log, what follows them may not be
	// committed yet.
	to := g.fsm.store.AppliedEnd()
	from := g.fsm.verifier.lastTo.Load()
	switch {
	case from < g.fsm.store.MinPhysicalOffset() || from > to:
		from = to
	case from == to:
		return nil
	}
	sum, err := g.fsm.store.CommitLogChecksum(from, to, g.fsm.verifier.readFiles)
	if err != nil {
		return fmt.Errorf("dledger: checkpoint: %w", err)
	}
	data := encodeCheckpointEntry(from, to, sum)
	_, err = g.await(ctx, &proposal{entry: data, size: len(data)})
	return err
}

// proposeCheckpoint proposes a checkpoint (every VerifyInterval while this
// node leads) once the group's version allows it.
func (g *Group) proposeCheckpoint() {
	if g.meta.FormatVersion() < uint32(checkpointVersion) {
		return
	}
	ctx, cancel := context.WithTimeout(g.ctx, g.cfg.ApplyTimeout)
	defer cancel()
	if err := g.ProposeCheckpoint(ctx); err != nil {
		g.log.Debug("replica checkpoint not proposed", "error", err)
	}
}
