package store

import (
	"fmt"
	"math"
	"time"
)

// FileReservedTime is how long this node keeps sealed CommitLog segments
// (its retention): what the broker's checks take as the age past which a
// message is expired.
func (s *Store) FileReservedTime() time.Duration { return s.cfg.FileReservedTime }

func (s *Store) refreshDiskRatio() float64 {
	r, err := s.cl.DiskUsedRatio()
	if err != nil {
		s.log.Warn("cannot read disk usage", "error", err)
		return math.Float64frombits(s.diskRatio.Load())
	}
	s.diskRatio.Store(math.Float64bits(r))
	return r
}

// Clean runs retention once: at a DeleteWhen hour, or at any hour when the
// disk is fuller than DiskMaxUsedSpaceRatio, or when force is set, it
// deletes expired sealed CommitLog segments (oldest first; when the disk is
// too full, also unexpired ones) and then the queue and index files that
// only point into deleted segments. It returns the segments deleted.
func (s *Store) Clean(force bool) (int, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	s.rw.RLock()
	defer s.rw.RUnlock()
	ratio := s.refreshDiskRatio()
	hours, _ := parseDeleteWhen(s.cfg.DeleteWhen)
	due := force || hours[s.cfg.Clock().Hour()] || ratio > s.cfg.DiskMaxUsedSpaceRatio
	if !due {
		return 0, nil
	}
	n, err := s.cl.DeleteExpired(false, 10)
	if err != nil {
		return n, fmt.Errorf("store: retention: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	return n, s.trimBefore(s.cl.MinOffset())
}

// trimBefore drops queue and index files that only point below minPhy.
func (s *Store) trimBefore(minPhy int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dirty = true
	ids, err := s.cq.Queues()
	if err != nil {
		return fmt.Errorf("store: retention: %w", err)
	}
	for _, id := range ids {
		q, err := s.cq.Queue(id.Topic, id.QueueID)
		if err != nil {
			return fmt.Errorf("store: retention: %w", err)
		}
		if err := q.DeleteBefore(minPhy); err != nil {
			return fmt.Errorf("store: retention %s/%d: %w", id.Topic, id.QueueID, err)
		}
		k := queueKey{id.Topic, id.QueueID}
		if _, ok := s.recorded[k]; ok {
			s.recorded[k] = QueueState{Topic: id.Topic, QueueID: id.QueueID, Min: q.MinOffset(), Max: q.MaxOffset()}
		}
	}
	if err := s.idx.DeleteBefore(minPhy); err != nil {
		return fmt.Errorf("store: retention: %w", err)
	}
	return nil
}

// DeleteTopic removes a topic's queues. Its records stay in the CommitLog
// until retention deletes their segments; they are no longer reachable by
// queue offset.
func (s *Store) DeleteTopic(topic string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.rw.RLock()
	defer s.rw.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.cq.DeleteTopic(topic); err != nil {
		return fmt.Errorf("store: delete topic %s: %w", topic, err)
	}
	for k := range s.queues {
		if k.topic == topic {
			delete(s.queues, k)
		}
	}
	for k := range s.recorded {
		if k.topic == topic {
			delete(s.recorded, k)
		}
	}
	s.dirty = true
	return nil
}

// Topics lists the topics that have queues in the store.
func (s *Store) Topics() ([]string, error) {
	s.rw.RLock()
	defer s.rw.RUnlock()
	return s.cq.Topics()
}
