package dledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/store"
)

// The switch to one log: a group created in the two-log layout (raft-wal
// beside the CommitLog) moves to the one-log layout in place.
//
//  1. The leader proposes a raftLog op (format version 6, so every member
//     runs a binary that converts) once every member is configured for one
//     log (Config.OneLog, reported in its node info): switchToOneLog.
//  2. A two-log node applying it at index X records X in the store (an
//     empty batch, so that the store's last entry is X), forces the store
//     to disk, saves the metadata (OneLogSince = X) and stops itself
//     (ErrRestartNeeded): it applies nothing after X in the old layout, and
//     takes no snapshot past X (raft counts the entries after X as applied
//     though this store never took them).
//  3. At its next start, Open sees a two-log node of a group that switched
//     and converts its data before raft starts (convertToOneLog): a local
//     snapshot at the store's last entry A (X, or the index of a snapshot
//     a one-log leader installed here since), the store marked one-log
//     (its CommitLog up to A becomes the prefix that snapshot covers,
//     byte-identical on every replica because every replica applied the
//     same entries), raft-wal's entries after A appended in the one-log
//     layout (their offsets depend on the log's prefix alone, so they are
//     the same on every replica), raft's term and vote copied into
//     raft/state.json, and raft-wal removed. Each step can be repeated: a
//     crash anywhere resumes at the next start.
//
// A two-log node that installs a snapshot of a group that switched stops
// the same way (restartIfSwitched) and converts at its next start.

// errSwitching refuses proposals while the leader switches the group to
// one log: the switch is the last entry the group applies in two logs, and
// an entry after it would be answered only after every node's restart (an
// unknown outcome, which a client retries into a duplicate). Nothing
// refused was proposed, so a client's retry goes to the next leader.
var errSwitching = fmt.Errorf("%w: the group is switching to one log", ErrNotReady)

// walConvertedName is raft-wal's directory once its entries were copied:
// renamed first, then removed, so a crash in between leaves no half log.
const walConvertedName = "wal.converted"

// switchToOneLog runs on the writable leader with the version check: it
// proposes the switch once the group's format version allows it, this
// node and every member are configured for one log, and the group has not
// switched yet.
func (g *Group) switchToOneLog() {
	if !g.wantOneLog || g.store.OneLog() || g.meta.OneLogSince() != 0 || g.meta.FormatVersion() < raftLogVersion {
		return
	}
	ms, err := g.Members()
	if err != nil {
		return
	}
	for _, m := range ms {
		if m.ID == g.cfg.NodeID {
			continue
		}
		ni, err := g.mux.askNodeInfo(m.Addr, g.cfg.Timing.ElectionTimeout)
		if err != nil || !ni.OneLog {
			g.log.Debug("the raft log stays separate", "member", m.ID, "one_log", ni.OneLog, "error", err)
			return
		}
	}
	ctx, cancel := context.WithTimeout(g.ctx, g.cfg.ApplyTimeout)
	defer cancel()
	g.log.Info("switching the group to one log: every node stops once at the switch and converts its data as it starts")
	// Proposals from here on are refused (errSwitching); those taken
	// before go through the proposer ahead of the switch.
	g.switching.Store(true)
	err = g.ProposeMetadata(ctx, metadata.Op{Kind: metadata.OpRaftLog})
	if err != nil {
		// Not switched (or not known to be): take proposals again; the
		// next check tries again.
		g.switching.Store(false)
		if !errors.Is(err, ErrClosed) {
			g.log.Warn("switching the group to one log failed", "error", err)
		}
	}
}

// applyRaftLog applies the switch at index (step 2 above).
func (f *fsm) applyRaftLog(index uint64, op metadata.Op) applyResult {
	if f.store.OneLog() || f.meta.OneLogSince() != 0 {
		// One log already (a replay, or a group that had it from its
		// start), or a second switch: recorded, nothing to convert.
		if _, err := f.meta.Apply(index, op); err != nil {
			return f.stop(index, err)
		}
		return applyResult{}
	}
	if err := f.store.RecordSeq(index); err != nil && !errors.Is(err, store.ErrSeqApplied) {
		return f.stop(index, err)
	}
	// The store before the metadata: once the metadata says the group
	// switched, the next start converts the store as it is.
	if err := f.store.Flush(); err != nil {
		return f.stop(index, err)
	}
	if _, err := f.meta.Apply(index, op); err != nil {
		return f.stop(index, err)
	}
	if err := f.meta.Save(f.metaPath); err != nil {
		return f.stop(index, err)
	}
	f.restart(fmt.Errorf("%w: the group's raft log is the commitlog from entry %d on; this node converts its data as it starts again",
		ErrRestartNeeded, index))
	return applyResult{}
}

// converting: this two-log node applied the switch (or installed a
// snapshot taken after it) and waits for the restart that converts it.
func (f *fsm) converting() bool {
	return !f.store.OneLog() && f.meta.OneLogSince() != 0
}

// restartIfSwitched stops a two-log node that installed a snapshot of a
// group that switched to one log: it converts at its next start.
func (f *fsm) restartIfSwitched(index uint64) {
	if f.converting() {
		f.restart(fmt.Errorf("%w: installed snapshot %d of a group whose raft log is the commitlog since entry %d; this node converts its data as it starts again",
			ErrRestartNeeded, index, f.meta.OneLogSince()))
	}
}

// restart stops this node for a restart that is part of its work (not a
// failure of an entry): nothing after this is applied.
func (f *fsm) restart(err error) {
	f.failed.Store(true)
	if f.fail != nil {
		f.fail(err)
	}
}

// chooseLayout decides whether this node runs one log, from its data
// first: a node whose group switched and whose raft-wal still holds a log
// converts (convert is true); a store created or converted one-log stays
// so; a two-log node stays two-log until its group switches (Config.OneLog
// then only says that it wants to). A node without data (ask) takes its
// group's layout (layout.go).
func chooseLayout(files StoreOpener, wantOneLog bool, meta *metadata.State, storeDir, raftDir string) (oneLog, convert, ask bool, err error) {
	walHeld, err := dirHasEntries(filepath.Join(raftDir, "wal"))
	if err != nil {
		return false, false, false, err
	}
	marked, err := files.HasOneLog(storeDir)
	if err != nil {
		return false, false, false, err
	}
	switch {
	case meta.OneLogSince() != 0 && walHeld:
		return true, true, false, nil
	case marked:
		return true, false, false, nil
	case walHeld:
		return false, false, false, nil
	}
	segs, err := files.HasCommitLog(storeDir)
	if err != nil || segs {
		return false, false, false, err
	}
	none, err := hasNoData(raftDir)
	if err != nil {
		return false, false, false, err
	}
	// A raft state or a snapshot and no store yet: a node stopped before it
	// created its store, in the layout it was configured for.
	return wantOneLog && !none, false, none, nil
}

func dirHasEntries(dir string) (bool, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return len(ents) > 0, nil
}

// convertStep names the steps of convertToOneLog, for tests that stop it
// after one (Config.convertStop).
type convertStep int

const (
	convertSnapshot convertStep = iota + 1 // the snapshot at the store's last entry is durable
	convertMarked                          // the store is marked one-log
	convertAppended                        // raft-wal's later entries are in the CommitLog
	convertStable                          // raft/state.json holds the term and vote
	convertDone                            // raft-wal is gone
)

// errConvertStopped is returned when Config.convertStop stops a
// conversion (tests of a crash between its steps).
var errConvertStopped = errors.New("dledger: conversion stopped (test)")

// convertToOneLog converts this node's two-log data in place (step 3
// above). scfg is the store's configuration in the two-log layout.
func (g *Group) convertToOneLog(scfg store.Config, raftDir, metaPath string) error {
	start := time.Now()
	walDir := filepath.Join(raftDir, "wal")
	stop := func(s convertStep) error {
		if g.cfg.convertStop != nil && g.cfg.convertStop(s) {
			return errConvertStopped
		}
		return nil
	}
	marked, err := g.cfg.Stores.HasOneLog(scfg.Dir)
	if err != nil {
		return err
	}
	if !marked {
		if err := g.snapshotForConversion(scfg, raftDir, walDir, metaPath); err != nil {
			return err
		}
		if err := stop(convertSnapshot); err != nil {
			return err
		}
		if err := g.cfg.Stores.ConvertToOneLog(scfg.Dir); err != nil {
			return err
		}
		if err := stop(convertMarked); err != nil {
			return err
		}
	}
	wl, err := openRaftLog(walDir, g.log.Named("wal"), g.cfg.RaftSegmentSize, g.cfg.Faults, g.cfg.Store.SyncReport)
	if err != nil {
		return err
	}
	defer wl.Close()
	ocfg := scfg
	ocfg.OneLog = true
	ocfg.CommittedSeq, ocfg.EntriesFrom = newestSnapshotBounds(filepath.Join(raftDir, snapshotsDirName))
	ocfg.EntryDeletes = deletesTopic
	st, err := g.cfg.Stores.OpenStore(ocfg)
	if err != nil {
		return err
	}
	n, err := appendFromWAL(st, wl)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := stop(convertAppended); err != nil {
		return err
	}
	fs, err := openFileStable(g.cfg.FS, filepath.Join(raftDir, stableFileName))
	if err != nil {
		return err
	}
	if err := copyStable(fs, wl); err != nil {
		_ = fs.Close()
		return err
	}
	if err := fs.Close(); err != nil {
		return err
	}
	if err := stop(convertStable); err != nil {
		return err
	}
	if err := wl.Close(); err != nil {
		return err
	}
	gone := filepath.Join(raftDir, walConvertedName)
	if err := g.cfg.FS.Rename(walDir, gone); err != nil {
		return fmt.Errorf("dledger: %w", err)
	}
	if err := g.cfg.FS.SyncDir(raftDir); err != nil {
		return err
	}
	if err := g.cfg.FS.RemoveAll(gone); err != nil {
		return fmt.Errorf("dledger: %w", err)
	}
	g.log.Info("converted to one log: the commitlog is the raft log", "since", g.meta.OneLogSince(), "entries_copied", n, "took", time.Since(start))
	return stop(convertDone)
}

// snapshotForConversion takes a local snapshot at the two-log store's last
// entry A, with raft's term and configuration at A, unless the newest
// snapshot is at A already.
func (g *Group) snapshotForConversion(scfg store.Config, raftDir, walDir, metaPath string) error {
	st, err := g.cfg.Stores.OpenStore(scfg)
	if err != nil {
		return err
	}
	defer st.Close()
	a := st.LastSeq()
	if since := g.meta.OneLogSince(); a < since {
		return fmt.Errorf("%w: the group's raft log is the commitlog since entry %d, but this store holds entries up to %d only; remove this node's data directory so that it is sent the group's data",
			store.ErrLayout, since, a)
	}
	f := &fsm{store: st, meta: g.meta, metaPath: metaPath, log: g.log}
	snaps, err := newSnapshotStore(raftDir, f, g.cfg.FS, g.log.Named("snapshots"))
	if err != nil {
		return err
	}
	metas, err := snaps.List()
	if err != nil {
		return err
	}
	if len(metas) > 0 && metas[0].Index == a {
		return nil
	}
	wl, err := openRaftLog(walDir, g.log.Named("wal"), g.cfg.RaftSegmentSize, g.cfg.Faults, g.cfg.Store.SyncReport)
	if err != nil {
		return err
	}
	defer wl.Close()
	term, conf, confIndex, err := raftStateAt(wl, metas, a)
	if err != nil {
		return err
	}
	// The metadata as of A (the snapshot's): nothing after A was applied.
	fs, err := f.snapshot()
	if err != nil {
		return err
	}
	sink, err := snaps.Create(1, a, term, conf, confIndex, nil)
	if err != nil {
		return err
	}
	return fs.Persist(sink)
}

// copyStable copies raft's current term and vote (hashicorp/raft's keys).
func copyStable(dst, src raft.StableStore) error {
	for _, k := range []string{"CurrentTerm", "LastVoteTerm"} {
		v, err := src.GetUint64([]byte(k))
		if err != nil || v == 0 {
			continue
		}
		if err := dst.SetUint64([]byte(k), v); err != nil {
			return err
		}
	}
	v, err := src.Get([]byte("LastVoteCand"))
	if err != nil || len(v) == 0 {
		return nil
	}
	return dst.Set([]byte("LastVoteCand"), v)
}

// raftStateAt finds the term of entry a and the configuration in force at
// it: the newest snapshot at or below a, then raft-wal's configuration
// entries after that snapshot up to a.
func raftStateAt(wl *raftLog, metas []*raft.SnapshotMeta, a uint64) (term uint64, conf raft.Configuration, confIndex uint64, err error) {
	// The entries a snapshot covers are not read: raft-wal may hold the
	// whole log (it keeps entries until their segment goes).
	from := uint64(1)
	for _, m := range metas {
		if m.Index <= a {
			conf, confIndex, from = m.Configuration, m.ConfigurationIndex, m.Index+1
			if m.Index == a {
				term = m.Term
			}
			break
		}
	}
	first, err := wl.FirstIndex()
	if err != nil {
		return 0, conf, 0, err
	}
	last, err := wl.LastIndex()
	if err != nil {
		return 0, conf, 0, err
	}
	for i := max(first, from); i <= min(a, last); i++ {
		var l raft.Log
		if err := wl.GetLog(i, &l); err != nil {
			return 0, conf, 0, fmt.Errorf("dledger: raft log entry %d: %w", i, err)
		}
		if i == a {
			term = l.Term
		}
		if l.Type == raft.LogConfiguration {
			conf, confIndex = raft.DecodeConfiguration(l.Data), i
		}
	}
	if term == 0 {
		return 0, conf, 0, fmt.Errorf("%w: neither the raft log nor a snapshot holds entry %d", ErrBadSnapshot, a)
	}
	if len(conf.Servers) == 0 {
		return 0, conf, 0, fmt.Errorf("%w: no configuration at entry %d", ErrBadSnapshot, a)
	}
	return term, conf, confIndex, nil
}

// appendFromWAL appends raft-wal's entries after the one-log store's last
// one (its snapshot's, or what an interrupted conversion appended) and
// returns how many.
func appendFromWAL(st entryStore, wl *raftLog) (int, error) {
	next := max(st.LastEntry(), st.LastSeq()) + 1
	last, err := wl.LastIndex()
	if err != nil {
		return 0, err
	}
	first, err := wl.FirstIndex()
	if err != nil {
		return 0, err
	}
	if last >= next && first > next {
		return 0, fmt.Errorf("%w: raft log starts at %d, the store needs %d", ErrBadSnapshot, first, next)
	}
	rl := &commitLogRaftLog{st: st}
	n := 0
	const chunk = 64
	batch := make([]*raft.Log, 0, chunk)
	for i := next; i <= last; i++ {
		l := new(raft.Log)
		if err := wl.GetLog(i, l); err != nil {
			return n, fmt.Errorf("dledger: raft log entry %d: %w", i, err)
		}
		batch = append(batch, l)
		if len(batch) == chunk || i == last {
			if err := rl.StoreLogs(batch); err != nil {
				return n, err
			}
			n += len(batch)
			batch = batch[:0]
		}
	}
	return n, nil
}
