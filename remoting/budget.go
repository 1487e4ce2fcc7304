package remoting

import (
	"context"
	"sync"
	"time"
)

// budget is a server's read budget: a counting semaphore of bytes with two
// classes of waiters, each served first come, first served.
//
//   - Small acquisitions (whole frames of at most SmallFrameSize, and the
//     headers of larger frames when they are that small) may use the whole
//     limit.
//   - Large acquisitions (the bodies of large frames, and headers above
//     SmallFrameSize) may use the limit less the reserve, and one owner
//     (a connection) may hold at most share bytes when it takes one.
//
// So large frames, complete or not, can never take the reserve, and small
// frames are read while it lasts however many large ones wait. Small
// waiters are granted before large ones. Every grant is released exactly
// once: when the frame fails to arrive, when its answer is decided without
// a handler, or when its handler returns.
type budget struct {
	limit   int64
	reserve int64 // bytes only small acquisitions may use
	share   int64 // bytes one owner may hold when it takes a large grant
	now     func() time.Time

	mu      sync.Mutex
	held    int64
	small   []*budgetWaiter // in arrival order
	large   []*budgetWaiter // in arrival order
	waits   uint64          // acquisitions that had to wait
	starved uint64          // small acquisitions that had to wait
	// starvedSince is when the small queue last became non-empty (zero
	// while it is empty): small frames have not been read since.
	starvedSince time.Time
}

// budgetOwner is what one connection holds of the budget; its field is
// guarded by the budget's mutex.
type budgetOwner struct {
	held int64
}

type budgetWaiter struct {
	n     int64
	owner *budgetOwner
	ready chan struct{} // closed when granted
}

func newBudget(limit, reserve, share int64) *budget {
	return &budget{limit: limit, reserve: reserve, share: share, now: time.Now}
}

// fitsLocked reports whether n bytes of the given class can be granted to
// owner now.
func (b *budget) fitsLocked(o *budgetOwner, n int64, small bool) bool {
	if small {
		return b.held+n <= b.limit
	}
	return b.held+n <= b.limit-b.reserve && o.held+n <= b.share
}

func (b *budget) takeLocked(o *budgetOwner, n int64) {
	b.held += n
	o.held += n
}

// acquire takes n bytes for owner, waiting while they are not free in
// their class or an earlier waiter of the class is still waiting. It
// reports whether it waited; it fails only when ctx ends first, and then
// holds nothing. A small n is at most the limit, a large one at most the
// limit less the reserve and at most the share.
func (b *budget) acquire(ctx context.Context, o *budgetOwner, n int64, small bool) (waited bool, err error) {
	b.mu.Lock()
	queue := &b.large
	if small {
		queue = &b.small
	}
	if len(*queue) == 0 && b.fitsLocked(o, n, small) {
		b.takeLocked(o, n)
		b.mu.Unlock()
		return false, nil
	}
	w := &budgetWaiter{n: n, owner: o, ready: make(chan struct{})}
	*queue = append(*queue, w)
	b.waits++
	if small {
		b.starved++
		if len(b.small) == 1 {
			b.starvedSince = b.now()
		}
	}
	b.grantLocked() // a large waiter may pass others held back by their share
	b.mu.Unlock()

	select {
	case <-w.ready:
		return true, nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted while ctx ended: give it back
		b.held -= n
		o.held -= n
	default:
		for i, x := range *queue {
			if x == w {
				*queue = append((*queue)[:i], (*queue)[i+1:]...)
				break
			}
		}
	}
	b.grantLocked() // the head may have changed
	return true, ctx.Err()
}

// release returns n bytes of owner and wakes the waiters they make room
// for.
func (b *budget) release(o *budgetOwner, n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.held -= n
	o.held -= n
	b.grantLocked()
	b.mu.Unlock()
}

// grantLocked grants small waiters from the head while they fit, then large
// ones in order: a large waiter held back only by its owner's share is
// passed over, one held back by the limit stops the scan (so a big frame is
// not overtaken for ever by smaller ones).
func (b *budget) grantLocked() {
	for len(b.small) > 0 && b.fitsLocked(b.small[0].owner, b.small[0].n, true) {
		w := b.small[0]
		b.small[0] = nil
		b.small = b.small[1:]
		b.takeLocked(w.owner, w.n)
		close(w.ready)
	}
	if len(b.small) == 0 {
		b.starvedSince = time.Time{}
	}
	for i := 0; i < len(b.large); {
		w := b.large[i]
		if b.held+w.n > b.limit-b.reserve {
			break
		}
		if w.owner.held+w.n > b.share {
			i++
			continue
		}
		b.large = append(b.large[:i], b.large[i+1:]...)
		b.takeLocked(w.owner, w.n)
		close(w.ready)
	}
}

// budgetStats is a snapshot of the budget.
type budgetStats struct {
	held         int64
	waiting      int    // readers waiting now, both classes
	smallWaiting int    // small frames waiting now
	waits        uint64 // acquisitions that waited
	starved      uint64 // small acquisitions that waited
	starvedSince time.Time
	// shortfall is how many bytes the waiters need beyond what is free to
	// them (0 when nobody waits, at least 1 when somebody does).
	shortfall int64
}

func (b *budget) stats() budgetStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := budgetStats{held: b.held, waiting: len(b.small) + len(b.large), smallWaiting: len(b.small),
		waits: b.waits, starved: b.starved, starvedSince: b.starvedSince}
	if st.waiting > 0 {
		var want int64
		for _, w := range b.small {
			want += w.n
		}
		for _, w := range b.large {
			want += w.n
		}
		st.shortfall = max(1, want-(b.limit-b.reserve-b.held))
	}
	return st
}
