package consumequeue

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
)

// readChunk is the number of units Get reads with one pread.
const readChunk = 256

// stackUnits is the number of units Put encodes without allocating.
const stackUnits = 128

var readBufs = sync.Pool{New: func() any { return new([readChunk * UnitSize]byte) }}

// Queue is the ConsumeQueue of one topic/queue: a run of files of
// UnitsPerFile units each, holding the units at queue offsets
// [MinOffset, MaxOffset).
//
// Concurrency: Put, Truncate, TruncateByPhysical and DeleteBefore take the
// queue's lock exclusively; Get, GetUnit and LastUnit share it;
// MinOffset and MaxOffset take no lock once the queue is loaded;
// OffsetByTime holds the lock only while it reads a unit. Put is meant to be
// called by one goroutine at a time (the store's dispatcher), concurrently
// with any number of readers.
//
// The handle keeps no per-file state: file names are computed from the
// queue offsets below.
type Queue struct {
	s     *Store
	topic string
	id    int32

	loaded atomic.Bool  // set once, with mu held
	min    atomic.Int64 // first readable queue offset; written with mu held
	max    atomic.Int64 // next queue offset to write; written with mu held

	mu      sync.RWMutex
	first   int64 // queue offset of the first unit of the first file
	deleted bool  // the topic was deleted; the handle is retired
	// tail holds the newest units until they are written (tail.go); nil:
	// no buffer from the Store's budget.
	tail []byte
	// listed: the queue is on the Store's list of buffered queues
	// (tail.go); set with mu held, cleared by the list's owner.
	listed atomic.Bool
}

// String returns "topic/queueId".
func (q *Queue) String() string { return q.topic + "/" + strconv.Itoa(int(q.id)) }

func (q *Queue) dir() string {
	return filepath.Join(q.s.cfg.Dir, q.topic, strconv.Itoa(int(q.id)))
}

// filePath returns the path of the file whose first unit is at queue
// offset start.
func (q *Queue) filePath(start int64) string {
	return filepath.Join(q.dir(), fileName(start))
}

// fileName is the 20-digit zero-padded byte offset of queue offset start.
func fileName(start int64) string {
	const digits = "00000000000000000000"
	s := strconv.FormatInt(start*UnitSize, 10)
	if len(s) >= len(digits) {
		return s
	}
	return digits[len(s):] + s
}

// parseFileName returns the queue offset of the first unit of the file
// named name, if name is a queue file name this store can hold.
func (s *Store) parseFileName(name string) (int64, bool) {
	if len(name) != 20 {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(name, 10, 64)
	if err != nil || v%UnitSize != 0 || v/UnitSize >= s.limit {
		return 0, false
	}
	return v / UnitSize, true
}

// fileStart returns the queue offset of the first unit of the file holding
// queue offset o ≥ first. Files after the first start at multiples of
// UnitsPerFile; the first may start later (a queue that began at a
// non-zero offset) and then ends at the next multiple.
func (q *Queue) fileStart(o int64) int64 {
	a := o - o%q.s.upf
	if a < q.first {
		return q.first
	}
	return a
}

// fileEnd returns the queue offset just past the file that starts at start.
func (q *Queue) fileEnd(start int64) int64 {
	return start - start%q.s.upf + q.s.upf
}

// readyLocked checks that the queue may be used and loads it if needed.
// The caller holds mu exclusively.
func (q *Queue) readyLocked() error {
	if err := q.usableLocked(); err != nil {
		return err
	}
	if !q.loaded.Load() {
		if err := q.load(); err != nil {
			return err
		}
		q.loaded.Store(true)
	}
	return nil
}

func (q *Queue) usableLocked() error {
	if q.s.closed.Load() {
		return ErrClosed
	}
	if q.deleted {
		return fmt.Errorf("%w: topic %s was deleted", ErrClosed, q.topic)
	}
	return nil
}

// lock takes mu exclusively with the queue loaded.
func (q *Queue) lock() error {
	q.mu.Lock()
	if err := q.readyLocked(); err != nil {
		q.mu.Unlock()
		return err
	}
	return nil
}

// rlock takes mu shared with the queue loaded.
func (q *Queue) rlock() error {
	if !q.loaded.Load() {
		if err := q.lock(); err != nil {
			return err
		}
		q.mu.Unlock()
	}
	q.mu.RLock()
	if err := q.usableLocked(); err != nil {
		q.mu.RUnlock()
		return err
	}
	return nil
}

// ensureLoaded loads the queue if it is not yet; a failure leaves the
// offsets at zero and is reported by the methods that return errors.
func (q *Queue) ensureLoaded() {
	if !q.loaded.Load() && q.lock() == nil {
		q.mu.Unlock()
	}
}

// retire marks the handle unusable and closes its files (DeleteTopic).
func (q *Queue) retire() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.deleted = true
	q.dropTailLocked()
	q.s.cache.forgetQueue(q)
}

// MinOffset returns the first queue offset that can be read: the start of
// the first file, advanced by DeleteBefore. After a restart it is the start
// of the first file until DeleteBefore is called again. A queue that fails
// to load reports 0.
func (q *Queue) MinOffset() int64 {
	q.ensureLoaded()
	return q.min.Load()
}

// MaxOffset returns the queue offset the next unit is written at: one past
// the last unit. A queue that fails to load reports 0.
func (q *Queue) MaxOffset() int64 {
	q.ensureLoaded()
	return q.max.Load()
}

// Put writes u at queueOffset.
//
//   - queueOffset == MaxOffset: an append (the normal case).
//   - MinOffset ≤ queueOffset < MaxOffset: the slot is overwritten and every
//     unit after it dropped (re-dispatch after a crash).
//   - the queue holds no unit at all (new, or truncated to nothing): the
//     queue starts at queueOffset, whatever it is; MinOffset becomes
//     queueOffset and the first file is named after it.
//   - otherwise queueOffset > MaxOffset fails with ErrGap and
//     queueOffset < MinOffset with ErrOffsetTooSmall.
//
// An invalid unit is refused with ErrBadUnit. Units must be written in
// increasing CommitLog offset order (TruncateByPhysical and DeleteBefore
// rely on it). One writer at a time per queue; readers run concurrently.
// The unit is durable after the next Store.Flush.
func (q *Queue) Put(queueOffset int64, u Unit) error {
	return q.PutUnits(queueOffset, []Unit{u})
}

// PutUnits writes units at consecutive queue offsets from queueOffset, with
// Put's rules for the first one, in one write per file touched (the store's
// dispatcher hands over a batch's units of one queue at once).
func (q *Queue) PutUnits(queueOffset int64, units []Unit) error {
	if len(units) == 0 {
		return nil
	}
	for i, u := range units {
		if !u.Valid() {
			return fmt.Errorf("%w: put %s@%d: offset %d size %d", ErrBadUnit, q, queueOffset+int64(i), u.Offset, u.Size)
		}
	}
	if queueOffset < 0 {
		return fmt.Errorf("%w: put %s@%d", ErrOffsetTooSmall, q, queueOffset)
	}
	if queueOffset+int64(len(units)) > q.s.limit {
		return fmt.Errorf("%w: put %s@%d", ErrOffsetTooLarge, q, queueOffset)
	}
	if err := q.lock(); err != nil {
		return err
	}
	defer q.mu.Unlock()
	min, max := q.min.Load(), q.max.Load()
	switch {
	case queueOffset == max:
	case max == q.first:
		if err := q.removeFilesLocked(q.first); err != nil {
			return err
		}
		q.first = queueOffset
		q.min.Store(queueOffset)
		q.max.Store(queueOffset)
	case queueOffset > max:
		return fmt.Errorf("%w: put %s@%d beyond max offset %d", ErrGap, q, queueOffset, max)
	case queueOffset < min:
		return fmt.Errorf("%w: put %s@%d below min offset %d", ErrOffsetTooSmall, q, queueOffset, min)
	default:
		if err := q.truncateLocked(queueOffset); err != nil {
			return err
		}
	}
	for len(units) > 0 {
		n := q.fileEnd(q.fileStart(queueOffset)) - queueOffset
		if int64(len(units)) < n {
			n = int64(len(units))
		}
		if err := q.appendLocked(queueOffset, units[:n]); err != nil {
			return err
		}
		queueOffset += n
		units = units[n:]
	}
	return nil
}

// makeDirs creates the topic and queue directories; Flush syncs their
// parents.
func (q *Queue) makeDirs() error {
	topicDir := filepath.Join(q.s.cfg.Dir, q.topic)
	for _, d := range []string{topicDir, q.dir()} {
		err := q.s.cfg.FS.Mkdir(d, 0o755)
		switch {
		case err == nil:
			q.s.cache.dirCreated(filepath.Dir(d))
		case !errors.Is(err, fs.ErrExist):
			return fmt.Errorf("consumequeue: %w", err)
		}
	}
	return nil
}

// Get returns up to max units starting at queue offset from, decoded. From
// below MinOffset fails with ErrOffsetTooSmall; from at or beyond
// MaxOffset returns no unit and no error. An invalid unit (a hole left by
// a crash) ends the read with an error wrapping ErrBadUnit and naming its
// queue offset; the valid units before it are returned with the error.
// Safe for concurrent use, also with Put.
func (q *Queue) Get(from int64, max int) ([]Unit, error) {
	if err := q.rlock(); err != nil {
		return nil, err
	}
	defer q.mu.RUnlock()
	min, end := q.min.Load(), q.max.Load()
	if from < min {
		return nil, fmt.Errorf("%w: get %s@%d, min offset %d", ErrOffsetTooSmall, q, from, min)
	}
	if from >= end || max <= 0 {
		return nil, nil
	}
	if n := from + int64(max); n < end && n > from {
		end = n
	}
	return q.readLocked(from, end)
}

// readLocked decodes the units at queue offsets [from, end), which lie in
// [first, MaxOffset). The caller holds mu.
func (q *Queue) readLocked(from, end int64) ([]Unit, error) {
	units := make([]Unit, 0, min(end-from, 4*readChunk))
	written := q.writtenLocked()
	fileEnd := min(end, written)
	if from < fileEnd {
		var err error
		if units, err = q.readFileLocked(units, from, fileEnd); err != nil {
			return units, err
		}
	}
	for o := max(from, written); o < end; o++ {
		units = append(units, q.tailUnit(o, written))
	}
	return units, nil
}

// readFileLocked appends to units the units at queue offsets [from, end),
// which are in their files. The caller holds mu.
func (q *Queue) readFileLocked(units []Unit, from, end int64) ([]Unit, error) {
	buf := readBufs.Get().(*[readChunk * UnitSize]byte)
	defer readBufs.Put(buf)
	for o := from; o < end; {
		start := q.fileStart(o)
		stop := min(q.fileEnd(start), end)
		cf, err := q.s.cache.acquire(fileKey{q, start}, false)
		if err != nil {
			return units, fmt.Errorf("get %s@%d: %w", q, o, err)
		}
		for o < stop {
			c := min(stop-o, readChunk)
			b := buf[:c*UnitSize]
			n, rerr := cf.f.ReadAt(b, (o-start)*UnitSize)
			for i := 0; i < n/UnitSize; i++ {
				u := rawUnit(b[i*UnitSize:])
				if !u.Valid() {
					q.s.cache.release(cf, false)
					return units, q.badUnit(o+int64(i), u)
				}
				units = append(units, u)
			}
			if int64(n) < c*UnitSize {
				q.s.cache.release(cf, false)
				return units, q.shortRead(o+int64(n/UnitSize), rerr)
			}
			o += c
		}
		q.s.cache.release(cf, false)
	}
	return units, nil
}

// readRawLocked returns the unit at queue offset o in [first, MaxOffset),
// valid or not. The caller holds mu.
func (q *Queue) readRawLocked(o int64) (Unit, error) {
	if written := q.writtenLocked(); o >= written {
		return q.tailUnit(o, written), nil
	}
	start := q.fileStart(o)
	cf, err := q.s.cache.acquire(fileKey{q, start}, false)
	if err != nil {
		return Unit{}, fmt.Errorf("read %s@%d: %w", q, o, err)
	}
	var b [UnitSize]byte
	n, rerr := cf.f.ReadAt(b[:], (o-start)*UnitSize)
	q.s.cache.release(cf, false)
	if n < UnitSize {
		return Unit{}, q.shortRead(o, rerr)
	}
	return rawUnit(b[:]), nil
}

func (q *Queue) badUnit(o int64, u Unit) error {
	return fmt.Errorf("%w: %s@%d: offset %d size %d", ErrBadUnit, q, o, u.Offset, u.Size)
}

func (q *Queue) shortRead(o int64, err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s@%d: file ends early", ErrShortUnit, q, o)
	}
	return fmt.Errorf("consumequeue: read %s@%d: %w", q, o, err)
}

// GetUnit returns the unit at queue offset offset: ErrOffsetTooSmall below
// MinOffset, ErrOffsetTooLarge at or beyond MaxOffset, ErrBadUnit if the
// slot holds an invalid unit. Safe for concurrent use, also with Put.
func (q *Queue) GetUnit(offset int64) (Unit, error) {
	if err := q.rlock(); err != nil {
		return Unit{}, err
	}
	defer q.mu.RUnlock()
	if min := q.min.Load(); offset < min {
		return Unit{}, fmt.Errorf("%w: get %s@%d, min offset %d", ErrOffsetTooSmall, q, offset, min)
	}
	if max := q.max.Load(); offset >= max {
		return Unit{}, fmt.Errorf("%w: get %s@%d, max offset %d", ErrOffsetTooLarge, q, offset, max)
	}
	u, err := q.readRawLocked(offset)
	if err != nil {
		return Unit{}, err
	}
	if !u.Valid() {
		return Unit{}, q.badUnit(offset, u)
	}
	return u, nil
}

// LastUnit returns the unit at MaxOffset-1; ok is false if the queue is
// empty (MinOffset == MaxOffset). Recovery uses it to find how far the
// queue was dispatched; it also reports a queue that fails to load.
// Safe for concurrent use, also with Put.
func (q *Queue) LastUnit() (u Unit, ok bool, err error) {
	if err := q.rlock(); err != nil {
		return Unit{}, false, err
	}
	defer q.mu.RUnlock()
	max := q.max.Load()
	if max == q.min.Load() {
		return Unit{}, false, nil
	}
	if u, err = q.readRawLocked(max - 1); err != nil {
		return Unit{}, false, err
	}
	if !u.Valid() {
		return Unit{}, false, q.badUnit(max-1, u)
	}
	return u, true, nil
}
