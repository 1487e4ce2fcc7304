package store

import (
	"errors"
	"fmt"
	"path/filepath"
)

// ErrNotEmpty is returned by Reconfigure for a store that holds data.
var ErrNotEmpty = errors.New("store: store holds data")

// Geometry is the part of the configuration that fixes the files' layout:
// the CommitLog segment size (and so every physical offset past the first
// segment end), the ConsumeQueue and IndexFile sizes. Replicas of one group
// must share it; the raft group records it in its replicated settings.
type Geometry struct {
	SegmentSize       int64
	UnitsPerQueueFile int
	IndexSlots        int
	IndexEntries      int
}

// Geometry returns the store's current geometry.
func (s *Store) Geometry() Geometry {
	s.rw.RLock()
	defer s.rw.RUnlock()
	return Geometry{
		SegmentSize:       s.cfg.SegmentSize,
		UnitsPerQueueFile: s.cfg.UnitsPerQueueFile,
		IndexSlots:        s.cfg.IndexSlots,
		IndexEntries:      s.cfg.IndexEntries,
	}
}

// Empty reports whether nothing was ever written: no batch applied and an
// empty CommitLog.
func (s *Store) Empty() bool {
	s.rw.RLock()
	defer s.rw.RUnlock()
	return s.lastSeq.Load() == 0 && s.cl.MaxOffset() == 0 && s.cl.MinOffset() == 0
}

// Reconfigure gives an empty store another geometry: it closes its files,
// removes them and opens new, empty ones with g. A store that holds data
// is ErrNotEmpty and stays as it was. It must not run concurrently with
// Put or RestoreFrom (the raft FSM runs all three on its goroutine);
// readers wait for it.
func (s *Store) Reconfigure(g Geometry) error {
	if s.closed.Load() {
		return ErrClosed
	}
	// MaxMessageSize is checked against the new size by the caller's
	// SetMaxMessageSize that follows.
	cfg := s.cfg
	cfg.MaxMessageSize = 1
	cfg.SegmentSize, cfg.UnitsPerQueueFile, cfg.IndexSlots, cfg.IndexEntries =
		g.SegmentSize, g.UnitsPerQueueFile, g.IndexSlots, g.IndexEntries
	if err := cfg.Validate(); err != nil {
		return err
	}
	s.stopLoops()
	defer s.startLoops()
	s.rw.Lock()
	defer s.rw.Unlock()
	if s.lastSeq.Load() != 0 || s.cl.MaxOffset() != 0 || s.cl.MinOffset() != 0 {
		return fmt.Errorf("%w: up to sequence %d, commitlog offset %d", ErrNotEmpty, s.lastSeq.Load(), s.cl.MaxOffset())
	}
	if err := s.closeData(); err != nil {
		return s.restoreFailed(fmt.Errorf("store: reconfigure: %w", err))
	}
	for _, d := range []string{commitLogDirName, consumeQueueDirName, indexDirName, checkpointName} {
		if err := s.cfg.FS.RemoveAll(filepath.Join(s.cfg.Dir, d)); err != nil {
			return s.restoreFailed(fmt.Errorf("store: reconfigure: %w", err))
		}
	}
	if err := s.cfg.FS.SyncDir(s.cfg.Dir); err != nil {
		return s.restoreFailed(fmt.Errorf("store: reconfigure: %w", err))
	}
	s.cfg.SegmentSize, s.cfg.UnitsPerQueueFile, s.cfg.IndexSlots, s.cfg.IndexEntries =
		g.SegmentSize, g.UnitsPerQueueFile, g.IndexSlots, g.IndexEntries
	s.segSize.Store(g.SegmentSize)
	s.queues = map[queueKey]*queueState{}
	s.recorded = map[queueKey]QueueState{}
	if err := s.openParts(); err != nil {
		return s.restoreFailed(fmt.Errorf("store: reconfigure: %w", err))
	}
	if err := s.recover(); err != nil {
		return s.restoreFailed(fmt.Errorf("store: reconfigure: %w", err))
	}
	if err := s.checkpoint(false); err != nil {
		return s.restoreFailed(fmt.Errorf("store: reconfigure: %w", err))
	}
	s.log.Info("store reconfigured", "segment_size", g.SegmentSize, "units_per_queue_file", g.UnitsPerQueueFile,
		"index_slots", g.IndexSlots, "index_entries", g.IndexEntries)
	return nil
}

// SetMaxMessageSize changes the largest body Put and PutEncoded accept
// (the raft FSM sets the group's value at the point of the log where it
// was agreed, so every replica checks the same bound at every entry).
func (s *Store) SetMaxMessageSize(n int) error {
	if n < 1 || int64(n)+4096 > s.segSize.Load() {
		return fmt.Errorf("store: config: MaxMessageSize %d must be positive and fit a segment of %d", n, s.segSize.Load())
	}
	s.maxMsg.Store(int64(n))
	return nil
}

// CheckEncoded checks one encoded record the way PutEncoded will at apply,
// without writing anything: its structure, length and body CRC, topic,
// queue id, body size (MaxMessageSize) and key lengths. The raft leader
// calls it before it proposes, so a record the store would refuse is
// refused to the client and never reaches the log. Errors wrap
// ErrBadMessage.
func (s *Store) CheckEncoded(rec []byte) error {
	return s.checkEncoded(rec, true)
}

// CheckStamped is CheckEncoded for a record this process has just encoded
// (message.AppendRecord, message.EncodeRecordInto): its body CRC was
// computed from the body, so it is not verified again. The raft leader
// checks each record it proposes this way, once; at apply it stores it
// with PutChecked.
func (s *Store) CheckStamped(rec []byte) error {
	return s.checkEncoded(rec, false)
}

func (s *Store) checkEncoded(rec []byte, verifyCRC bool) error {
	var it batchItem
	return s.checkInto(&it, rec, verifyCRC)
}

// CommitLogChecksum is the CRC-32C of the CommitLog's bytes in [from, to)
// (commitlog.Log.Checksum: from the sums kept as they were written where it
// can; with readFiles, commitlog.Log.ChecksumFiles: read from the files as
// they are now): the replica verifier compares it between nodes.
func (s *Store) CommitLogChecksum(from, to int64, readFiles bool) (uint32, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	s.rw.RLock()
	defer s.rw.RUnlock()
	if readFiles {
		return s.cl.ChecksumFiles(from, to)
	}
	return s.cl.Checksum(from, to)
}
