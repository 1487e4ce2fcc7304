package dledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/internal/vfs"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/store"
)

// raftRPCsInFlight is the transport's MaxRPCsInFlight. Below 2 raft does not
// pipeline AppendEntries: each follower gets one request at a time, carrying
// every entry it lacks. raft's pipeline (v1.8.0) can deadlock: when a
// follower answers Success=false the response decoder exits, and a send
// racing with that blocks forever on the transport's unbuffered channels,
// which then hangs Shutdown (and, before that, stops replication to that
// follower while heartbeats go on). With at most MaxInFlight entries
// proposed at a time the pipeline adds little.
const raftRPCsInFlight = 1

// logCacheEntries is how many recent raft entries the leader keeps in
// memory for replication (at most logCacheEntries × MaxBatchBytes bytes).
const logCacheEntries = 64

// raftLogEvery is how often raft may repeat one warning or error about one
// peer (the lines in between are counted, see throttledLogger).
const raftLogEvery = 10 * time.Second

// Group is this node's member of a broker group: a hashicorp/raft node
// whose FSM is the message store and the replicated metadata.
type Group struct {
	cfg Config
	log hclog.Logger
	// store is opened (by cfg.Stores) and closed here; the parts see it
	// only through the interfaces of storage.go (checks: the proposer's).
	store  Storage
	checks recordChecks
	// dups is the store's duplicate window, asked by the proposer
	// (duplicates.go).
	dups duplicateWindow
	meta *metadata.State
	fsm  *fsm
	wal  *raftLog // nil with one log
	// logs and stable are raft's log and stable store: raft-wal, or with
	// one log (Config.OneLog) the CommitLog and a small file.
	logs   raft.LogStore
	stable raft.StableStore
	clog   *commitLogRaftLog
	fstab  *fileStable
	snaps  raft.SnapshotStore
	trans  *raft.NetworkTransport
	// gate is raft's transport while the node abstains (abstain.go): nil
	// for a node that started without cause to.
	gate *voteGate
	mux  *muxLayer
	raft *raft.Raft
	prop *proposer
	// own marks the entries this node proposed, checked when encoded.
	own *ownEntries
	ids *message.UniqIDGenerator

	notifyCh chan bool
	obsCh    chan raft.Observation
	observer *raft.Observer

	// raftDone is closed once raft has shut down: it answers no future
	// after that (see awaitRaft).
	raftDone     chan struct{}
	raftDoneOnce sync.Once
	// failedCh is closed when the node stops itself (fail), failDone once
	// fail's hand-over and raft's shutdown are over.
	failedCh, failDone chan struct{}

	ready atomic.Bool // leader and caught up with its term (Barrier done)
	role  atomic.Pointer[RoleEvent]
	// roleChanged is closed, and replaced, at every new role event
	// (RoleChanged).
	roleChanged atomic.Pointer[chan struct{}]
	// liveRaft is raft once created, for its logger's lines (which start
	// before newRaft returns, so before g.raft is set).
	liveRaft atomic.Pointer[raft.Raft]
	failed   atomic.Pointer[error]
	closed   atomic.Bool
	// lastStepDown is when this leader last handed leadership away because
	// its store could not write (unix nanoseconds).
	lastStepDown atomic.Int64
	// versionChecks counts the leader's checks of its members' versions.
	versionChecks atomic.Uint64
	// drained: the node hands leadership away and does not campaign
	// (drain.go).
	drained atomic.Bool
	// timingMu orders the changes of raft's timeouts (drain.go,
	// leadergone.go).
	timingMu sync.Mutex
	// leaderGoneSeen counts the times this follower found its leader gone,
	// earlyCampaigns the times it then lowered its heartbeat timeout at
	// its turn (leadergone.go).
	leaderGoneSeen, earlyCampaigns atomic.Uint64
	// abstaining: the node neither votes nor campaigns until it has
	// recovered what a machine crash may have taken (boot.go, abstain.go).
	// bootID and unsynced are what its boot record says of this run.
	abstaining atomic.Bool
	bootID     string
	unsynced   bool
	// wantOneLog is Config.OneLog as configured; cfg.OneLog is the layout
	// the node runs (chooseLayout).
	wantOneLog bool
	// switching: this leader proposed the switch to one log (convert.go).
	switching atomic.Bool
	// layout is the layout the node runs (layoutIsWAL, layoutIsCommitLog),
	// layoutUndecided until it is known (layout.go); node info reports it.
	layout atomic.Int32

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Open starts this node: it recovers the store, opens the raft log,
// bootstraps the group from cfg.Peers when no raft state exists, and joins
// the group. It returns once raft runs; leadership comes later (RoleEvents,
// WaitLeader).
func Open(cfg Config) (*Group, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Group{
		cfg:      cfg,
		log:      cfg.Logger.Named("dledger").With("group", cfg.Group, "node", cfg.NodeID),
		meta:     metadata.New(),
		notifyCh: make(chan bool, 16),
		raftDone: make(chan struct{}),
		failedCh: make(chan struct{}),
		failDone: make(chan struct{}),
		obsCh:    make(chan raft.Observation, 64),
	}
	changed := make(chan struct{})
	g.roleChanged.Store(&changed)
	g.ids = message.NewUniqIDGenerator(cfg.StoreHost.Addr(), os.Getpid(), cfg.Clock)
	g.ctx, g.cancel = context.WithCancel(context.Background())
	if err := g.open(); err != nil {
		g.cancel()
		g.closeParts(false)
		return nil, err
	}
	return g, nil
}

func (g *Group) open() error {
	raftDir := filepath.Join(g.cfg.DataDir, "raft")
	// The metadata first: once the group has recorded its settings, the
	// store is opened with them, whatever this node's configuration says
	// (its files were written with them).
	metaPath := filepath.Join(g.cfg.DataDir, "metadata.json")
	if err := g.meta.Load(metaPath); err != nil {
		return fmt.Errorf("dledger: %w", err)
	}
	scfg := g.cfg.Store
	scfg.Dir = filepath.Join(g.cfg.DataDir, "store")
	scfg.Logger = g.log
	if scfg.Faults == nil && g.cfg.Faults != nil {
		scfg.Faults = g.cfg.Faults
	}
	if err := g.cfg.FS.RemoveAll(filepath.Join(raftDir, walConvertedName)); err != nil {
		return fmt.Errorf("dledger: %w", err)
	}
	g.wantOneLog = g.cfg.OneLog
	if err := g.cfg.FS.MkdirAll(raftDir); err != nil {
		return err
	}
	prevBoot, hadBoot, err := readBootRecord(raftDir)
	if err != nil {
		return &StartError{NodeID: g.cfg.NodeID, DataDir: g.cfg.DataDir, Part: "raft log", Path: raftDir, Err: err}
	}
	g.bootID = g.cfg.BootID()
	g.abstaining.Store(mayHaveLost(prevBoot, hadBoot, g.bootID))
	// The raft port first: it answers node info (supported format versions
	// and the layout) beside raft's RPCs, and a node without data learns
	// its group's layout from the others' (layout.go) while they ask it.
	stream := g.cfg.StreamLayer
	if stream == nil {
		var err error
		if stream, err = newTCPLayer(g.cfg.BindAddr, g.cfg.AdvertiseAddr, g.cfg.TLS, g.cfg.Resolver); err != nil {
			return err
		}
	}
	g.mux = newMuxLayer(stream, g.nodeInfo, g.log.Named("peerinfo"))
	oneLog, convert, ask, err := chooseLayout(g.cfg.Stores, g.cfg.OneLog, g.meta, scfg.Dir, raftDir)
	if err == nil && ask {
		oneLog, err = g.groupLayout()
	}
	if err != nil {
		return &StartError{NodeID: g.cfg.NodeID, DataDir: g.cfg.DataDir, Part: "raft log", Path: raftDir, Err: err}
	}
	if oneLog {
		g.layout.Store(layoutIsCommitLog)
	} else {
		g.layout.Store(layoutIsWAL)
	}
	if oneLog != g.cfg.OneLog {
		g.log.Info("the node's data decides its layout", "one_log", oneLog, "configured", g.cfg.OneLog)
	}
	g.cfg.OneLog = oneLog
	cfg := g.cfg
	mk := filepath.Join(raftDir, "wal")
	if cfg.OneLog {
		mk = raftDir
	}
	if err := g.cfg.FS.MkdirAll(mk); err != nil {
		return err
	}
	if gs, ok := g.meta.Settings(); ok {
		scfg, g.cfg.DelayLevels = adoptOnStart(g.log, gs, scfg, cfg.DelayLevels)
	}
	if err := scfg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if convert {
		if err := g.convertToOneLog(scfg, raftDir, metaPath); err != nil {
			return &StartError{NodeID: cfg.NodeID, DataDir: cfg.DataDir, Part: "conversion to one log", Path: raftDir, Err: err}
		}
	}
	if cfg.OneLog {
		if err := noRaftWAL(filepath.Join(raftDir, "wal")); err != nil {
			return &StartError{NodeID: cfg.NodeID, DataDir: cfg.DataDir, Part: "raft log", Path: filepath.Join(raftDir, "wal"), Err: err}
		}
		scfg.OneLog = true
		scfg.CommittedSeq, scfg.EntriesFrom = newestSnapshotBounds(filepath.Join(raftDir, snapshotsDirName))
		scfg.EntryDeletes = deletesTopic
	}
	// Under ASYNC_FLUSH the one-log store does not fsync each append: the
	// boot record says so before the first such append.
	g.unsynced = cfg.OneLog && scfg.FlushMode == store.FlushAsync
	if err := writeBootRecord(g.cfg.FS, raftDir, bootRecord{BootID: g.bootID, Unsynced: g.unsynced || (prevBoot.Unsynced && !prevBoot.Clean),
		Recovering: g.abstaining.Load()}); err != nil {
		return &StartError{NodeID: cfg.NodeID, DataDir: cfg.DataDir, Part: "raft log", Path: raftDir, Err: err}
	}
	if g.abstaining.Load() {
		g.log.Warn("this node stopped without flushing its log and the machine has restarted since: it may have lost entries it acknowledged, and it neither votes nor campaigns until its log holds what the leader's held when it came back",
			"last_boot_id", prevBoot.BootID, "boot_id", g.bootID)
	}
	if g.store, err = g.cfg.Stores.OpenStore(scfg); err != nil {
		if errors.Is(err, vfs.ErrLocked) {
			return fmt.Errorf("dledger: %w", err)
		}
		return &StartError{NodeID: cfg.NodeID, DataDir: cfg.DataDir, Part: "message store", Path: scfg.Dir, Err: err}
	}
	g.own = &ownEntries{}
	g.checks = g.store
	g.dups = g.store
	g.fsm = &fsm{store: g.store, meta: g.meta, metaPath: metaPath, fail: g.fail, log: g.log,
		delayLevels: g.cfg.DelayLevels, maxFormat: cfg.MaxFormatVersion, recent: newAppliedRing(), own: g.own, faults: cfg.Faults,
		verifier: verifierState{readFiles: cfg.VerifyFiles}}
	g.fsm.verifier.lastTo.Store(-1)
	g.fsm.recent.skipOffsets = cfg.OneLog
	walDir := filepath.Join(raftDir, "wal")
	var counter *snapshotCounter
	if cfg.OneLog {
		walDir = filepath.Join(raftDir, stableFileName)
		if g.fstab, err = openFileStable(g.cfg.FS, walDir); err != nil {
			return &StartError{NodeID: cfg.NodeID, DataDir: cfg.DataDir, Part: "raft log", Path: walDir, Err: err}
		}
		g.clog = &commitLogRaftLog{st: g.store, own: g.own, fail: g.fail, observer: cfg.LogObserver, faults: cfg.Faults}
		g.logs, g.stable, counter = g.clog, g.fstab, &g.clog.snapshotCounter
	} else {
		if g.wal, err = openRaftLog(walDir, g.log.Named("wal"), cfg.RaftSegmentSize, cfg.Faults, cfg.Store.SyncReport); err != nil {
			return &StartError{NodeID: cfg.NodeID, DataDir: cfg.DataDir, Part: "raft log", Path: walDir, Err: err}
		}
		g.wal.observer = cfg.LogObserver
		g.fsm.rlog = g.wal
		g.logs, g.stable, counter = g.wal, g.wal, &g.wal.snapshotCounter
	}
	counter.snapshotBytes = cfg.SnapshotBytes
	counter.snapshotDue = make(chan struct{}, 1)
	g.fsm.snapCount = counter
	if g.snaps, err = newSnapshotStore(raftDir, g.fsm, g.cfg.FS, g.log.Named("snapshots")); err != nil {
		return fmt.Errorf("dledger: open snapshots: %w", err)
	}
	g.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: g.mux, MaxPool: 3, Timeout: 10 * time.Second, Logger: g.log.Named("transport"),
		MaxRPCsInFlight: raftRPCsInFlight,
	})
	var trans raft.Transport = g.trans
	if g.abstaining.Load() {
		g.gate = newVoteGate(g.trans, raft.ServerID(cfg.NodeID), &g.abstaining)
		trans = g.gate
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.HeartbeatTimeout = cfg.Timing.HeartbeatTimeout
	rc.ElectionTimeout = cfg.Timing.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.Timing.LeaderLease
	rc.CommitTimeout = cfg.Timing.CommitTimeout
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.TrailingLogs = cfg.TrailingLogs
	rc.NoSnapshotRestoreOnStart = true
	// Unbuffered: with a buffered apply channel raft can accept an Apply
	// after Shutdown and never resolve its future (the proposer batches
	// entries itself, so nothing is lost by this).
	rc.BatchApplyCh = false
	rc.MaxAppendEntries = 256
	rc.NotifyCh = g.notifyCh
	// A peer that is down makes raft repeat the same error several times
	// a second: one line per peer and message every raftLogEvery.
	// raft's lines say nothing of the node's role and term: each carries
	// them as raft has them when it is written (logFields).
	// Until a peer was reached once, failing to reach it is logged at
	// Debug for a while: the members of a group start one by one.
	rl := newThrottledLogger(g.log.Named("raft"), raftLogEvery, time.Now, g.logFields)
	rl.t.reached = g.mux.reached
	rc.Logger = rl
	rc.NoLegacyTelemetry = true

	existing, err := raft.HasExistingState(g.logs, g.stable, g.snaps)
	if err != nil {
		return fmt.Errorf("dledger: %w", err)
	}
	if !existing && g.store.LastSeq() > 0 {
		// The store applied entries this raft log no longer has: the log
		// (or its metadata) was lost or replaced. Bootstrapping or joining
		// empty would make a voter forget what it acknowledged.
		return &StartError{NodeID: cfg.NodeID, DataDir: cfg.DataDir, Part: "raft log", Path: walDir,
			Err: fmt.Errorf("it holds no raft state, but the message store has applied entries up to raft index %d: the raft log was lost", g.store.LastSeq())}
	}
	joining := waitsToJoin(cfg.DataDir)
	switch {
	case existing && joining:
		// Added back and caught up once: the marker has done its job.
		if err := cfg.FS.Remove(filepath.Join(cfg.DataDir, JoinMarker)); err != nil {
			g.log.Warn("cannot remove the join marker", "error", err)
		}
	case !existing && joining:
		g.log.Warn("this node was rebuilt and has no raft state: it does not bootstrap and waits for the leader to add it back")
	}
	if !existing && !joining && len(cfg.Peers) > 0 {
		var conf raft.Configuration
		for _, p := range cfg.Peers {
			conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
		}
		if err := raft.BootstrapCluster(rc, g.logs, g.stable, g.snaps, trans, conf); err != nil {
			return fmt.Errorf("dledger: bootstrap: %w", err)
		}
	}
	// Recent entries are served to replication from memory, not re-read
	// from the log files. The cache counts entries, and an entry carries up
	// to MaxBatchBytes, so it is kept small: followers in step need only
	// the last MaxInFlight entries, and one further behind reads the log.
	logs, err := raft.NewLogCache(logCacheEntries, g.logs)
	if err != nil {
		return fmt.Errorf("dledger: log cache: %w", err)
	}
	if g.raft, err = newRaft(rc, g.fsm, logs, g.stable, g.snaps, trans); err != nil {
		return &StartError{NodeID: cfg.NodeID, DataDir: cfg.DataDir, Part: "raft log", Path: walDir, Err: err}
	}
	g.liveRaft.Store(g.raft)
	lastIndex := g.raft.LastIndex
	g.fsm.lastIndex.Store(&lastIndex)
	if cfg.beforeObserve != nil {
		cfg.beforeObserve(cfg.NodeID, g.raft)
	}
	g.observer = raft.NewObserver(g.obsCh, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	g.raft.RegisterObserver(g.observer)
	g.prop = newProposer(g)
	g.prop.start(g.ctx, &g.wg)
	g.wg.Add(3)
	go g.watchRoles()
	go g.watchLeaderGone()
	go func() {
		defer g.wg.Done()
		g.snapshotOnBytes(g.ctx, counter.snapshotDue)
	}()
	if g.abstaining.Load() {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			g.abstainUntilSafe(g.ctx)
		}()
	}
	if cfg.PreferredLeader != "" {
		g.whileLeading(2*cfg.Timing.ElectionTimeout, g.preferLeader)
	}
	g.whileLeading(2*cfg.Timing.ElectionTimeout, func() {
		g.raiseVersion()
		g.switchToOneLog()
	})
	if err := g.restoreDrain(); err != nil {
		return err
	}
	g.whileLeading(cfg.Timing.ElectionTimeout, g.leaveIfDrained)
	if cfg.VerifyInterval > 0 {
		g.whileLeading(cfg.VerifyInterval, g.proposeCheckpoint)
	}
	g.log.Info("raft node started", "existing_state", existing, "timing", cfg.Timing.Name,
		"store_seq", g.store.LastSeq(), "metadata_index", g.meta.AppliedIndex())
	return nil
}

// newRaft is raft.NewRaft with its start-up panic turned into an error.
// NewRaft reads every log entry after the last snapshot to find
// configuration changes and panics when one cannot be read (raft-wal's
// "sealed segment has no index block" after a tail truncation on v0.4.0,
// a damaged segment file): that happens before it starts any goroutine, so
// the node can report which files are at fault and exit instead of dying
// with a stack trace, every restart alike.
func newRaft(rc *raft.Config, fsm raft.FSM, logs raft.LogStore, stable raft.StableStore, snaps raft.SnapshotStore,
	trans raft.Transport) (r *raft.Raft, err error) {
	defer func() {
		if p := recover(); p != nil {
			if e, ok := p.(error); ok {
				err = fmt.Errorf("reading the log: %w", e)
			} else {
				err = fmt.Errorf("reading the log: %v", p)
			}
		}
	}()
	return raft.NewRaft(rc, fsm, logs, stable, snaps, trans)
}

// fail stops this node after its store failed to write: it hands over
// leadership if it can and shuts raft down, as a crash would, but with a
// reason on record. Called from the FSM goroutine; the work runs on a
// goroutine the group owns (raft.Shutdown waits for the FSM goroutine).
func (g *Group) fail(err error) {
	e := fmt.Errorf("%w: %w", ErrFailed, err)
	if !g.failed.CompareAndSwap(nil, &e) {
		return
	}
	g.log.Error("stepping down and stopping this node", "error", err)
	g.ready.Store(false)
	close(g.failedCh)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer close(g.failDone)
		if g.raft.State() == raft.Leader {
			_ = g.awaitRaft(g.raft.LeadershipTransfer())
		}
		_ = g.shutdownRaft()
		g.setRole(RoleEvent{Role: RoleShutdown, Term: g.raft.CurrentTerm()})
	}()
}

// Failed is closed when the node has stopped itself (a store that cannot
// write, or raft in a state only a restart clears); Err's error says why.
// The process should exit then, so that its supervisor starts it again.
func (g *Group) Failed() <-chan struct{} { return g.failedCh }

// Err is why the node stopped itself, or nil.
func (g *Group) Err() error { return g.failure() }

func (g *Group) failure() error {
	if p := g.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Close stops this node gracefully: as leader it first hands leadership to
// a caught-up follower (bounded by the election timeout), then stops raft,
// fails queued proposals with ErrClosed and closes the store cleanly.
func (g *Group) Close() error { return g.close(true) }

// CloseWithoutHandOver is Close without the hand-over, for a stop of the
// whole group: the followers are stopping too, so a transfer could only
// wait and fail.
func (g *Group) CloseWithoutHandOver() error { return g.close(false) }

func (g *Group) close(handOver bool) error {
	if !g.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	g.ready.Store(false)
	if handOver && g.raft.State() == raft.Leader && len(g.raft.GetConfiguration().Configuration().Servers) > 1 {
		if err := g.awaitRaft(g.raft.LeadershipTransfer()); err != nil {
			g.log.Warn("leadership transfer before shutdown failed", "error", err)
		}
	}
	g.cancel()
	return g.closeParts(true)
}

// Kill stops this node the way kill -9 would as far as its files are
// concerned: no leadership transfer, no flush, no clean store checkpoint.
// For crash tests.
func (g *Group) Kill() error {
	if !g.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	g.ready.Store(false)
	g.cancel()
	return g.closeParts(false)
}

func (g *Group) closeParts(clean bool) error {
	select {
	case <-g.failedCh:
		// fail's hand-over first: raft answers a transfer it has taken
		// only while it runs (it times out after an election timeout), so
		// shutting it down under one would leave fail waiting for ever.
		<-g.failDone
	default:
	}
	var errs []error
	if g.raft != nil {
		g.raft.DeregisterObserver(g.observer)
		errs = append(errs, g.shutdownRaft())
	}
	g.wg.Wait()
	if g.gate != nil {
		errs = append(errs, g.gate.Close())
	} else if g.trans != nil {
		errs = append(errs, g.trans.Close())
	}
	if g.mux != nil {
		_ = g.mux.Close()
		g.mux.wait()
	}
	if g.wal != nil {
		errs = append(errs, g.wal.Close())
	}
	if g.fstab != nil {
		errs = append(errs, g.fstab.Close())
	}
	if g.store != nil {
		if clean {
			if err := g.meta.Save(g.fsm.metaPath); err != nil {
				errs = append(errs, err)
			}
			err := g.store.Close()
			errs = append(errs, err)
			if err == nil {
				// Everything is flushed: nothing a crash of the machine
				// could take is left.
				errs = append(errs, writeBootRecord(g.cfg.FS, g.raftDir(), bootRecord{BootID: g.bootID, Unsynced: g.unsynced,
					Clean: true, Recovering: g.abstaining.Load()}))
			}
		} else {
			errs = append(errs, g.store.CloseUnclean())
		}
	}
	var out []error
	for _, e := range errs {
		if e != nil && !errors.Is(e, store.ErrClosed) {
			out = append(out, e)
		}
	}
	return errors.Join(out...)
}

// raftDir is where the raft log's files (or, with one log, its state)
// lie.
func (g *Group) raftDir() string { return filepath.Join(g.cfg.DataDir, "raft") }

// Storage is the node's message store as the group holds it, opened by
// Config.Stores: its dynamic value is what that opener returned (for
// reads: Get, lookups; writes go through Propose).
func (g *Group) Storage() Storage { return g.store }

// Metadata is the node's replicated metadata, for reads.
func (g *Group) Metadata() *metadata.State { return g.meta }

// NodeID is this node's id.
func (g *Group) NodeID() string { return g.cfg.NodeID }

// Raft exposes the raft node for introspection (admin tools, tests).
func (g *Group) Raft() *raft.Raft { return g.raft }

// logFields are the role and term raft's log lines carry: raft's state and
// term when the line is written (atomic reads, no raft lock), not the last
// role event, which follows them only after a notification. None while
// raft is being created.
func (g *Group) logFields() []interface{} {
	r := g.liveRaft.Load()
	if r == nil {
		return nil
	}
	return []interface{}{"role", raftRoleName(r.State()), "term", r.CurrentTerm()}
}

// raftRoleName is the role name of a raft state.
func raftRoleName(s raft.RaftState) string {
	switch s {
	case raft.Leader:
		return RoleLeader
	case raft.Candidate:
		return RoleCandidate
	case raft.Shutdown:
		return RoleShutdown
	}
	return RoleFollower
}
