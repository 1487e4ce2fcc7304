package store

import (
	"fmt"
	"math"

	"github.com/ledgermq/ledgermq/consumequeue"
)

// After a clean stop the queues recorded in the checkpoint are trusted at
// Open and checked lazily, on each queue's first use: reopening a store of
// 80 000 queues reads one file instead of 80 000 directories. A queue
// found shorter than recorded, or with a missing file, gets its topic
// rebuilt from the CommitLog before the caller sees it. (After an unclean
// stop every queue is checked at Open, since recovery visits them all.)

// queue returns the ConsumeQueue of topic/id, checking it first if this is
// its first use since Open. Safe for concurrent use.
func (s *Store) queue(topic string, id int32) (*consumequeue.Queue, error) {
	k := queueKey{topic, id}
	if _, pending := s.unverified.Load(k); pending {
		s.mu.Lock()
		err := s.verifyLocked(k)
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	q, err := s.cq.Queue(topic, id)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return q, nil
}

// verifyLocked checks one recorded queue against its files and rebuilds its
// topic when it is behind or damaged. Called with s.mu held.
func (s *Store) verifyLocked(k queueKey) error {
	v, pending := s.unverified.Load(k)
	if !pending {
		return nil
	}
	rec := v.(QueueState)
	q, err := s.cq.Queue(k.topic, k.id)
	if err != nil {
		return fmt.Errorf("store: queue %s/%d: %w", k.topic, k.id, err)
	}
	if _, _, lerr := q.LastUnit(); lerr == nil && q.MaxOffset() >= rec.Max && q.MinOffset() <= rec.Min {
		s.unverified.Delete(k)
		return nil
	}
	s.log.Warn("consume queue behind or damaged; rebuilding its topic from the commitlog",
		"topic", k.topic, "queue", k.id, "have", q.MaxOffset(), "want", rec.Max)
	return s.rebuildTopicLocked(k.topic)
}

// rebuildTopicLocked drops a topic's queues and writes them again from the
// CommitLog, through the recovery path's replayer. Called with s.mu held;
// writers wait meanwhile.
func (s *Store) rebuildTopicLocked(topic string) error {
	if err := s.cq.DeleteTopic(topic); err != nil {
		return fmt.Errorf("store: drop queues of %s: %w", topic, err)
	}
	n := 0
	for k := range s.recorded {
		if k.topic == topic {
			s.unverified.Delete(k)
			delete(s.recorded, k)
			n++
		}
	}
	for k := range s.queues {
		if k.topic == topic {
			delete(s.queues, k)
		}
	}
	r := &replayer{s: s, from: math.MaxInt64, indexFrom: math.MaxInt64,
		rebuildQ: map[queueKey]bool{}, rebuildTopics: map[string]bool{topic: true}}
	if s.cfg.OneLog {
		// Only what was dispatched; the entries after it list nothing again.
		r.oneLog, r.entriesFrom, r.limit = true, math.MaxInt64, s.lastSeq.Load()
	}
	if err := s.cl.Scan(s.cl.MinOffset(), r.visit, r.corrupt); err != nil {
		return fmt.Errorf("store: rebuild %s: %w", topic, err)
	}
	for k, st := range s.queues {
		if k.topic == topic {
			s.recorded[k] = QueueState{Topic: k.topic, QueueID: k.id, Min: st.q.MinOffset(), Max: st.q.MaxOffset()}
		}
	}
	s.rebuiltQueues.Add(int64(n))
	s.dirty = true
	return nil
}

// RebuiltQueues counts queues rebuilt from the CommitLog since Open (at
// Open or on first use) because they were found damaged or behind.
func (s *Store) RebuiltQueues() int64 { return s.rebuiltQueues.Load() }
