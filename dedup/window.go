package dedup

import (
	"math"
	"sync"
	"time"
	"unsafe"
)

// Result is the outcome of a message's first store: what a later
// duplicate of it is answered with (a SEND_OK). The offset message id the
// answer carries is derived from the store host and PhysicalOffset, and
// the transaction id is the UNIQ_KEY itself, so neither is kept.
type Result struct {
	// QueueID is the queue the message was stored in.
	QueueID int32
	// Size is the stored record's size in bytes, or 0 if the caller does
	// not record it. With PhysicalOffset it locates the first store in the
	// CommitLog (to read it back, e.g. to compare bodies); it fills the
	// padding after QueueID, so it costs no memory.
	Size int32
	// QueueOffset is the message's offset in its queue.
	QueueOffset int64
	// PhysicalOffset is the message's CommitLog offset.
	PhysicalOffset int64
	// StoreTime is the first store's timestamp (Unix ms, stamped by the
	// leader); the window runs from it. Add sets it.
	StoreTime int64
}

// Stats are a Window's gauges and counters, for metrics. The counters are
// part of the replicated state (snapshots carry them), so every replica
// reports the same ones.
type Stats struct {
	// Entries is the number of (topic, key) pairs held (Len).
	Entries int
	// Bytes estimates the memory held (Bytes). It depends on the local
	// history (a restored window is more compact), unlike the rest.
	Bytes int64
	// Newest is the newest store time seen (math.MinInt64 before any).
	Newest int64
	// Expired counts entries evicted by age.
	Expired uint64
	// EvictedByCount counts entries evicted because there were more than
	// MaxEntries.
	EvictedByCount uint64
	// Replaced counts Adds of a pair already held (stored again after its
	// Lookup window had passed, but within the retention).
	Replaced uint64
	// Ignored counts Adds not recorded: empty or over-long topic or key.
	Ignored uint64
}

// counters are the replicated counters of a Window.
type counters struct {
	expired, evictedByCount, replaced, ignored uint64
}

// Window is the duplicate window of one raft group: the (topic, UNIQ_KEY)
// pairs of the messages stored recently, each with its first store's
// Result. Add is called by the apply step, in apply order; every decision
// depends only on the arguments, never on the local clock, so replicas
// applying the same entries hold the same window.
//
// A Window is safe for concurrent use: one RWMutex, Add, Expire,
// SetConfig and Reserve exclusive, the readers shared.
type Window struct {
	mu        sync.RWMutex
	cfg       Config
	retention int64 // cfg.Window in ms
	newest    int64 // newest store time seen, math.MinInt64 before any
	n         counters
	g         ring
}

// New returns an empty window with cfg (defaults applied).
func New(cfg Config) *Window {
	w := &Window{newest: math.MinInt64, g: newRing(0, 0)}
	w.setConfig(cfg.normalized())
	return w
}

// Add records that the message (topic, key) was stored with result r at
// storeTime (Unix ms, the store timestamp stamped by the leader and
// carried in the raft entry), which Add sets as r.StoreTime. The caller
// adds a message only after storing it, i.e. when Lookup missed.
//
// Add first advances the newest store time to storeTime (if later) and
// evicts, from the oldest, the entries older than the retention relative
// to it. A pair already held is then moved to the back with r (its
// previous store had fallen out of the caller's window); otherwise a new
// entry is appended. Last, the oldest entries beyond MaxEntries leave.
// A pair with an empty or over-long topic or key is not recorded.
func (w *Window) Add(topic, key string, r Result, storeTime int64) {
	w.AddMissed(topic, key, r, storeTime, Miss{})
}

// Miss is what a Lookup that missed (LookupMiss) knows for an Add of the
// same pair that follows it (AddMissed): the pair's hash, and whether the
// window held no entry of the pair at all (not merely one older than the
// caller's window). Its zero value knows nothing.
type Miss struct {
	w      *Window
	h      uint32
	absent bool
}

// AddMissed is Add of a pair whose LookupMiss in w missed with m: when m
// says w held no entry of the pair, the entry is appended without a
// second search of the index (a search that misses waits for memory when
// the index is larger than the processor's caches: the largest part of
// an Add). The caller must know that no Add of the same pair came
// between that LookupMiss and this call; the leader does: a pair it
// decided to store stays pending, and a repeat is not stored, until the
// first is recorded (dledger's pending keys). An m from another window,
// or one that found the pair, is a plain Add.
func (w *Window) AddMissed(topic, key string, r Result, storeTime int64, m Miss) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advance(storeTime)
	if !recordable(topic, key) {
		w.n.ignored++
		return
	}
	r.StoreTime = storeTime
	var b idBuf
	id := makeID(&b, topic, key)
	if m.w == w && m.absent {
		w.g.push(id, m.h, r)
	} else {
		h := w.g.hash(id)
		if p := w.g.find(id, h); p >= 0 {
			w.g.repush(p, id, h, r)
			w.n.replaced++
		} else {
			w.g.push(id, h, r)
		}
	}
	w.evictByCount()
}

// Reserve prepares the window for n more Adds of new pairs: it grows the
// slot array and the table for the entries the window will then hold (at
// most MaxEntries), and the arena for their ids at 32 bytes each on
// average (a 32-hex key under a topic of up to 15 bytes), at once, so
// that those Adds do not rebuild them step by step. A node that builds
// its window from scratch (as it becomes leader) calls Reserve first with
// the number of Adds to come. It changes nothing a caller can observe but
// Bytes; n ≤ 0 does nothing. Like Add, it holds the lock exclusively.
func (w *Window) Reserve(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.g.reserve(n, w.cfg.MaxEntries)
}

// Lookup returns the first store's result of (topic, key) if the pair is
// held and now − its StoreTime ≤ window, now being the store time of the
// message being decided (Unix ms, from the raft entry: never the local
// clock). A store time after now (a leader whose clock is behind) is
// inside the window. The window is truncated to whole milliseconds and
// capped at the retention (Config.Window): a per-topic window can only
// shorten it. A window of 0 or less turns deduplication off (a miss).
// Lookup changes nothing.
func (w *Window) Lookup(topic, key string, now int64, window time.Duration) (Result, bool) {
	r, ok, _ := w.LookupMiss(topic, key, now, window)
	return r, ok
}

// LookupMiss is Lookup that also returns, when it misses, what the miss
// knows for an AddMissed of the same pair.
func (w *Window) LookupMiss(topic, key string, now int64, window time.Duration) (Result, bool, Miss) {
	if !recordable(topic, key) {
		return Result{}, false, Miss{}
	}
	var b idBuf
	id := makeID(&b, topic, key)
	h := w.g.hash(id) // the seed never changes: no lock needed
	w.mu.RLock()
	defer w.mu.RUnlock()
	limit := windowMillis(window, w.retention)
	if limit <= 0 {
		return Result{}, false, Miss{}
	}
	p := w.g.find(id, h)
	if p < 0 {
		return Result{}, false, Miss{w: w, h: h, absent: true}
	}
	if olderThan(now, w.g.slots[p].r.StoreTime, limit) {
		return Result{}, false, Miss{w: w, h: h}
	}
	return w.g.slots[p].r, true, Miss{}
}

// Expire advances the newest store time to now (Unix ms, from a raft
// entry) and evicts the entries older than the retention relative to it,
// as Add does first. Add suffices for a busy group; an apply step may call
// Expire with a timestamped entry so that a quiet group lets its window go.
func (w *Window) Expire(now int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advance(now)
}

// SetConfig replaces the configuration (defaults applied) and evicts what
// the new one no longer holds. Like Add, it must be called at the same log
// position on every replica.
func (w *Window) SetConfig(cfg Config) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.setConfig(cfg.normalized())
	w.advance(w.newest)
	w.evictByCount()
	w.g.fit()
}

// Config returns the configuration in use (defaults applied).
func (w *Window) Config() Config {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.cfg
}

// Len returns the number of (topic, key) pairs held.
func (w *Window) Len() int {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.g.live
}

// Bytes returns the memory the window holds: its slot array, its table
// and its arena of ids (see doc.go, Memory).
func (w *Window) Bytes() int64 {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.bytes()
}

// Stats returns the gauges and counters.
func (w *Window) Stats() Stats {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return Stats{
		Entries:        w.g.live,
		Bytes:          w.bytes(),
		Newest:         w.newest,
		Expired:        w.n.expired,
		EvictedByCount: w.n.evictedByCount,
		Replaced:       w.n.replaced,
		Ignored:        w.n.ignored,
	}
}

// setConfig sets an already normalized configuration.
func (w *Window) setConfig(cfg Config) {
	w.cfg = cfg
	w.retention = int64(cfg.Window / time.Millisecond)
	w.g.setLimit(cfg.MaxEntries)
}

// advance moves the newest store time up to t and evicts, in insertion
// order, the front entries that are more than the retention older than
// it. It stops at the first entry that is not: an entry stored later
// with an earlier time (a new leader's clock behind) waits behind it.
func (w *Window) advance(t int64) {
	w.newest = max(w.newest, t)
	for s := w.g.front(); s != nil; s = w.g.front() {
		if s.n != 0 && !olderThan(w.newest, s.r.StoreTime, w.retention) {
			return
		}
		if w.g.pop() {
			w.n.expired++
		}
	}
}

// evictByCount evicts the oldest entries beyond MaxEntries.
func (w *Window) evictByCount() {
	for w.g.live > w.cfg.MaxEntries {
		if w.g.pop() {
			w.n.evictedByCount++
		}
	}
}

// Sizes of the parts of a window (doc.go, Memory): a slot of the array, an
// entry of the table.
const (
	slotBytes  = int64(unsafe.Sizeof(slot{}))
	tableBytes = int64(unsafe.Sizeof(uint64(0)))
)

// bytes returns the memory held: the Window, its slot array, table and
// arena (each one allocation, allocated to its length); the caller holds
// mu.
func (w *Window) bytes() int64 {
	return int64(unsafe.Sizeof(*w)) + int64(len(w.g.slots))*slotBytes +
		int64(len(w.g.table))*tableBytes + int64(cap(w.g.arena))
}
