package metadata

import (
	"cmp"
	"fmt"
	"slices"
)

// POP consumption state (the broker's pop*.go): per consumer group, topic
// and queue, the group's POP position (the next queue offset to hand out)
// and the receipts of the messages handed out and not yet acknowledged.
// OpPop carries a batch of changes the leader decided; each change is
// applied only if the state is still what the leader saw, so every replica
// applies the same and a change that lost a race is skipped everywhere:
//
//   - From/To: the position moves from From to To, only if it is From
//     (or the queue has none yet). A change whose move is skipped is
//     skipped whole.
//   - Put: a receipt is added with epoch 1 (only at an offset the same
//     change moved past), or replaces the receipt of its offset whose
//     epoch is one less (a redelivery, or a new invisible time).
//   - Del: the receipt of the offset is removed if its epoch matches (an
//     acknowledgement, or the message gone to the dead-letter queue).

// OpPop is the kind of an op carrying POP changes (format version 4).
const OpPop = "pop"

// MaxPopChanges bounds the changes of one OpPop and MaxPopReceipts the
// receipts one change puts or deletes.
const (
	MaxPopChanges  = 1024
	MaxPopReceipts = 4096
)

// PopReceipt is a message handed out and not yet acknowledged: its queue
// offset, until when it is invisible (Unix ms), the delivery attempt (1
// for the first) and its epoch (1 when handed out, +1 on every redelivery
// or new invisible time: a handle naming an older epoch is stale).
type PopReceipt struct {
	Offset  int64 `json:"offset"`
	Until   int64 `json:"until"`
	Attempt int32 `json:"attempt"`
	Epoch   int64 `json:"epoch"`
}

// PopDel removes the receipt at Offset if its epoch is Epoch.
type PopDel struct {
	Offset int64 `json:"offset"`
	Epoch  int64 `json:"epoch"`
}

// PopChange is the change of one queue's POP state.
type PopChange struct {
	Group   string `json:"group"`
	Topic   string `json:"topic"`
	QueueID int32  `json:"queueId"`
	// Move: the position goes from From to To.
	Move bool         `json:"move,omitempty"`
	From int64        `json:"from,omitempty"`
	To   int64        `json:"to,omitempty"`
	Put  []PopReceipt `json:"put,omitempty"`
	Del  []PopDel     `json:"del,omitempty"`
}

func (c PopChange) validate() error {
	if c.Group == "" || c.Topic == "" || c.QueueID < 0 {
		return fmt.Errorf("%w: pop change of %q/%q/%d", ErrBadOp, c.Group, c.Topic, c.QueueID)
	}
	if c.Move && (c.From < 0 || c.To < c.From) {
		return fmt.Errorf("%w: pop move from %d to %d", ErrBadOp, c.From, c.To)
	}
	if len(c.Put) > MaxPopReceipts || len(c.Del) > MaxPopReceipts {
		return fmt.Errorf("%w: pop change of %d puts, %d deletes", ErrBadOp, len(c.Put), len(c.Del))
	}
	for _, r := range c.Put {
		if r.Offset < 0 || r.Epoch < 1 || r.Attempt < 1 {
			return fmt.Errorf("%w: pop receipt %+v", ErrBadOp, r)
		}
	}
	for _, d := range c.Del {
		if d.Offset < 0 || d.Epoch < 1 {
			return fmt.Errorf("%w: pop delete %+v", ErrBadOp, d)
		}
	}
	return nil
}

func validatePop(cs []PopChange) error {
	if len(cs) == 0 || len(cs) > MaxPopChanges {
		return fmt.Errorf("%w: pop op of %d changes", ErrBadOp, len(cs))
	}
	for _, c := range cs {
		if err := c.validate(); err != nil {
			return err
		}
	}
	return nil
}

// popKey names one queue's POP state of a group.
type popKey struct {
	group, topic string
	queueID      int32
}

// popQueue is one queue's POP state.
type popQueue struct {
	pos      int64
	receipts map[int64]PopReceipt
}

// applyPop applies the changes of an OpPop; s.mu is held.
func (s *State) applyPop(cs []PopChange) {
	if s.pop == nil {
		s.pop = map[popKey]*popQueue{}
	}
	for _, c := range cs {
		k := popKey{c.Group, c.Topic, c.QueueID}
		q := s.pop[k]
		if c.Move {
			if q != nil && q.pos != c.From {
				continue
			}
			if q == nil {
				q = &popQueue{receipts: map[int64]PopReceipt{}}
				s.pop[k] = q
			}
			q.pos = c.To
		}
		if q == nil {
			continue
		}
		for _, r := range c.Put {
			old, ok := q.receipts[r.Offset]
			switch {
			case ok && old.Epoch+1 == r.Epoch:
			case !ok && r.Epoch == 1 && c.Move && r.Offset >= c.From && r.Offset < c.To:
			default:
				continue
			}
			q.receipts[r.Offset] = r
		}
		for _, d := range c.Del {
			if old, ok := q.receipts[d.Offset]; ok && old.Epoch == d.Epoch {
				delete(q.receipts, d.Offset)
			}
		}
	}
}

// dropPop forgets the POP state of a topic or a group; s.mu is held.
func (s *State) dropPop(match func(popKey) bool) {
	for k := range s.pop {
		if match(k) {
			delete(s.pop, k)
		}
	}
}

// PopPosition is a group's POP position in a queue: the next queue offset
// to hand out; false when the group never popped from it.
func (s *State) PopPosition(group, topic string, queueID int32) (int64, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	q := s.pop[popKey{group, topic, queueID}]
	if q == nil {
		return 0, false
	}
	return q.pos, true
}

// PopReceipt is the receipt of a message at offset, if one is held.
func (s *State) PopReceipt(group, topic string, queueID int32, offset int64) (PopReceipt, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	q := s.pop[popKey{group, topic, queueID}]
	if q == nil {
		return PopReceipt{}, false
	}
	r, ok := q.receipts[offset]
	return r, ok
}

// PopInflight is the number of receipts a group holds in a queue.
func (s *State) PopInflight(group, topic string, queueID int32) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if q := s.pop[popKey{group, topic, queueID}]; q != nil {
		return len(q.receipts)
	}
	return 0
}

// PopExpired returns up to max receipts of a queue whose invisible time
// has ended at now (Unix ms), oldest first, and the earliest Until of
// the receipts still invisible (0 when none is).
func (s *State) PopExpired(group, topic string, queueID int32, now int64, max int) ([]PopReceipt, int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	q := s.pop[popKey{group, topic, queueID}]
	if q == nil {
		return nil, 0
	}
	var out []PopReceipt
	next := int64(0)
	for _, r := range q.receipts {
		if r.Until <= now {
			out = append(out, r)
			continue
		}
		if next == 0 || r.Until < next {
			next = r.Until
		}
	}
	slices.SortFunc(out, func(a, b PopReceipt) int {
		return cmp.Or(cmp.Compare(a.Until, b.Until), cmp.Compare(a.Offset, b.Offset))
	})
	if len(out) > max {
		for _, r := range out[max:] {
			if next == 0 || r.Until < next {
				next = r.Until
			}
		}
		out = out[:max]
	}
	return out, next
}

// popFile is a queue's POP state in a saved state.
type popFile struct {
	Group    string       `json:"group"`
	Topic    string       `json:"topic"`
	QueueID  int32        `json:"queueId"`
	Pos      int64        `json:"pos"`
	Receipts []PopReceipt `json:"receipts,omitempty"`
}

// marshalPop lists the POP state, sorted; s.mu is held.
func (s *State) marshalPop() []popFile {
	if len(s.pop) == 0 {
		return nil
	}
	out := make([]popFile, 0, len(s.pop))
	for k, q := range s.pop {
		f := popFile{Group: k.group, Topic: k.topic, QueueID: k.queueID, Pos: q.pos, Receipts: make([]PopReceipt, 0, len(q.receipts))}
		for _, r := range q.receipts {
			f.Receipts = append(f.Receipts, r)
		}
		slices.SortFunc(f.Receipts, func(a, b PopReceipt) int { return cmp.Compare(a.Offset, b.Offset) })
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b popFile) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.QueueID, b.QueueID))
	})
	return out
}

// unmarshalPop reads the POP state of a saved state.
func unmarshalPop(fs []popFile) (map[popKey]*popQueue, error) {
	out := make(map[popKey]*popQueue, len(fs))
	for _, f := range fs {
		if f.Group == "" || f.Topic == "" || f.QueueID < 0 || f.Pos < 0 {
			return nil, fmt.Errorf("%w: pop state of %q/%q/%d", ErrBadFile, f.Group, f.Topic, f.QueueID)
		}
		q := &popQueue{pos: f.Pos, receipts: make(map[int64]PopReceipt, len(f.Receipts))}
		for _, r := range f.Receipts {
			q.receipts[r.Offset] = r
		}
		out[popKey{f.Group, f.Topic, f.QueueID}] = q
	}
	return out, nil
}

// PopQueue names one queue's POP state of a group.
type PopQueue struct {
	Group   string `json:"group"`
	Topic   string `json:"topic"`
	QueueID int32  `json:"queueId"`
}

// PopQueueStat is one queue's POP state at a time: the position, the
// receipts held, how many of them are due (their invisible time over:
// waiting to be delivered again or sent to the dead-letter queue) and
// the earliest Until of them all (0 when none is held).
type PopQueueStat struct {
	PopQueue
	Position    int64 `json:"position"`
	Inflight    int   `json:"inflight"`
	Due         int   `json:"due"`
	OldestUntil int64 `json:"oldestUntil,omitempty"`
}

// PopStats lists the POP state of every queue at now (Unix ms), sorted by
// group, topic and queue; match, when set, picks the groups and topics.
func (s *State) PopStats(now int64, match func(group, topic string) bool) []PopQueueStat {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []PopQueueStat
	for k, q := range s.pop {
		if match != nil && !match(k.group, k.topic) {
			continue
		}
		st := PopQueueStat{PopQueue: PopQueue{Group: k.group, Topic: k.topic, QueueID: k.queueID}, Position: q.pos, Inflight: len(q.receipts)}
		for _, r := range q.receipts {
			if r.Until <= now {
				st.Due++
			}
			if st.OldestUntil == 0 || r.Until < st.OldestUntil {
				st.OldestUntil = r.Until
			}
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b PopQueueStat) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.QueueID, b.QueueID))
	})
	return out
}

// PopDue returns up to max receipts of a queue whose invisible time has
// ended at now (Unix ms) and whose attempt is at least minAttempt, in
// offset order: the messages whose deliveries are used up.
func (s *State) PopDue(group, topic string, queueID int32, now int64, minAttempt int32, max int) []PopReceipt {
	s.mu.RLock()
	defer s.mu.RUnlock()
	q := s.pop[popKey{group, topic, queueID}]
	if q == nil || max <= 0 {
		return nil
	}
	var out []PopReceipt
	for _, r := range q.receipts {
		if r.Until <= now && r.Attempt >= minAttempt {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b PopReceipt) int { return cmp.Compare(a.Offset, b.Offset) })
	return out[:min(len(out), max)]
}
