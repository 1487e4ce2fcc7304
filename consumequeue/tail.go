package consumequeue

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
)

// A queue's newest units wait in memory, its tail, until they make
// Config.WriteBuffer bytes, fill their file, or a Flush, Close or a
// truncation comes; then they are written with one pwrite. A busy queue
// takes a few dozen units per raft entry, and a small pwrite every few
// milliseconds pays the file's modification-time update (a journalled
// inode change) each time: one write per WriteBuffer bytes pays it once
// for about two hundred units. Readers are served the tail from memory.
//
// Invariants (the queue's lock guards the tail):
//
//   - The tail holds the units at queue offsets [written, MaxOffset),
//     written = MaxOffset − len(tail)/UnitSize, all in the file holding
//     written; every unit below written is in its file. A file is written
//     whole before the next one starts (a tail that fills its file is
//     written at once).
//   - A queue with a tail buffer (tail != nil) holds WriteBuffer bytes of
//     the Store's budget (Config.MaxBuffered); a queue that finds the
//     budget spent writes each Put at once, as with a negative WriteBuffer.
//   - A queue whose tail holds units is on the Store's list of buffered
//     queues (listed); Flush writes and syncs every listed queue's tail and
//     gives its buffer back, so a unit is durable after the first Flush
//     that follows its Put, as before.
//   - A failed write publishes nothing new: the Put whose units did not
//     reach the file fails and leaves MaxOffset where it was; the units
//     already in the tail stay there, readable, for the next write.
//
// A process that dies loses its tails along with whatever the page cache
// would not have kept; the CommitLog is the durable copy and recovery
// dispatches again from the checkpoint (store/doc.go), which vouches only
// for units a Flush wrote. CloseUnclean drops the tails as such a death
// does.

// Write buffer defaults.
const (
	// DefaultWriteBuffer is the bytes of units a queue holds before it
	// writes them: 204 units, within one page.
	DefaultWriteBuffer = 204 * UnitSize
	// DefaultMaxBuffered bounds the write buffers of a Store (16 MiB:
	// about 4 000 queues buffering at once).
	DefaultMaxBuffered = 16 << 20
)

// buffered is a Store's budget and list of queues with units in memory.
type buffered struct {
	reserved atomic.Int64 // bytes of buffers handed out
	mu       sync.Mutex
	queues   []*Queue // queues whose tail may hold units (listed set)
}

// writtenLocked is the queue offset of the tail's first unit: every unit
// below it is in its file. The caller holds mu.
func (q *Queue) writtenLocked() int64 {
	return q.max.Load() - int64(len(q.tail)/UnitSize)
}

// takeBuffer gives the queue a tail buffer from the Store's budget and
// reports whether it has one. The caller holds mu exclusively.
func (q *Queue) takeBuffer() bool {
	if q.tail != nil {
		return true
	}
	size := q.s.cfg.WriteBuffer
	if size <= 0 {
		return false
	}
	if q.s.buf.reserved.Add(int64(size)) > int64(q.s.cfg.MaxBuffered) {
		q.s.buf.reserved.Add(-int64(size))
		return false
	}
	q.tail = make([]byte, 0, size)
	return true
}

// dropBufferLocked gives an empty tail's buffer back to the budget. The
// caller holds mu exclusively.
func (q *Queue) dropBufferLocked() {
	if q.tail != nil && len(q.tail) == 0 {
		q.tail = nil
		q.s.buf.reserved.Add(-int64(q.s.cfg.WriteBuffer))
	}
}

// listLocked puts the queue on the Store's list of buffered queues unless
// it is there. The caller holds mu exclusively.
func (q *Queue) listLocked() {
	if q.listed.CompareAndSwap(false, true) {
		q.s.buf.mu.Lock()
		q.s.buf.queues = append(q.s.buf.queues, q)
		q.s.buf.mu.Unlock()
	}
}

// appendLocked puts units at o == MaxOffset, all inside the file holding
// o: into the tail, and the tail into the file when it is full or the
// file is; without a buffer, straight into the file. The caller holds mu
// exclusively.
func (q *Queue) appendLocked(o int64, units []Unit) error {
	start := q.fileStart(o)
	end := o + int64(len(units))
	if len(q.tail) > 0 && q.fileStart(q.writtenLocked()) != start {
		// Not reached while the tail's file is written when it fills;
		// kept so that a tail never spans two files whatever calls come.
		if err := q.spillLocked(); err != nil {
			return err
		}
	}
	if !q.takeBuffer() {
		if err := q.writeUnits(o, units); err != nil {
			return err
		}
		q.max.Store(end)
		return nil
	}
	at := o - int64(len(q.tail)/UnitSize)
	mark := len(q.tail)
	for _, u := range units {
		q.tail = appendUnit(q.tail, u)
	}
	if len(q.tail) < q.s.cfg.WriteBuffer && end < q.fileEnd(start) {
		q.max.Store(end)
		q.listLocked()
		return nil
	}
	if err := q.writeAt(at, q.tail); err != nil {
		q.tail = q.tail[:mark]
		return err
	}
	q.tail = q.tail[:0]
	if cap(q.tail) > 2*q.s.cfg.WriteBuffer {
		// A long batch grew it: keep the budget's size.
		q.tail = make([]byte, 0, q.s.cfg.WriteBuffer)
	}
	q.max.Store(end)
	return nil
}

// writeUnits writes units at queue offset o in one write, encoded on the
// stack when they are a batch's few (stackUnits).
func (q *Queue) writeUnits(o int64, units []Unit) error {
	var stack [stackUnits * UnitSize]byte
	var b []byte
	if n := len(units) * UnitSize; n <= len(stack) {
		b = stack[:0]
	} else {
		b = make([]byte, 0, n)
	}
	for _, u := range units {
		b = appendUnit(b, u)
	}
	return q.writeAt(o, b)
}

// writeAt writes encoded units b at queue offset o, inside the file
// holding o, creating that file (and the queue's directories) when o
// starts it.
func (q *Queue) writeAt(o int64, b []byte) error {
	start := q.fileStart(o)
	k := fileKey{q, start}
	create := o == start
	cf, err := q.s.cache.acquire(k, create)
	if create && errors.Is(err, fs.ErrNotExist) {
		if err = q.makeDirs(); err == nil {
			cf, err = q.s.cache.acquire(k, true)
		}
	}
	if err != nil {
		return fmt.Errorf("put %s@%d: %w", q, o, err)
	}
	if create {
		q.s.cache.dirCreated(q.dir())
	}
	_, err = cf.f.WriteAt(b, (o-start)*UnitSize)
	q.s.cache.release(cf, true)
	if err != nil {
		return fmt.Errorf("consumequeue: put %s@%d: %w", q, o, err)
	}
	return nil
}

// spillLocked writes the tail's units to their file. The caller holds mu
// exclusively.
func (q *Queue) spillLocked() error {
	if len(q.tail) == 0 {
		return nil
	}
	if err := q.writeAt(q.writtenLocked(), q.tail); err != nil {
		return err
	}
	q.tail = q.tail[:0]
	return nil
}

// tailUnit returns the unit at queue offset o ≥ written from the tail. The
// caller holds mu.
func (q *Queue) tailUnit(o, written int64) Unit {
	return rawUnit(q.tail[(o-written)*UnitSize:])
}

// spillAll writes every listed queue's tail (Flush, Close) and gives the
// buffers back. A queue whose write fails stays listed, its units in
// memory for the next call, and the errors are returned joined.
func (s *Store) spillAll() error {
	return s.eachListed(func(q *Queue) error {
		if err := q.spillLocked(); err != nil {
			return err
		}
		q.dropBufferLocked()
		return nil
	})
}

// dropAll forgets every listed queue's tail unwritten (CloseUnclean).
func (s *Store) dropAll() {
	_ = s.eachListed(func(q *Queue) error {
		q.dropTailLocked()
		return nil
	})
}

// eachListed takes the list of buffered queues and calls fn with each
// queue's lock held; a queue fn fails for is listed again. It returns
// fn's errors joined.
func (s *Store) eachListed(fn func(q *Queue) error) error {
	s.buf.mu.Lock()
	queues := s.buf.queues
	s.buf.queues = nil
	s.buf.mu.Unlock()
	var errs []error
	for _, q := range queues {
		// Unlisted before its lock is taken: a Put that comes after
		// this call lists the queue again.
		q.listed.Store(false)
		q.mu.Lock()
		if err := fn(q); err != nil {
			q.listLocked()
			errs = append(errs, err)
		}
		q.mu.Unlock()
	}
	return errors.Join(errs...)
}

// dropTailLocked forgets the tail's units and buffer, moving MaxOffset
// back to the units in the file (a deleted topic's handle, CloseUnclean).
// The caller holds mu exclusively.
func (q *Queue) dropTailLocked() {
	if len(q.tail) > 0 {
		w := q.writtenLocked()
		q.max.Store(w)
		if q.min.Load() > w {
			q.min.Store(w)
		}
		q.tail = q.tail[:0]
	}
	q.dropBufferLocked()
}
