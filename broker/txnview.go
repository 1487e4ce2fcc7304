package broker

import (
	"context"
	"hash/fnv"
	"sync"
	"sync/atomic"
)

// txnState is the leader's view of the undecided transactions.
//
// A rebuild (ensure) scans the replicated state after a barrier and then
// installs what it found. It must not run beside a decision or a half
// message being stored: a scan taken before a decision is applied, and
// installed after the decision removed its key, brings the decided
// transaction back as pending, and the next check-back commits it a
// second time; a half message stored after the scan's barrier, its key
// set in the view the install then replaces, is missing from the view,
// so its commit is answered "decided before" and never written. So view
// is held for reading by every decision and half store (decide, from the
// view's freshness check to the end of its proposal) and for writing by
// the rebuild; decisions on different keys still run side by side.
type txnState struct {
	keys [txnKeyStripes]sync.Mutex // decision locks, by hash of UNIQ_KEY
	view sync.RWMutex              // held for writing by a rebuild (above)
	// waiting counts callers waiting for view to rebuild (tests).
	waiting atomic.Int32

	mu      sync.Mutex
	term    uint64           // the term pending was built in; 0: stale
	pending map[string]int64 // UNIQ_KEY → queue offset of its latest half copy
}

func (t *txnState) keyLock(key string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return &t.keys[h.Sum32()%txnKeyStripes]
}

// fresh reports whether the view was built in term and not invalidated.
func (t *txnState) fresh(term uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.term == term && t.pending != nil
}

// ensure rebuilds the view with rebuild unless it is fresh for term; one
// rebuild at a time, none while a decision runs.
func (t *txnState) ensure(ctx context.Context, term uint64, rebuild func(context.Context) (map[string]int64, error)) error {
	if t.fresh(term) {
		return nil
	}
	t.waiting.Add(1)
	t.view.Lock()
	t.waiting.Add(-1)
	defer t.view.Unlock()
	if t.fresh(term) { // rebuilt while this one waited
		return nil
	}
	pending, err := rebuild(ctx)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.pending, t.term = pending, term
	t.mu.Unlock()
	return nil
}

// decide runs fn on a view fresh for the current term, holding it for
// reading so that no rebuild replaces it meanwhile. The view may be
// invalidated between the rebuild and the read lock: then it rebuilds
// again (until ctx ends).
func (t *txnState) decide(ctx context.Context, term func() uint64, rebuild func(context.Context) (map[string]int64, error), fn func() error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		tm := term()
		if err := t.ensure(ctx, tm, rebuild); err != nil {
			return err
		}
		t.view.RLock()
		if !t.fresh(tm) {
			t.view.RUnlock()
			continue
		}
		err := fn()
		t.view.RUnlock()
		return err
	}
}

// invalidate makes the next use rebuild the view (after a proposal whose
// outcome is unknown).
func (t *txnState) invalidate() {
	t.mu.Lock()
	t.term = 0
	t.mu.Unlock()
}

func (t *txnState) latest(key string) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	off, ok := t.pending[key]
	return off, ok
}

func (t *txnState) set(key string, off int64) {
	t.mu.Lock()
	if t.pending != nil {
		t.pending[key] = off
	}
	t.mu.Unlock()
}

func (t *txnState) done(key string) {
	t.mu.Lock()
	delete(t.pending, key)
	t.mu.Unlock()
}
