package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/commitlog"
	"github.com/ledgermq/ledgermq/consumequeue"
	"github.com/ledgermq/ledgermq/dedup"
	"github.com/ledgermq/ledgermq/index"
	"github.com/ledgermq/ledgermq/internal/vfs"
)

type queueKey struct {
	topic string
	id    int32
}

// queueState is the writer's view of one queue: its ConsumeQueue and the
// next queue offset Put assigns. Guarded by Store.mu.
type queueState struct {
	q    *consumequeue.Queue
	next int64
}

// Store is the message store: CommitLog, ConsumeQueues and IndexFile under
// one roof. See the package documentation for the concurrency contract.
type Store struct {
	cfg Config
	log hclog.Logger

	lock *vfs.DirLock
	// rw guards the three parts below against RestoreFrom, which replaces
	// them (write mode); readers take it in read mode. Lock order: rw, mu.
	rw  sync.RWMutex
	cl  *commitlog.Log
	cq  *consumequeue.Store
	idx *index.Service

	// mu serializes writers: Put, checkpoint snapshots, DeleteTopic and
	// retention's queue trimming.
	mu       sync.Mutex
	queues   map[queueKey]*queueState
	recorded map[queueKey]QueueState // queue table of the last checkpoint
	dirty    bool                    // written since the last checkpoint
	// idxFlushedAt and idxFlushedPhy: when the checkpoint last flushed
	// the IndexFile and the index's MaxPhyOffset then. The zero time
	// makes the next checkpoint flush (recovery resets it).
	idxFlushedAt  time.Time
	idxFlushedPhy int64
	// idxPending counts the index entries put since the index was last
	// flushed (what recovery after a crash would index again).
	idxPending int64
	writeErr   error // sticky: the CommitLog could not be written
	// lastHole is the CommitLog offset of the newest corrupt range seen by
	// recovery; queue slots whose record was lost to it point there.
	lastHole int64

	lastSeq atomic.Uint64
	// maxMsg is MaxMessageSize and segSize SegmentSize, read without a
	// lock: SetMaxMessageSize and Reconfigure change them.
	maxMsg    atomic.Int64
	segSize   atomic.Int64
	diskRatio atomic.Uint64 // float64 bits, refreshed by the clean loop

	corruptMu sync.Mutex
	corrupt   []commitlog.CorruptRange
	seenBad   map[int64]bool

	recovery RecoveryReport

	// ents is the raft log's view of the CommitLog (Config.OneLog).
	ents entryTable

	// backlog is the duplicate window's source and dups its index, built
	// on the node that asks (duplicates.go); backlog is nil when the
	// window is off. Both change under mu; lookups take dups' own lock.
	backlog *dupBacklog
	dups    atomic.Pointer[dedup.Window]
	// dupsWritten is the offset the window file holds (-1: unknown); the
	// checkpoint rewrites the file only when it changes.
	dupsWritten atomic.Int64
	// dupsSpan is the backlog's reach in ms while it is full, -1 while it
	// is not (DuplicateSpan).
	dupsSpan atomic.Int64

	// unverified holds the checkpoint's queue states not yet checked
	// against their files (queueKey -> QueueState); see verify.go.
	unverified    sync.Map
	rebuiltQueues atomic.Int64

	closed atomic.Bool
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Open opens (creating if needed) the store in cfg.Dir, recovers it (see
// Recover in the package documentation) and starts the background
// checkpoint and retention loops, which Close stops.
func Open(cfg Config) (*Store, error) {
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	cfg.FS = vfs.Or(cfg.FS)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lock, err := vfs.Lock(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	s := &Store{
		cfg:      cfg,
		log:      cfg.Logger.Named("store"),
		lock:     lock,
		queues:   map[queueKey]*queueState{},
		recorded: map[queueKey]QueueState{},
		seenBad:  map[int64]bool{},
		lastHole: -1,
	}
	s.maxMsg.Store(int64(cfg.MaxMessageSize))
	s.segSize.Store(cfg.SegmentSize)
	s.backlog = newBacklog(cfg.Duplicates)
	s.dupsWritten.Store(-1)
	s.dupsSpan.Store(-1)
	s.ents.reset(0)
	if err := checkLayout(cfg); err != nil {
		lock.Release()
		return nil, err
	}
	if err := s.openParts(); err != nil {
		s.closeParts()
		return nil, err
	}
	if err := s.recover(); err != nil {
		s.closeParts()
		return nil, err
	}
	s.rebuildDuplicates(s.dispatchedEnd())
	// Record at once that this run has not stopped cleanly yet, and make
	// what recovery rebuilt durable.
	if err := s.checkpoint(false); err != nil {
		s.closeParts()
		return nil, err
	}
	s.refreshDiskRatio()
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(2)
	go s.every(ctx, s.cfg.CheckpointInterval, "checkpoint", func() error { return s.checkpoint(false) })
	go s.every(ctx, s.cfg.CleanInterval, "retention", func() error { _, err := s.Clean(false); return err })
	return s, nil
}

func (s *Store) openParts() error {
	clCfg := commitlog.DefaultConfig(filepath.Join(s.cfg.Dir, "commitlog"))
	clCfg.SegmentSize = s.cfg.SegmentSize
	clCfg.FlushMode = s.cfg.FlushMode
	if s.cfg.OneLog {
		// AppendEntries waits for its own entries to be durable (raft
		// counts on it); the flusher also runs on its interval.
		clCfg.FlushMode = commitlog.FlushAsync
		clCfg.KeepFrom = s.CompactedEnd
	}
	clCfg.FlushInterval = s.cfg.FlushInterval
	clCfg.FileReservedTime = s.cfg.FileReservedTime
	clCfg.DiskMaxUsedSpaceRatio = s.cfg.DiskMaxUsedSpaceRatio
	clCfg.Preallocate = s.cfg.Preallocate
	clCfg.CacheWindow = s.cfg.CacheWindow
	clCfg.Clock = s.cfg.Clock
	clCfg.Logger = s.cfg.Logger
	clCfg.SyncReport = s.cfg.SyncReport
	clCfg.FS = s.cfg.FS
	var err error
	if s.cl, err = commitlog.Open(clCfg); err != nil {
		return fmt.Errorf("store: open commitlog: %w", err)
	}
	if s.cq, err = consumequeue.Open(consumequeue.Config{
		Dir:          filepath.Join(s.cfg.Dir, "consumequeue"),
		UnitsPerFile: s.cfg.UnitsPerQueueFile,
		MaxOpenFiles: s.cfg.MaxOpenQueueFiles,
		Logger:       s.cfg.Logger,
		SyncReport:   s.cfg.SyncReport,
		FS:           s.cfg.FS,
	}); err != nil {
		return fmt.Errorf("store: open consumequeue: %w", err)
	}
	if s.idx, err = index.Open(index.Config{
		Dir:        filepath.Join(s.cfg.Dir, "index"),
		SlotNum:    s.cfg.IndexSlots,
		MaxEntries: s.cfg.IndexEntries,
		Logger:     s.cfg.Logger,
		FS:         s.cfg.FS,
	}); err != nil {
		return fmt.Errorf("store: open index: %w", err)
	}
	return nil
}

func (s *Store) closeParts() error { return s.closePartsMode(false) }

// closePartsMode closes the parts; unclean: the ConsumeQueue's units held
// in memory are lost, as a killed process loses them (CloseUnclean).
func (s *Store) closePartsMode(unclean bool) error {
	var errs []error
	if s.idx != nil {
		errs = append(errs, s.idx.Close())
	}
	switch {
	case s.cq != nil && unclean:
		errs = append(errs, s.cq.CloseUnclean())
	case s.cq != nil:
		errs = append(errs, s.cq.Close())
	}
	if s.cl != nil {
		errs = append(errs, s.cl.Close())
	}
	errs = append(errs, s.lock.Release())
	return errors.Join(errs...)
}

// Close stops the background loops, flushes everything, writes a clean
// checkpoint and releases the directory. Concurrent Puts must have returned;
// readers must have released their results.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	s.cancel()
	s.wg.Wait()
	err := s.checkpoint(true)
	return errors.Join(err, s.closeParts())
}

// Dir is the store's root directory (Config.Dir). Owners of data derived
// from the store (the broker's timer index) keep it beside this one.
func (s *Store) Dir() string { return s.cfg.Dir }

// LastSeq is the highest sequence number whose batch is in the store: after
// recovery, the last batch whose records and marker survived.
func (s *Store) LastSeq() uint64 { return s.lastSeq.Load() }

// MinPhysicalOffset and MaxPhysicalOffset bound the CommitLog's bytes.
func (s *Store) MinPhysicalOffset() int64 {
	s.rw.RLock()
	defer s.rw.RUnlock()
	return s.cl.MinOffset()
}

// MaxPhysicalOffset is the CommitLog write position.
func (s *Store) MaxPhysicalOffset() int64 {
	s.rw.RLock()
	defer s.rw.RUnlock()
	return s.cl.MaxOffset()
}

// Recovery describes what the last Open found and did.
func (s *Store) Recovery() RecoveryReport {
	s.rw.RLock()
	defer s.rw.RUnlock()
	return s.recovery
}

// CorruptRanges lists every corrupt CommitLog range found by recovery or by
// a read since Open, in the order found.
func (s *Store) CorruptRanges() []commitlog.CorruptRange {
	s.corruptMu.Lock()
	defer s.corruptMu.Unlock()
	return append([]commitlog.CorruptRange(nil), s.corrupt...)
}

func (s *Store) reportCorrupt(r commitlog.CorruptRange) {
	s.corruptMu.Lock()
	defer s.corruptMu.Unlock()
	if s.seenBad[r.Offset] {
		return
	}
	s.seenBad[r.Offset] = true
	s.corrupt = append(s.corrupt, r)
	s.log.Error("corrupt commitlog record", "offset", r.Offset, "length", r.Length, "error", r.Err)
}

// Flush forces the CommitLog, queues and index to disk and writes a
// checkpoint.
func (s *Store) Flush() error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.rw.RLock()
	defer s.rw.RUnlock()
	return s.checkpoint(false)
}

// every runs fn every interval until ctx is done, logging its errors. It
// is the body of the store's background goroutines; Close waits for them.
func (s *Store) every(ctx context.Context, interval time.Duration, what string, fn func() error) {
	defer s.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := fn(); err != nil {
				s.log.Error(what+" failed", "error", err)
			}
		}
	}
}

// checkpoint flushes the CommitLog up to the current write position, then
// the queues and the index, then records that position. Everything before
// it is therefore durable in all three, and recovery replays only after it.
func (s *Store) checkpoint(clean bool) error {
	s.mu.Lock()
	if !s.dirty && !clean {
		s.mu.Unlock()
		return nil
	}
	if s.writeErr != nil {
		// A Put failed part-way (a full disk: the CommitLog may hold a
		// batch whose queue units or index entries are not all written).
		// A checkpoint now would vouch for that batch as dispatched while
		// LastSeq does not count it, so the next start would take the
		// batch again from the raft log and store it twice. Without one,
		// recovery scans from the last good checkpoint and dispatches it.
		s.mu.Unlock()
		return nil
	}
	now := s.cfg.Clock()
	idxPending := s.idxPending
	c := Checkpoint{
		Clean:           clean,
		CommitLogOffset: s.cl.MaxOffset(),
		Seq:             s.lastSeq.Load(),
		IndexPhyOffset:  s.idxFlushedPhy,
	}
	if s.cfg.OneLog {
		// What follows the dispatched entries may not be committed: the
		// checkpoint vouches for the dispatched ones only.
		c.CommitLogOffset = s.ents.applied
	}
	var dupsFrom int64
	if s.backlog != nil {
		dupsFrom = s.backlog.oldest(c.CommitLogOffset)
	}
	flushIdx := clean || s.idxFlushedAt.IsZero() || now.Sub(s.idxFlushedAt) >= s.cfg.IndexFlushInterval ||
		s.idxPending >= int64(s.cfg.IndexFlushEntries) || c.CommitLogOffset-max(s.idxFlushedPhy, 0) >= s.cfg.IndexFlushBytes
	if flushIdx {
		c.IndexPhyOffset = s.idx.MaxPhyOffset()
	}
	table := make(map[queueKey]QueueState, len(s.recorded)+len(s.queues))
	for k, v := range s.recorded {
		table[k] = v
	}
	for k, st := range s.queues {
		table[k] = QueueState{Topic: k.topic, QueueID: k.id, Min: st.q.MinOffset(), Max: st.next}
	}
	s.dirty = false
	s.mu.Unlock()

	for _, q := range table {
		c.Queues = append(c.Queues, q)
	}
	fail := func(err error) error {
		s.mu.Lock()
		s.dirty = true
		s.mu.Unlock()
		return err
	}
	if err := s.cl.Flush(); err != nil {
		return fail(fmt.Errorf("store: checkpoint: %w", err))
	}
	if err := s.cq.Flush(); err != nil {
		return fail(fmt.Errorf("store: checkpoint: %w", err))
	}
	if flushIdx {
		if err := s.idx.Flush(); err != nil {
			return fail(fmt.Errorf("store: checkpoint: %w", err))
		}
	}
	if err := writeCheckpoint(s.cfg.FS, filepath.Join(s.cfg.Dir, checkpointName), c); err != nil {
		return fail(err)
	}
	if err := s.writeDuplicatesFile(dupsFrom); err != nil {
		return fail(fmt.Errorf("store: checkpoint: %w", err))
	}
	if flushIdx {
		s.mu.Lock()
		s.idxFlushedAt, s.idxFlushedPhy = now, c.IndexPhyOffset
		s.idxPending -= idxPending
		s.mu.Unlock()
	}
	return nil
}

// CloseUnclean releases the store the way a killed process leaves it: the
// background loops stop, nothing more is flushed and no clean checkpoint is
// written; what is in the mapped files stays in the page cache, and the
// ConsumeQueue units held in memory (consumequeue/tail.go) are lost. It exists
// for crash tests of the layers above (the raft group's kill -9 tests).
func (s *Store) CloseUnclean() error {
	if !s.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	s.cancel()
	s.wg.Wait()
	return s.closePartsMode(true)
}

// CheckWritable reports whether Put can be expected to succeed: ErrDiskFull
// when the disk is fuller than DiskRefuseRatio, ErrWriteFailed after a
// write error, ErrClosed after Close. The raft leader asks before it
// proposes, so a full disk refuses sends instead of failing replicas.
func (s *Store) CheckWritable() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if r := math.Float64frombits(s.diskRatio.Load()); r > s.cfg.DiskRefuseRatio {
		return fmt.Errorf("%w: %.1f%% of the disk is used", ErrDiskFull, r*100)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writeErr != nil {
		return fmt.Errorf("%w: %v", ErrWriteFailed, s.writeErr)
	}
	return nil
}

// MaxMessageSize is the largest body Put accepts.
func (s *Store) MaxMessageSize() int { return int(s.maxMsg.Load()) }

// ScanCommitLog visits every entry of the CommitLog from offset from, in
// order, after verifying it (message records and batch markers alike), for
// replica comparison and tools. payload is valid only during the call;
// visit runs under the store's read lock and must not call the store.
func (s *Store) ScanCommitLog(from int64, visit func(offset int64, payload []byte) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.rw.RLock()
	defer s.rw.RUnlock()
	return s.cl.Scan(from, visit, func(r commitlog.CorruptRange) { s.reportCorrupt(r) })
}

// FailWrites makes every later Put fail with ErrWriteFailed wrapping err,
// as a failed disk would. It is fault injection for the raft group's and
// the chaos harness's tests; nothing in normal operation calls it.
func (s *Store) FailWrites(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeErr = err
}
