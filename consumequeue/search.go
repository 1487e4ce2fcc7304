package consumequeue

import "errors"

// OffsetByTime returns the first queue offset whose message was stored at
// or after ts (milliseconds, as the CommitLog records store times). It is
// RocketMQ's getOffsetInQueueByTime with the lower boundary (the default
// of SEARCH_OFFSET_BY_TIMESTAMP since RocketMQ 5; RocketMQ 4 returned the
// offset nearest in time instead):
//
//   - every message stored at or after ts: MinOffset;
//   - a message stored exactly at ts: the first such message's offset, also
//     when several share that time;
//   - ts between two messages: the later message's offset;
//   - every message stored before ts: MaxOffset;
//   - an empty queue: MinOffset (== MaxOffset).
//
// It binary-searches the units in [MinOffset, MaxOffset), calling timeOf
// for the store time of the message a unit points at; store times are
// assumed not to decrease along the queue. A unit whose time cannot be
// read — timeOf fails, the unit is invalid, or it fell below MinOffset
// meanwhile — counts as older than ts, so the search moves past it: such
// units are messages whose CommitLog files retention already removed, at
// the head of the queue.
//
// timeOf must not be nil. It is called with no lock held; the queue's lock
// is taken only to read each unit, so Put and retention proceed during the
// search and the answer reflects the queue as it was when the call began.
// Errors reading the queue itself are returned.
func (q *Queue) OffsetByTime(ts int64, timeOf func(Unit) (int64, error)) (int64, error) {
	if err := q.rlock(); err != nil {
		return 0, err
	}
	lo, hi := q.min.Load(), q.max.Load()
	q.mu.RUnlock()
	for lo < hi {
		mid := lo + (hi-lo)/2
		older, err := q.storedBefore(mid, ts, timeOf)
		if err != nil {
			return 0, err
		}
		if older {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// storedBefore reports whether the message of the unit at o was stored
// before ts, counting an unreadable unit as older.
func (q *Queue) storedBefore(o, ts int64, timeOf func(Unit) (int64, error)) (bool, error) {
	u, err := q.GetUnit(o)
	switch {
	case errors.Is(err, ErrOffsetTooSmall), errors.Is(err, ErrBadUnit):
		return true, nil
	case errors.Is(err, ErrOffsetTooLarge):
		return false, nil // truncated meanwhile: the end of the queue
	case err != nil:
		return false, err
	}
	t, err := timeOf(u)
	if err != nil {
		return true, nil
	}
	return t < ts, nil
}
