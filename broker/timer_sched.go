package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/timerwheel"
)

const (
	// timerTick is the scheduler's period: a timer is delivered within
	// about a tick of its due time (plus one raft commit).
	timerTick = 100 * time.Millisecond
	// timerBatch and timerBatchBytes bound the deliveries of one entry.
	timerBatch      = 512
	timerBatchBytes = 768 << 10
	// timerWindow bounds the due timers one wheel scan returns (memory:
	// 40 bytes each); a round delivers them in entries of timerBatch.
	timerWindow = 4096
	// timerLateScan bounds the parked records past the enqueue cursor
	// one round examines.
	timerLateScan = 4096
	// timerIndexWait is how long the scheduler waits for the local index
	// to reach the end of the parked queue before it delivers from what
	// is indexed (liveness over order under a flood of parked timers).
	timerIndexWait = time.Second
)

// scheduleLoop delivers due timers while this node is the writable
// leader, until ctx ends.
func (s *timerService) scheduleLoop(ctx context.Context) {
	t := time.NewTicker(timerTick)
	defer t.Stop()
	// unsettled: a delivery failed, perhaps with an unknown outcome (its
	// entry may still commit). Progress read before that entry applies
	// would deliver its timers again, so deliveries wait for a barrier,
	// after which every earlier entry has been applied here.
	unsettled := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.schedWake:
		}
		if !s.g.IsLeader() {
			continue
		}
		if unsettled {
			if err := s.g.Barrier(ctx); err != nil {
				continue
			}
			unsettled = false
		}
		for ctx.Err() == nil {
			more, err := s.round(ctx)
			if err != nil {
				if !errors.Is(err, errTimerIndexBehind) {
					s.log.Warn("timer delivery failed; retrying", "error", err)
					unsettled = true
				}
				break
			}
			if !more {
				break
			}
		}
	}
}

// round makes one pass: the late records past the enqueue cursor, then
// the due timers of the wheel in key order. more says another pass may
// find work right away.
func (s *timerService) round(ctx context.Context) (more bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := readTimerProgress(s.g.Metadata())
	end := s.wheel.Len()
	if end < p.Q {
		return false, errTimerIndexBehind
	}
	// Timers parked but not indexed yet may be due before the ones the
	// wheel would deliver now: moving the cursor past them would make them
	// late, delivered out of due order. Wait (briefly) for the indexer.
	parked, _ := s.g.Store().MaxOffset(timerTopic, 0)
	if end < parked {
		if s.behindSince.IsZero() {
			s.behindSince = time.Now()
		}
		if time.Since(s.behindSince) < timerIndexWait {
			poke(s.indexWake)
			return false, errTimerIndexBehind
		}
	} else {
		s.behindSince = time.Time{}
	}
	now := s.cfg.Clock().UnixMilli()

	// Records of [Q, qn) that are Gone or before the cursor R arrived
	// after the cursor passed their time: they go first, with qn.
	qn := min(end, p.Q+timerLateScan)
	var late []timerwheel.Timer
	err = s.wheel.Range(p.Q, qn, func(t timerwheel.Timer) bool {
		if t.Gone || t.Key().Less(p.R) {
			if len(late) == timerBatch {
				qn = t.Q
				return false
			}
			late = append(late, t)
		}
		return true
	})
	if err != nil {
		return false, err
	}
	if len(late) > 0 {
		next := p
		next.Q, next.Done = qn, p.Done+int64(len(late))
		return true, s.deliver(ctx, late, next)
	}

	// The wheel: timers of q < qn in key order from R, due by now.
	win, err := s.wheel.Scan(p.R, now, qn, timerWindow)
	if err != nil {
		return false, err
	}
	if len(win) == 0 {
		// Nothing due: every timer due by now is handled when the index
		// is complete and nothing late is left past qn, so the recalls
		// of the seconds before now can go (recall.go), once a second.
		if qn == end && end >= parked && time.Since(s.lastDrop) >= time.Second {
			s.lastDrop = time.Now()
			if err := s.dropRecalls(ctx, now); err != nil {
				return false, err
			}
		}
		// Move Q on when the examined stretch is long, so the next
		// rounds do not read it again.
		if qn-p.Q >= timerLateScan/4 {
			next := p
			next.Q = qn
			return qn < end, s.deliver(ctx, nil, next)
		}
		return false, nil
	}
	next := p
	next.Q = qn
	for len(win) > 0 && ctx.Err() == nil {
		n, bytes := 0, 0
		for n < len(win) && n < timerBatch && (n == 0 || bytes+int(win[n].Size) <= timerBatchBytes) {
			bytes += int(win[n].Size)
			n++
		}
		batch := win[:n]
		win = win[n:]
		next.R = batch[n-1].Next()
		next.Done += int64(n)
		if err := s.deliver(ctx, batch, next); err != nil {
			return false, err
		}
	}
	return len(win) == 0, nil
}

// deliver proposes the delivered copies of ts together with the progress
// next, in one entry. A timer whose parked message cannot be delivered
// (its CommitLog bytes removed by retention, or no valid destination) is
// dropped with a log line and still counted: an entry that refused it
// would hold back every timer after it.
func (s *timerService) deliver(ctx context.Context, ts []timerwheel.Timer, next timerProgress) error {
	st := s.g.Store()
	md := s.g.Metadata()
	msgs := make([]*message.Ext, 0, len(ts))
	for _, t := range ts {
		if t.Gone {
			s.log.Warn("parked timer message cannot be delivered (no due time, or gone from the store); dropped", "q", t.Q)
			continue
		}
		m, err := st.MessageAt(t.Phy)
		if err != nil {
			if t.Phy < st.MinPhysicalOffset() {
				s.log.Warn("parked timer message removed by retention before it was due; dropped", "q", t.Q, "due", t.Due)
				continue
			}
			return fmt.Errorf("reading parked timer %d at %d: %w", t.Q, t.Phy, err)
		}
		if m.Topic != timerTopic || m.QueueOffset != t.Q {
			return fmt.Errorf("timer index: record %d points at %s@%d", t.Q, m.Topic, m.QueueOffset)
		}
		d, ok := unparkTimer(m)
		if !ok {
			s.log.Warn("parked timer message without a destination dropped", "q", t.Q)
			continue
		}
		if isRecalled(md, d.Topic, d.UniqKey(), t.Due) {
			s.log.Debug("recalled timer message not delivered", "q", t.Q, "topic", d.Topic, "message", d.UniqKey())
			continue
		}
		msgs = append(msgs, d)
	}
	pctx, cancel := context.WithTimeout(ctx, proposeTimeout)
	defer cancel()
	_, err := s.g.ProposeWithOp(pctx, msgs, next.op())
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}
