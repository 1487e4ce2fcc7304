package timerwheel

import (
	"container/heap"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// PageSeconds is the number of one-second slots of one slot page.
const PageSeconds = 86400

// DefaultSegmentRecords is the number of records of one log file
// (12 MiB).
const DefaultSegmentRecords = 1 << 18

// Config configures a Wheel.
type Config struct {
	// Dir holds the log files and the checkpoint (created if missing).
	Dir string
	// SegmentRecords is the number of records per log file. Default
	// DefaultSegmentRecords. Changing it makes Open drop the files and
	// start over from the checkpoint's first offset.
	SegmentRecords int64
	Logger         hclog.Logger
}

// page is the slot table of PageSeconds consecutive seconds: for each
// second, 1 + the queue offset of its latest timer (0: none). Slot pages
// are rebuilt by Open from the log and live in memory: their size depends
// on the span of due times (about 0.7 MB per day of it), never on the
// number of timers.
type page struct {
	heads [PageSeconds]int64
}

// Wheel is the time-ordered index of a parked-timer queue. See doc.go.
type Wheel struct {
	cfg  Config
	log  hclog.Logger
	lock *vfs.DirLock

	mu       sync.RWMutex
	closed   bool
	first    int64 // records below first were released
	length   int64 // records [first, length) are held
	lastPhy  int64 // Phy of record length-1, -1 if none
	segs     []*segment
	pages    map[int64]*page
	pageKeys []int64 // sorted keys of pages
}

// Open opens the wheel in cfg.Dir, rebuilding its slot pages from the
// records the checkpoint vouches for (see doc.go, Recovery).
func Open(cfg Config) (*Wheel, error) {
	if cfg.Dir == "" {
		return nil, errors.New("timerwheel: Dir is required")
	}
	if cfg.SegmentRecords <= 0 {
		cfg.SegmentRecords = DefaultSegmentRecords
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	lock, err := vfs.Lock(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("timerwheel: %w", err)
	}
	w := &Wheel{cfg: cfg, log: cfg.Logger, lock: lock, lastPhy: -1, pages: map[int64]*page{}}
	if err := w.recover(); err != nil {
		w.closeFiles()
		_ = lock.Release()
		return nil, err
	}
	return w, nil
}

// segBase is the base of the segment holding queue offset q.
func (w *Wheel) segBase(q int64) int64 { return q - q%w.cfg.SegmentRecords }

func (w *Wheel) recover() error {
	ck, ok, err := readCheckpoint(w.cfg.Dir)
	if err != nil {
		w.log.Warn("timer index checkpoint unreadable; rebuilding from the start", "error", err)
		ok = false
	}
	if !ok {
		ck = checkpoint{LastPhy: -1}
	}
	w.first, w.length = ck.First, ck.Len
	bases, err := listSegments(w.cfg.Dir)
	if err != nil {
		return err
	}
	have := map[int64]bool{}
	for _, b := range bases {
		fi, err := os.Stat(filepath.Join(w.cfg.Dir, segmentName(b)))
		if err != nil || b%w.cfg.SegmentRecords != 0 || fi.Size() != w.cfg.SegmentRecords*RecordSize {
			// Another geometry: the records it holds are re-indexed.
			w.removeSegmentFile(b)
			continue
		}
		have[b] = true
	}
	// The held range must be backed by files without a gap; it ends
	// before the first missing one.
	for b := w.segBase(w.first); b < w.length; b += w.cfg.SegmentRecords {
		if !have[b] {
			w.length = max(w.first, b)
			break
		}
		s, err := openSegment(w.cfg.Dir, b, w.cfg.SegmentRecords)
		if err != nil {
			return err
		}
		w.segs = append(w.segs, s)
	}
	// Files wholly released, or past the one that takes the next append,
	// hold nothing the wheel will read.
	for _, b := range bases {
		if have[b] && (b+w.cfg.SegmentRecords <= w.first || b > w.segBase(w.length)) {
			w.removeSegmentFile(b)
		}
	}
	return w.rebuild()
}

func (w *Wheel) removeSegmentFile(base int64) {
	if err := os.Remove(filepath.Join(w.cfg.Dir, segmentName(base))); err != nil && !errors.Is(err, os.ErrNotExist) {
		w.log.Warn("timer index: cannot remove a segment", "base", base, "error", err)
	}
}

// rebuild checks every held record, cuts the held range at the first
// invalid one, relinks the slot chains and fills the slot pages.
func (w *Wheel) rebuild() error {
	w.pages, w.pageKeys = map[int64]*page{}, nil
	for _, s := range w.segs {
		s.maxDue = 0
	}
	w.lastPhy = -1
	for q := w.first; q < w.length; q++ {
		s := w.segFor(q)
		if s == nil {
			w.length = q
			break
		}
		t, prev, err := decodeRecord(s.at(q), q)
		if err != nil {
			w.log.Warn("timer index: invalid record; re-indexing from it", "q", q, "error", err)
			w.length = q
			break
		}
		w.lastPhy = t.Phy
		if t.Gone {
			continue
		}
		s.maxDue = max(s.maxDue, t.Due)
		p, i := w.slot(t.Due)
		want := p.heads[i] - 1
		if want < w.first {
			want = -1
		}
		if prev != want {
			if err := s.write(q, appendRecord(nil, t, want)); err != nil {
				return err
			}
		}
		p.heads[i] = q + 1
	}
	// Segments past the held range are dropped from the list; appends
	// open them again.
	for len(w.segs) > 0 && w.segs[len(w.segs)-1].base >= w.length && w.segs[len(w.segs)-1].base > w.segBase(w.first) {
		s := w.segs[len(w.segs)-1]
		w.segs = w.segs[:len(w.segs)-1]
		_ = s.close()
	}
	return nil
}

// slot returns the page and index of due's second, creating the page.
func (w *Wheel) slot(due int64) (*page, int) {
	sec := secondOf(due)
	k := floorDiv(sec, PageSeconds)
	p := w.pages[k]
	if p == nil {
		p = &page{}
		w.pages[k] = p
		i := sort.Search(len(w.pageKeys), func(i int) bool { return w.pageKeys[i] >= k })
		w.pageKeys = append(w.pageKeys, 0)
		copy(w.pageKeys[i+1:], w.pageKeys[i:])
		w.pageKeys[i] = k
	}
	return p, int(sec - k*PageSeconds)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// segFor returns the open segment holding q, or nil.
func (w *Wheel) segFor(q int64) *segment {
	if len(w.segs) == 0 {
		return nil
	}
	i := (w.segBase(q) - w.segs[0].base) / w.cfg.SegmentRecords
	if i < 0 || i >= int64(len(w.segs)) {
		return nil
	}
	return w.segs[i]
}

// Len is the queue offset of the next timer to append: every parked
// message below it is indexed.
func (w *Wheel) Len() int64 {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.length
}

// First is the lowest queue offset still held (lower ones were released).
func (w *Wheel) First() int64 {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.first
}

// LastPhy is the CommitLog offset of the last record (-1: none held).
func (w *Wheel) LastPhy() int64 {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.lastPhy
}

// Reset drops every record and starts the wheel empty at queue offset
// base (the owner found the index does not match its queue).
func (w *Wheel) Reset(base int64) error {
	if base < 0 {
		return fmt.Errorf("%w: reset to %d", ErrRange, base)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if err := writeCheckpoint(w.cfg.Dir, checkpoint{First: base, Len: base, LastPhy: -1}); err != nil {
		return err
	}
	for _, s := range w.segs {
		_ = s.close()
		w.removeSegmentFile(s.base)
	}
	bases, err := listSegments(w.cfg.Dir)
	if err != nil {
		return err
	}
	for _, b := range bases {
		w.removeSegmentFile(b)
	}
	w.segs = nil
	w.first, w.length, w.lastPhy = base, base, -1
	w.pages, w.pageKeys = map[int64]*page{}, nil
	return nil
}

// Append indexes timers, which must continue the held range: ts[0].Q ==
// Len() and each next one's Q one higher.
func (w *Wheel) Append(ts []Timer) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	var buf []byte
	var bufSeg *segment
	var bufQ int64
	flush := func() error {
		if bufSeg == nil || len(buf) == 0 {
			return nil
		}
		err := bufSeg.write(bufQ, buf)
		buf = buf[:0]
		return err
	}
	for _, t := range ts {
		if t.Q != w.length {
			_ = flush()
			return fmt.Errorf("%w: got %d, want %d", ErrOrder, t.Q, w.length)
		}
		if !t.Gone && (t.Due <= 0 || t.Phy < 0 || t.Size < 0) {
			_ = flush()
			return fmt.Errorf("timerwheel: timer %+v: due and location must be positive", t)
		}
		s := w.segFor(t.Q)
		if s == nil {
			if err := flush(); err != nil {
				return err
			}
			var err error
			if s, err = w.addSegment(t.Q); err != nil {
				return err
			}
		}
		if s != bufSeg {
			if err := flush(); err != nil {
				return err
			}
			bufSeg, bufQ = s, t.Q
		}
		prev := int64(-1)
		var p *page
		var i int
		if !t.Gone {
			p, i = w.slot(t.Due)
			if h := p.heads[i] - 1; h >= w.first {
				prev = h
			}
		}
		buf = appendRecord(buf, t, prev)
		if !t.Gone {
			p.heads[i] = t.Q + 1
			s.maxDue = max(s.maxDue, t.Due)
		}
		w.length++
		w.lastPhy = t.Phy
	}
	return flush()
}

// addSegment opens the segment for q, which must follow the open ones.
func (w *Wheel) addSegment(q int64) (*segment, error) {
	base := w.segBase(q)
	if n := len(w.segs); n > 0 && w.segs[n-1].end() != base {
		return nil, fmt.Errorf("%w: segment %d does not follow %d", ErrRange, base, w.segs[n-1].base)
	}
	s, err := openSegment(w.cfg.Dir, base, w.cfg.SegmentRecords)
	if err != nil {
		return nil, err
	}
	if err := vfs.Default.SyncDir(w.cfg.Dir); err != nil {
		_ = s.close()
		return nil, err
	}
	w.segs = append(w.segs, s)
	return s, nil
}

// Get returns the timer of queue offset q.
func (w *Wheel) Get(q int64) (Timer, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.getLocked(q)
}

func (w *Wheel) getLocked(q int64) (Timer, error) {
	if w.closed {
		return Timer{}, ErrClosed
	}
	if q < w.first || q >= w.length {
		return Timer{}, fmt.Errorf("%w: %d not in [%d, %d)", ErrRange, q, w.first, w.length)
	}
	s := w.segFor(q)
	if s == nil {
		return Timer{}, fmt.Errorf("%w: no segment for %d", ErrRange, q)
	}
	t, _, err := decodeRecord(s.at(q), q)
	return t, err
}

// Range calls visit for the timers of queue offsets [from, to) ∩ the held
// range, in order, until visit returns false.
func (w *Wheel) Range(from, to int64, visit func(Timer) bool) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	for q := max(from, w.first); q < min(to, w.length); q++ {
		t, err := w.getLocked(q)
		if err != nil {
			return err
		}
		if !visit(t) {
			return nil
		}
	}
	return nil
}

// Scan returns, in Key order, the first limit timers that are not Gone,
// with a key at or after from, due at or before until, and a queue offset
// below maxQ. Memory is bounded by limit whatever the number of timers a
// second holds; time is linear in the timers of the seconds it visits.
func (w *Wheel) Scan(from Key, until, maxQ int64, limit int) ([]Timer, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return nil, ErrClosed
	}
	if limit <= 0 || until < from.Due {
		return nil, nil
	}
	var out []Timer
	sec0, secEnd := secondOf(from.Due), secondOf(until)
	k0 := floorDiv(sec0, PageSeconds)
	for _, k := range w.pageKeys[sort.Search(len(w.pageKeys), func(i int) bool { return w.pageKeys[i] >= k0 }):] {
		start := k * PageSeconds
		if start > secEnd {
			break
		}
		p := w.pages[k]
		for i := max(sec0-start, 0); i < PageSeconds && start+i <= secEnd; i++ {
			head := p.heads[i] - 1
			if head < w.first {
				continue
			}
			got, err := w.walkSlot(head, from, until, maxQ, limit-len(out))
			if err != nil {
				return nil, err
			}
			out = append(out, got...)
			if len(out) >= limit {
				return out, nil
			}
		}
	}
	return out, nil
}

// walkSlot follows one second's chain from head and returns its matching
// timers in Key order, at most limit of them (the smallest keys).
func (w *Wheel) walkSlot(head int64, from Key, until, maxQ int64, limit int) ([]Timer, error) {
	h := &timerHeap{}
	for q := head; q >= w.first; {
		if q >= w.length {
			return nil, fmt.Errorf("%w: chain points at %d past the end %d", ErrCorrupt, q, w.length)
		}
		s := w.segFor(q)
		if s == nil {
			break
		}
		t, prev, err := decodeRecord(s.at(q), q)
		if err != nil {
			return nil, err
		}
		if t.Q < maxQ && !t.Key().Less(from) && t.Due <= until {
			if h.Len() < limit {
				heap.Push(h, t)
			} else if t.Key().Less((*h)[0].Key()) {
				(*h)[0] = t
				heap.Fix(h, 0)
			}
		}
		q = prev
	}
	out := []Timer(*h)
	sort.Slice(out, func(i, j int) bool { return out[i].Key().Less(out[j].Key()) })
	return out, nil
}

// timerHeap is a max-heap by Key: its top is the largest key kept.
type timerHeap []Timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[j].Key().Less(h[i].Key()) }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)        { *h = append(*h, x.(Timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

// Release drops what the owner's progress says is delivered: every timer
// with a queue offset below q and a key before r. Whole log files go
// (once the checkpoint no longer names them) and slot pages that end
// before r. It returns how many records were dropped.
func (w *Wheel) Release(q int64, r Key) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, ErrClosed
	}
	var drop []*segment
	first := w.first
	for _, s := range w.segs {
		if s.end() > q || s.end() > w.length || s.maxDue >= r.Due {
			break
		}
		drop = append(drop, s)
		first = s.end()
	}
	for len(w.pageKeys) > 0 && (w.pageKeys[0]+1)*PageSeconds*1000 <= r.Due {
		delete(w.pages, w.pageKeys[0])
		w.pageKeys = w.pageKeys[1:]
	}
	if len(drop) == 0 {
		return 0, nil
	}
	if err := w.syncLocked(first); err != nil {
		return 0, err
	}
	n := first - w.first
	w.first = first
	w.segs = w.segs[len(drop):]
	for _, s := range drop {
		_ = s.close()
		w.removeSegmentFile(s.base)
	}
	return n, nil
}

// Sync makes every record appended so far durable and writes the
// checkpoint that vouches for them.
func (w *Wheel) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	return w.syncLocked(w.first)
}

func (w *Wheel) syncLocked(first int64) error {
	for _, s := range w.segs {
		if err := s.sync(); err != nil {
			return err
		}
	}
	return writeCheckpoint(w.cfg.Dir, checkpoint{First: first, Len: w.length, LastPhy: w.lastPhy})
}

// Close syncs, writes the checkpoint and releases the files.
func (w *Wheel) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	err := w.syncLocked(w.first)
	w.closed = true
	w.closeFiles()
	return errors.Join(err, w.lock.Release())
}

func (w *Wheel) closeFiles() {
	for _, s := range w.segs {
		_ = s.close()
	}
	w.segs = nil
}
