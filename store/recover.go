package store

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/ledgermq/ledgermq/commitlog"
)

// RecoveryReport says what Open found and did. Operators see it in the
// log; tests assert on it.
type RecoveryReport struct {
	// CheckpointFound is false when the checkpoint was missing or damaged
	// (every queue and the index were then rebuilt from the CommitLog).
	CheckpointFound bool
	// Clean is true when the previous Close completed.
	Clean bool
	// From is where the replay of the CommitLog started; End where the
	// recovered log ends.
	From, End int64
	// TruncatedBytes were cut from the tail: a torn record or an
	// incomplete batch.
	TruncatedBytes int64
	// Replayed counts records dispatched again.
	Replayed int
	// RebuiltQueues counts queues found behind or damaged and rebuilt;
	// RebuiltIndex is true when the IndexFile was rebuilt.
	RebuiltQueues int
	RebuiltIndex  bool
	// Corrupt lists corrupt ranges met during the scan; they are skipped,
	// never served.
	Corrupt []commitlog.CorruptRange
	// Seq is the recovered LastSeq.
	Seq      uint64
	Duration time.Duration
}

// replayer applies CommitLog entries to the queues and the index in batch
// units: records are dispatched when their batch marker is seen, so a torn
// batch is never visible.
type replayer struct {
	s *Store
	// from: records at or after it get their queue units written again;
	// before it only the queues in rebuildQ (or all, with rebuildAll).
	from       int64
	rebuildAll bool
	rebuildQ   map[queueKey]bool
	// rebuildTopics: every queue of these topics is rebuilt.
	rebuildTopics map[string]bool
	// indexFrom: records at or after it are indexed again.
	indexFrom int64

	batch    []dispatchReq
	lastGood int64 // end of the last complete batch
	seq      uint64
	replayed int

	// One log (Config.OneLog): entries at or after entriesFrom are listed
	// for raft; those above limit are not dispatched but kept in found
	// (raft decides whether they were committed); applied is where the
	// dispatched ones end.
	oneLog      bool
	entriesFrom int64
	limit       uint64
	found       []recoveredEntry
	applied     int64
}

func (r *replayer) visit(off int64, payload []byte) error {
	if isMarker(payload) {
		m, err := decodeMarker(payload)
		if err != nil {
			r.s.reportCorrupt(commitlog.CorruptRange{Offset: off, Length: int64(len(payload)) + commitlog.TrailerSize, Err: err})
			r.s.lastHole = off
			return nil
		}
		end := off + int64(len(payload)) + commitlog.TrailerSize
		if r.oneLog {
			if m.v2 && off >= r.entriesFrom {
				r.s.ents.add(m.seq, entryPos{first: m.first, marker: off, end: end, term: m.term})
			}
			if m.seq > r.limit {
				e := recoveredEntry{seq: m.seq, reqs: append([]dispatchReq(nil), r.batch...)}
				if d := r.s.cfg.EntryDeletes; d != nil && m.v2 {
					e.deletes = d(m.header)
				}
				r.found = append(r.found, e)
				r.batch = r.batch[:0]
				r.lastGood = end
				return nil
			}
			r.applied = end
		}
		states := make([]*queueState, len(r.batch))
		toQ := make([]bool, len(r.batch))
		toIdx := make([]bool, len(r.batch))
		for i, d := range r.batch {
			toQ[i] = d.phy >= r.from || r.rebuildAll || r.rebuildQ[queueKey{d.topic, d.queueID}] || r.rebuildTopics[d.topic]
			toIdx[i] = d.phy >= r.indexFrom || r.rebuildAll
			if !toQ[i] && !toIdx[i] {
				continue
			}
			st, err := r.s.queueLocked(d.topic, d.queueID)
			if err != nil {
				return err
			}
			states[i] = st
			r.replayed++
		}
		if err := r.s.dispatchLocked(r.batch, states, func(i int) bool { return toQ[i] }, func(i int) bool { return toIdx[i] }); err != nil {
			return err
		}
		r.batch = r.batch[:0]
		if m.seq > r.seq {
			r.seq = m.seq
		}
		r.lastGood = end
		return nil
	}
	d, err := dispatchFromRecord(off, payload)
	if err != nil {
		// The CRC matched but the record does not parse: written wrong, never
		// served. Report it and go on.
		r.s.reportCorrupt(commitlog.CorruptRange{Offset: off, Length: int64(len(payload)) + commitlog.TrailerSize, Err: err})
		r.s.lastHole = off
		return nil
	}
	r.batch = append(r.batch, d)
	return nil
}

func (r *replayer) corrupt(c commitlog.CorruptRange) {
	r.s.reportCorrupt(c)
	r.s.lastHole = c.Offset
}

// recover brings the queues and the index in step with the CommitLog. It is
// the one recovery path, for clean and unclean restarts alike:
//
//  1. Read the checkpoint. Missing or damaged: rebuild everything.
//  2. Check every queue recorded in it; one that is shorter than recorded
//     (a lost file) is dropped and rebuilt; likewise the index.
//  3. Scan the CommitLog (from the checkpoint, or from its start when
//     something is rebuilt), verifying every entry's CRC; dispatch complete
//     batches; report corrupt ranges and skip them.
//  4. Cut an incomplete batch off the tail.
//  5. After an unclean stop, cut every queue back to the recovered end
//     (a queue may have reached disk before the CommitLog did).
func (s *Store) recover() error {
	start := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idxFlushedAt = time.Time{} // what recovery indexes is flushed by the next checkpoint
	rep := RecoveryReport{}
	ck, ok, err := readCheckpoint(filepath.Join(s.cfg.Dir, checkpointName))
	if err != nil {
		s.log.Warn("checkpoint unusable; rebuilding queues and index from the commitlog", "error", err)
	}
	rep.CheckpointFound = ok
	rep.Clean = ok && ck.Clean
	clMin := s.cl.MinOffset()
	r := &replayer{s: s, rebuildQ: map[queueKey]bool{}}
	s.oneLogReplay(r, ck, ok)
	if !ok || ck.CommitLogOffset < clMin {
		r.rebuildAll = true
		r.from, r.indexFrom = clMin, clMin
	} else {
		r.from, r.indexFrom = ck.CommitLogOffset, ck.CommitLogOffset
		r.seq = ck.Seq
		for _, q := range ck.Queues {
			s.recorded[queueKey{q.Topic, q.QueueID}] = q
		}
	}
	switch {
	case r.rebuildAll:
		if err := s.resetAllLocked(); err != nil {
			return err
		}
	case ck.Clean:
		// Trusted now, checked on first use (verify.go).
		for k, q := range s.recorded {
			s.unverified.Store(k, q)
		}
		if err := s.checkIndexLocked(r, ck); err != nil {
			return err
		}
	default:
		if err := s.checkQueuesLocked(r); err != nil {
			return err
		}
		if err := s.checkIndexLocked(r, ck); err != nil {
			return err
		}
	}
	// Scans start on an entry: the checkpoint (a batch boundary), a segment
	// start, or the record the kept index ends with. A scan that starts
	// inside a batch below the checkpoint sees the rest of a complete
	// batch: it is only indexed again (queue units go below r.from only
	// when rebuilt, which scans from the start).
	scanFrom := r.from
	if r.indexFrom < r.from {
		scanFrom = r.indexFrom
	}
	if r.rebuildAll || len(r.rebuildQ) > 0 {
		scanFrom = clMin
	}
	if r.oneLog && r.entriesFrom < scanFrom {
		scanFrom = max(r.entriesFrom, clMin)
	}
	r.lastGood = scanFrom
	s.ents.reset(scanFrom)
	r.applied = scanFrom
	rep.From = scanFrom
	end, err := s.cl.Recover(scanFrom, r.visit, r.corrupt)
	if err != nil {
		return fmt.Errorf("store: recover commitlog: %w", err)
	}
	if end < r.from && !r.rebuildAll {
		// The CommitLog is shorter than the checkpoint says it was: files
		// were lost or cut. Nothing after end can be trusted; rebuild all.
		s.log.Error("commitlog ends before the checkpoint; rebuilding queues and index", "end", end, "checkpoint", r.from)
		if err := s.resetAllLocked(); err != nil {
			return err
		}
		r = &replayer{s: s, rebuildQ: map[queueKey]bool{}, rebuildAll: true, from: clMin, indexFrom: clMin, lastGood: clMin}
		s.oneLogReplay(r, ck, false)
		s.ents.reset(clMin)
		r.applied = clMin
		rep.From = clMin
		if err := s.cl.Scan(clMin, r.visit, r.corrupt); err != nil {
			return fmt.Errorf("store: rescan commitlog: %w", err)
		}
	}
	if end > r.lastGood {
		if err := s.cl.Truncate(r.lastGood); err != nil {
			return fmt.Errorf("store: cut incomplete batch: %w", err)
		}
		rep.TruncatedBytes = end - r.lastGood
		end = r.lastGood
	}
	if r.oneLog {
		// Nothing past the dispatched entries is visible: queue units the
		// last run wrote for them go, and they are pending again.
		if err := s.trimQueuesLocked(r.applied); err != nil {
			return err
		}
		s.ents.setApplied(r.applied)
		s.adoptRecovered(r.found)
	} else if !rep.Clean || rep.TruncatedBytes > 0 || r.rebuildAll {
		if err := s.trimQueuesLocked(end); err != nil {
			return err
		}
	}
	// Reload writer state lazily from the queues as they are now.
	for k, st := range s.queues {
		s.recorded[k] = QueueState{Topic: k.topic, QueueID: k.id, Min: st.q.MinOffset(), Max: st.q.MaxOffset()}
	}
	s.queues = map[queueKey]*queueState{}
	s.lastSeq.Store(r.seq)
	s.dirty = true

	rep.End = end
	rep.Replayed = r.replayed
	rep.RebuiltQueues = len(r.rebuildQ)
	s.rebuiltQueues.Add(int64(len(r.rebuildQ)))
	rep.RebuiltIndex = r.rebuildAll || r.indexFrom < r.from
	rep.Corrupt = s.CorruptRanges()
	rep.Seq = r.seq
	rep.Duration = time.Since(start)
	s.recovery = rep
	s.log.Info("store recovered", "clean", rep.Clean, "from", rep.From, "end", rep.End,
		"replayed", rep.Replayed, "truncated", rep.TruncatedBytes, "rebuilt_queues", rep.RebuiltQueues,
		"rebuilt_index", rep.RebuiltIndex, "corrupt", len(rep.Corrupt), "seq", rep.Seq, "took", rep.Duration)
	return nil
}

// oneLogReplay sets up r for a one-log store: entries from
// Config.EntriesFrom are listed, those up to the checkpoint's sequence
// number (or Config.CommittedSeq) dispatched.
func (s *Store) oneLogReplay(r *replayer, ck Checkpoint, ckOK bool) {
	if !s.cfg.OneLog {
		return
	}
	r.oneLog = true
	r.entriesFrom = s.cfg.EntriesFrom
	r.limit = s.cfg.CommittedSeq
	if ckOK && ck.Seq > r.limit {
		r.limit = ck.Seq
	}
}

// checkQueuesLocked compares every queue recorded in the checkpoint with the
// files on disk; a topic with a queue that is damaged or shorter than
// recorded is dropped and marked for rebuild.
func (s *Store) checkQueuesLocked(r *replayer) error {
	badTopics := map[string]bool{}
	for k, rec := range s.recorded {
		q, err := s.cq.Queue(k.topic, k.id)
		if err != nil {
			return fmt.Errorf("store: queue %s/%d: %w", k.topic, k.id, err)
		}
		// Retention raises a queue's min offset only through DeleteBefore,
		// which the checkpoint records; a min above the recorded one is a
		// lost first file.
		if _, _, err := q.LastUnit(); err != nil || q.MaxOffset() < rec.Max || q.MinOffset() > rec.Min {
			s.log.Warn("consume queue behind or damaged; rebuilding its topic", "topic", k.topic,
				"queue", k.id, "have", q.MaxOffset(), "want", rec.Max, "error", err)
			badTopics[k.topic] = true
		}
	}
	for t := range badTopics {
		if err := s.cq.DeleteTopic(t); err != nil {
			return fmt.Errorf("store: drop queues of %s: %w", t, err)
		}
		for k := range s.recorded {
			if k.topic == t {
				r.rebuildQ[k] = true
				delete(s.recorded, k)
			}
		}
	}
	return nil
}

// checkIndexLocked decides where indexing must start again. A damaged or
// missing IndexFile is rebuilt from the start of the CommitLog. After an
// unclean stop, what was indexed since the index was last flushed (the
// checkpoint's IndexPhyOffset; see Config.IndexFlushInterval) may hold hash
// slots whose entries never reached disk (a slot pointing past the entry
// count hides the older entries of its chain), so those entries are cut
// (index.TruncateAfter: the older entries of the same file stay) and the
// keys they held are indexed again.
func (s *Store) checkIndexLocked(r *replayer, ck Checkpoint) error {
	if len(s.idx.Corrupt()) > 0 || s.idx.MaxPhyOffset() < ck.IndexPhyOffset {
		s.log.Warn("index behind or damaged; rebuilding it", "have", s.idx.MaxPhyOffset(), "want", ck.IndexPhyOffset)
		if err := s.idx.Reset(); err != nil {
			return fmt.Errorf("store: reset index: %w", err)
		}
		r.indexFrom = s.cl.MinOffset()
		return nil
	}
	if ck.Clean {
		return nil
	}
	if err := s.idx.TruncateAfter(min(ck.IndexPhyOffset, ck.CommitLogOffset)); err != nil {
		return fmt.Errorf("store: drop the index entries written after the checkpoint: %w", err)
	}
	// The newest kept file may hold only the first keys of its last
	// message (a message's keys can straddle two files): index that one
	// again too. Query drops the duplicate offsets.
	if m := s.idx.MaxPhyOffset(); m < 0 {
		r.indexFrom = s.cl.MinOffset()
	} else if m < r.indexFrom {
		r.indexFrom = max(m, s.cl.MinOffset())
	}
	return nil
}

func (s *Store) resetAllLocked() error {
	topics, err := s.cq.Topics()
	if err != nil {
		return fmt.Errorf("store: list topics: %w", err)
	}
	for _, t := range topics {
		if err := s.cq.DeleteTopic(t); err != nil {
			return fmt.Errorf("store: drop queues of %s: %w", t, err)
		}
	}
	if err := s.idx.Reset(); err != nil {
		return fmt.Errorf("store: reset index: %w", err)
	}
	s.queues = map[queueKey]*queueState{}
	s.recorded = map[queueKey]QueueState{}
	s.unverified.Range(func(k, _ any) bool {
		s.unverified.Delete(k)
		return true
	})
	return nil
}

// trimQueuesLocked drops every queue unit that points at or past end.
func (s *Store) trimQueuesLocked(end int64) error {
	ids, err := s.cq.Queues()
	if err != nil {
		return fmt.Errorf("store: list queues: %w", err)
	}
	for _, id := range ids {
		q, err := s.cq.Queue(id.Topic, id.QueueID)
		if err != nil {
			return err
		}
		if err := q.TruncateByPhysical(end); err != nil {
			return fmt.Errorf("store: trim %s/%d: %w", id.Topic, id.QueueID, err)
		}
		k := queueKey{id.Topic, id.QueueID}
		s.recorded[k] = QueueState{Topic: id.Topic, QueueID: id.QueueID, Min: q.MinOffset(), Max: q.MaxOffset()}
	}
	return nil
}
