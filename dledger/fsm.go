package dledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/store"
)

// applyResult is the FSM's response to one entry; the proposer on the
// leader hands it back to the proposals the entry carried.
type applyResult struct {
	results []store.PutResult
	err     error
}

// errApplied marks an entry applied before a restart and skipped.
var errApplied = errors.New("dledger: entry applied before")

// fsm applies committed entries to the store and the metadata, in log
// order, on raft's FSM goroutine. It is deterministic (nothing local enters
// the store) and idempotent (the store and the metadata skip entries at or
// below what they already hold).
type fsm struct {
	store    fsmStore
	meta     *metadata.State
	metaPath string
	// fail stops the node after a store write failure; set by the group.
	fail   func(error)
	failed atomic.Bool
	log    hclog.Logger
	// delayLevels is the broker's delay table as this node runs it ("" if
	// unknown), compared with the group's settings.
	delayLevels string
	// maxFormat is the highest format version this node applies (0: the
	// binary's, formatVersionMax); Config.MaxFormatVersion lowers it.
	maxFormat uint32
	verifier  verifierState
	// applied is the index of the last entry this FSM has processed (raft's
	// own AppliedIndex runs ahead: it counts entries handed to the FSM).
	applied atomic.Uint64
	// appliedWake, when someone waits (appliedChanged), is closed and
	// cleared after the next batch is applied.
	appliedWake atomic.Pointer[chan struct{}]
	// afterApply, if set (tests), runs after each entry is applied.
	afterApply atomic.Pointer[func(index uint64)]
	// snaps is the snapshot store; it registers itself when it opens.
	snaps *snapshotStore
	// lastIndex is raft's last log index, set once raft runs: Restore
	// reads it to notice raft installing a snapshot older than its log.
	lastIndex atomic.Pointer[func() uint64]
	// rlog is the raft log, set by the group: Restore leaves it the plan
	// for raft's deletion that follows a snapshot install (nil with one
	// log).
	rlog *raftLog
	// snapCount is the raft log's count of bytes since the last snapshot.
	snapCount *snapshotCounter
	// recent remembers the last entries applied, for the proposer to
	// resolve entries whose leadership was lost (resolve.go).
	recent *appliedRing
	// snapshots and restores count the snapshots taken and installed.
	snapshots, restores atomic.Uint64
	// faults breaks apply on purpose (a jepsenbroken build only).
	faults Faults
	// own tells the entries this node proposed (checked when encoded) from
	// the others (checked here, once); nil: check every entry.
	own *ownEntries
}

var _ raft.BatchingFSM = (*fsm)(nil)

func (f *fsm) Apply(l *raft.Log) interface{} {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch implements raft.BatchingFSM.
func (f *fsm) ApplyBatch(logs []*raft.Log) []interface{} {
	out := make([]interface{}, len(logs))
	for i, l := range logs {
		res := f.applyOne(l)
		out[i] = res
		if f.failed.Load() {
			// The entry was not applied: the applied index stays before it
			// (raft keeps handing entries over until it has shut down).
			continue
		}
		if f.recent != nil && l.Type == raft.LogCommand {
			f.recent.record(l.Index, l.Data, res)
		}
		f.applied.Store(l.Index)
		if hook := f.afterApply.Load(); hook != nil {
			(*hook)(l.Index)
		}
	}
	if w := f.appliedWake.Swap(nil); w != nil {
		close(*w)
	}
	return out
}

// appliedChanged returns a channel closed once the FSM has applied its
// next batch. A waiter takes it before reading applied, then waits on it.
func (f *fsm) appliedChanged() <-chan struct{} {
	for {
		if w := f.appliedWake.Load(); w != nil {
			return *w
		}
		ch := make(chan struct{})
		if f.appliedWake.CompareAndSwap(nil, &ch) {
			return ch
		}
	}
}

func (f *fsm) applyOne(l *raft.Log) applyResult {
	if f.store.OneLog() {
		return f.applyOneLog(l)
	}
	if l.Type != raft.LogCommand {
		return applyResult{}
	}
	if f.failed.Load() {
		return f.notApplied(l.Index)
	}
	if len(l.Data) > 0 && uint32(l.Data[0]) > f.maxVersion() {
		return f.stop(l.Index, fmt.Errorf("%w: an entry of format version %d, this node applies up to %d; run a newer binary",
			ErrBadEntry, l.Data[0], f.maxVersion()))
	}
	checked := f.own != nil && f.own.take(l.Data)
	if len(l.Data) >= entryHeaderSize && l.Data[1] == entryTypeMessages && l.Index <= f.store.LastSeq() {
		// Stored before a restart (raft hands the entries after its last
		// snapshot to the FSM again): the store would skip it, so it is
		// not decoded and checked again. A follower that is sent this
		// entry from here checks it on arrival.
		return applyResult{err: errApplied}
	}
	e, err := decodeEntryChecked(l.Data, checked)
	if err != nil {
		// Skipping would leave this replica without what the others
		// applied (an entry of a kind this binary does not know, from a
		// newer one): stop instead.
		return f.stop(l.Index, err)
	}
	switch e.typ {
	case entryTypeMessages:
		return f.putMessages(l.Index, e.recs)
	case entryTypeCheckpoint:
		return f.verify(l.Index, e)
	case entryTypeMessagesOp:
		// The messages first: if the store refuses them (the same way on
		// every replica) the op is not applied either. On a replay the
		// store skips what it holds and the metadata what it applied, so
		// a crash between the two parts completes the entry.
		return f.applyMessagesOp(l.Index, e.op, func() applyResult { return f.putMessages(l.Index, e.recs) })
	case entryTypeMetadata:
		// An empty batch records a topic deletion's index in the store, so
		// a replay after a crash does not drop queues that later entries
		// filled again.
		return f.applyMetadata(l.Index, e.op, func() error {
			if err := f.store.RecordSeq(l.Index); err != nil && !errors.Is(err, store.ErrSeqApplied) {
				return err
			}
			return nil
		})
	}
	return f.stop(l.Index, fmt.Errorf("%w: type %d", ErrBadEntry, e.typ))
}

// applyMessagesOp applies an entry of messages and an op: the messages
// first (put), then the op unless the messages were refused.
func (f *fsm) applyMessagesOp(index uint64, op metadata.Op, put func() applyResult) applyResult {
	res := put()
	if res.err != nil && !errors.Is(res.err, errApplied) {
		return res
	}
	if _, err := f.meta.Apply(index, op); err != nil {
		return f.stop(index, err)
	}
	return res
}

// applyMetadata applies a metadata entry's op. A topic deletion drops the
// topic's queues on every replica at the same point of the log, so a
// re-created topic starts at queue offset 0 everywhere; afterDelete (if
// set) then runs.
func (f *fsm) applyMetadata(index uint64, op metadata.Op, afterDelete func() error) applyResult {
	switch op.Kind {
	case metadata.OpSettings:
		return f.applySettings(index, op)
	case metadata.OpFormatVersion:
		return f.applyFormatVersion(index, op)
	case metadata.OpRaftLog:
		return f.applyRaftLog(index, op)
	}
	applied, err := f.meta.Apply(index, op)
	if err != nil {
		return f.stop(index, err)
	}
	if applied && op.Kind == metadata.OpDeleteTopic && index > f.store.LastSeq() {
		if err := f.store.DeleteTopic(op.Name); err != nil {
			return f.stop(index, err)
		}
		if afterDelete != nil {
			if err := afterDelete(); err != nil {
				return f.stop(index, err)
			}
		}
	}
	return applyResult{}
}

// stop fail-stops this node on the entry at index, which it cannot apply:
// skipping it would make this replica differ from those that applied it.
// Later entries are not applied (applyOne answers ErrFailed) and raft is
// shut down (Group.fail); the process exits and its supervisor restarts
// it, which applies the entry again from the raft log once the cause is
// fixed.
func (f *fsm) stop(index uint64, err error) applyResult {
	e := &ApplyError{Index: index, Err: err}
	f.failed.Store(true)
	if f.fail != nil {
		f.fail(e)
	}
	return applyResult{err: fmt.Errorf("%w: %w", ErrFailed, e)}
}

// notApplied answers an entry that raft committed after this node stopped
// itself: it is applied when the node starts again (raft hands it over
// again from the log), so its proposer cannot be told it failed, nor
// where it went.
func (f *fsm) notApplied(index uint64) applyResult {
	return applyResult{err: fmt.Errorf("%w: entry %d is committed; this node stopped before applying it and applies it as it starts again",
		ErrOutcomeUnknown, index)}
}

// putMessages stores the records of entry index.
func (f *fsm) putMessages(index uint64, recs [][]byte) applyResult {
	n := len(recs)
	if applyTwice(f.faults, index) { // a jepsenbroken build only (faults.go)
		recs = append(recs[:n:n], recs...)
	}
	// Each record was checked once on this node: when the proposer
	// encoded it, or when applyOne decoded the entry.
	res, err := f.store.PutChecked(index, recs)
	switch {
	case err == nil:
		return applyResult{results: res[:n]}
	case errors.Is(err, store.ErrSeqApplied):
		return applyResult{err: errApplied}
	default:
		// The store cannot write (a disk error, a full disk), or refuses
		// the entry (ErrBadMessage, ErrBatchTooLarge: the leader checks
		// every record with the group's settings before proposing, so a
		// refusal here means this node's store disagrees with the group):
		// applying later entries would leave a hole. Stop this node; it
		// re-applies from the raft log once the cause is fixed.
		return f.stop(index, err)
	}
}

// manifest is the content of a snapshot: small, because the CommitLog
// itself is the state and is forced to disk before the manifest is taken.
//
//	{"version":1,"storeSeq":N,"commitLogMin":A,"commitLogMax":B,"metadata":{...}}
type manifest struct {
	Version      int             `json:"version"`
	StoreSeq     uint64          `json:"storeSeq"`
	CommitLogMin int64           `json:"commitLogMin"`
	CommitLogMax int64           `json:"commitLogMax"`
	Metadata     json.RawMessage `json:"metadata"`
}

// ErrSnapshotNeedsData: the leader sent a snapshot whose CommitLog this node
// does not hold (it is too far behind and the leader's raft log no longer
// has the entries it misses).
var ErrSnapshotNeedsData = errors.New("dledger: snapshot is ahead of the local commitlog")

// Snapshot saves the metadata and captures the manifest. Runs on the FSM
// goroutine, so it writes no message data: the snapshot store forces the
// CommitLog, queues and index to disk before it writes the manifest
// (snapshotSink.finalise, on raft's snapshot goroutine), which covers
// everything captured here. Under ASYNC_FLUSH that flush holds up to a
// flush interval of appends, and on the FSM goroutine it would stop
// every apply, and so every answer, for as long.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	if f.converting() {
		// raft counts entries after the switch as applied that this store
		// never took: a snapshot past it would lose them.
		return nil, fmt.Errorf("dledger: snapshot: %w: the group switched to one log at entry %d", ErrRestartNeeded, f.meta.OneLogSince())
	}
	return f.snapshot()
}

// snapshot is Snapshot without the check (the conversion's own snapshot).
func (f *fsm) snapshot() (raft.FSMSnapshot, error) {
	meta, err := f.meta.Marshal()
	if err != nil {
		return nil, fmt.Errorf("dledger: snapshot: %w", err)
	}
	if err := f.meta.Save(f.metaPath); err != nil {
		return nil, fmt.Errorf("dledger: snapshot: %w", err)
	}
	f.snapshots.Add(1)
	if f.snapCount != nil {
		f.snapCount.snapshotTaken()
	}
	return &fsmSnapshot{m: manifest{
		Version:      1,
		StoreSeq:     f.store.LastSeq(),
		CommitLogMin: f.store.MinPhysicalOffset(),
		// With one log, the entries after the applied ones are not the
		// snapshot's (a snapshot installed elsewhere ends there).
		CommitLogMax: f.store.AppliedEnd(),
		Metadata:     meta,
	}}, nil
}

// Restore is called when the leader installs a snapshot on this node. The
// node keeps its CommitLog when it already holds the snapshot's data;
// otherwise the snapshot's CommitLog segments replace it (install). The
// snapshot store's own reader points at the staged files; any other stream
// is staged first.
func (f *fsm) Restore(rc io.ReadCloser) (err error) {
	defer rc.Close()
	defer func() {
		if err == nil {
			f.restores.Add(1)
		}
	}()
	if st, ok := unwrapReader(rc).(stagedSnapshot); ok {
		dir := st.StagedDir()
		raw, err := readManifestFile(stagedManifestPath(dir))
		if err != nil {
			return fmt.Errorf("dledger: restore: %w", err)
		}
		m, err := decodeManifest(raw)
		if err != nil {
			return fmt.Errorf("dledger: restore: %w", err)
		}
		idx, term := st.SnapshotIndex(), st.SnapshotTerm()
		var last uint64
		if li := f.lastIndex.Load(); li != nil {
			last = (*li)()
		}
		var restoredBefore uint64
		if f.snaps != nil {
			restoredBefore = f.snaps.restored.Load()
		}
		if err := f.install(dir, m, idx); err != nil {
			return err
		}
		f.restartIfSwitched(idx)
		if f.store.OneLog() && last > idx && f.snaps != nil && f.snaps.restored.Load() != restoredBefore && f.fail != nil {
			// The CommitLog, and so the raft log, now ends at the snapshot,
			// while raft still counts the entries it held after it: only a
			// restart makes raft read the log again.
			f.fail(fmt.Errorf("%w: raft installed snapshot %d over a log reaching %d; restart the node to resume replication",
				ErrRestartNeeded, idx, last))
		}
		if f.rlog != nil {
			plan := &installPlan{index: idx}
			if last > idx {
				t, ok := f.rlog.termAt(idx)
				plan.retain = ok && t == term
				if !plan.retain {
					// The log after the snapshot does not continue it: raft
					// deletes it all but keeps its last index (installPlan),
					// which only a restart corrects.
					plan.afterFull = func() {
						f.fail(fmt.Errorf("%w: raft installed snapshot %d (term %d) over a log reaching %d that does not continue it; restart the node to resume replication",
							ErrRestartNeeded, idx, term, last))
					}
				}
			}
			f.rlog.plan.Store(plan)
		}
		return nil
	}
	dir, m, err := f.stageStream(rc)
	if dir != "" {
		defer os.RemoveAll(dir)
	}
	if err != nil {
		return err
	}
	if err := f.install(dir, m, 0); err != nil {
		return err
	}
	f.restartIfSwitched(0)
	return nil
}

type fsmSnapshot struct{ m manifest }

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(s.m); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("dledger: persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}
