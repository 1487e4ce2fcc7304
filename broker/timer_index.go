package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/store"
	"github.com/ledgermq/ledgermq/timerwheel"
)

const (
	// timerIndexBatch bounds the parked records one store read indexes.
	timerIndexBatch = 512
	// timerIndexTick is how often the indexer looks without a wake-up.
	timerIndexTick = 100 * time.Millisecond
	// timerSyncInterval spaces the wheel's checkpoints; a restart
	// re-indexes from the store what came after the last one.
	timerSyncInterval = 5 * time.Second
)

// checkIndex compares the wheel with the parked queue it indexes: when
// the wheel's last record is not the queue's record at that offset (an
// index left from other data, or a queue that no longer holds it), the
// wheel starts over from the queue's first offset (or from its own first
// one, whichever is lower, so nothing released is resurrected needlessly).
func (s *timerService) checkIndex() error {
	st := s.g.Store()
	n := s.wheel.Len()
	if n == 0 || n == s.wheel.First() {
		return nil
	}
	minOff, _ := st.MinOffset(timerTopic, 0)
	maxOff, _ := st.MaxOffset(timerTopic, 0)
	if n-1 < maxOff && n-1 >= minOff {
		res, err := st.Get(timerTopic, 0, n-1, 1, nil)
		if err == nil {
			ok := res.Status == store.Found && len(res.Records) == 1 && res.Records[0].QueueOffset == n-1 &&
				res.Records[0].PhysicalOffset == s.wheel.LastPhy()
			res.Release()
			if ok {
				return nil
			}
		}
	}
	base := min(minOff, s.wheel.First())
	s.log.Warn("timer index does not match the parked queue; rebuilding it", "indexed", n, "queueMin", minOff, "queueMax", maxOff, "from", base)
	return s.wheel.Reset(base)
}

// indexLoop indexes the parked queue on every node until ctx ends, on
// each dispatch of it and every timerIndexTick, checkpoints the wheel
// every timerSyncInterval and releases what the progress has delivered.
func (s *timerService) indexLoop(ctx context.Context) {
	t := time.NewTicker(timerIndexTick)
	defer t.Stop()
	lastSync := time.Now()
	synced := s.wheel.Len()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.indexWake:
		case <-t.C:
		}
		added, err := s.indexOnce()
		if err != nil {
			s.log.Warn("indexing timer messages failed; retrying", "error", err)
		}
		if added > 0 {
			poke(s.schedWake)
		}
		if time.Since(lastSync) >= timerSyncInterval {
			lastSync = time.Now()
			p := readTimerProgress(s.g.Metadata())
			if _, err := s.wheel.Release(p.Q, p.R); err != nil {
				s.log.Warn("releasing delivered timers failed", "error", err)
			}
			if n := s.wheel.Len(); n != synced {
				if err := s.wheel.Sync(); err != nil {
					s.log.Warn("timer index checkpoint failed", "error", err)
				} else {
					synced = n
				}
			}
		}
	}
}

// indexOnce appends every parked record the store holds past the wheel's
// end, and returns how many. Records the store skips (removed by
// retention, or corrupt) are indexed as Gone so positions stay offsets.
func (s *timerService) indexOnce() (int, error) {
	st := s.g.Store()
	added := 0
	for {
		from := s.wheel.Len()
		res, err := st.Get(timerTopic, 0, from, timerIndexBatch, nil)
		if err != nil {
			return added, nil // no such queue yet
		}
		var ts []timerwheel.Timer
		gone := func(to int64) {
			for q := from + int64(len(ts)); q < to; q++ {
				ts = append(ts, timerwheel.Timer{Q: q, Gone: true})
			}
		}
		switch res.Status {
		case store.Found:
			for _, r := range res.Records {
				gone(r.QueueOffset)
				ts = append(ts, parkedTimer(r))
			}
			gone(res.NextBeginOffset)
		case store.OffsetTooSmall, store.OffsetFoundNull, store.NoMatchedMessage:
			gone(res.NextBeginOffset)
		}
		res.Release()
		if len(ts) == 0 {
			return added, nil
		}
		if err := s.wheel.Append(ts); err != nil {
			return added, fmt.Errorf("timer index at %d: %w", from, err)
		}
		added += len(ts)
	}
}

// parkedTimer is the wheel's record of one parked message.
func parkedTimer(r store.Record) timerwheel.Timer {
	t := timerwheel.Timer{Q: r.QueueOffset, Phy: r.PhysicalOffset, Size: int32(len(r.Bytes))}
	v, err := message.ParseView(r.Bytes)
	if err != nil {
		t.Gone = true
		return t
	}
	props, err := message.DecodeProperties(v.PropertiesBytes())
	if err != nil {
		t.Gone = true
		return t
	}
	due, ok := dueOfParked(props)
	t.Due, t.Gone = due, !ok
	if t.Gone {
		t.Due = 0
	}
	return t
}
