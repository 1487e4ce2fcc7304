package commitlog

import (
	"fmt"
)

// Recover scans the log from offset from (an entry boundary the caller
// trusts, at least MinOffset; MinOffset itself for an empty log) to the end
// of the written data, calls visit for every valid entry in order and
// corrupt for every damaged range that valid data follows, then sets the
// write position to the end of the data and returns it.
//
// The end of the data is a zero length, or an invalid entry, after which
// nothing valid follows in its segment and no later segment holds a valid
// entry. Recover zeroes the rest of that segment (and syncs what it zeroed)
// and removes the later segments, which hold no valid data. Valid data after
// damage is never dropped: the damaged range [bad, next valid entry) is
// reported and the scan goes on, resynchronising by searching forward for
// the next position where a well-formed entry with a valid trailer starts
// (see resync.go), or at the next segment.
//
// visit's payload aliases the mapped file and is valid only during the
// call; if visit returns an error Recover stops, changes nothing and returns
// it wrapped (Recover may then be called again). corrupt may be nil.
//
// Recover must be called once, before any append, and not concurrently with
// any other method except the accessors.
func (l *Log) Recover(from int64, visit func(offset int64, payload []byte) error, corrupt func(CorruptRange)) (int64, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed.Load() {
		return 0, ErrClosed
	}
	if l.recovered.Load() {
		return 0, ErrRecovered
	}
	segs := l.segs
	if len(segs) == 0 {
		if from != l.minOff.Load() {
			return 0, fmt.Errorf("%w: recover from %d in an empty log", ErrOutOfRange, from)
		}
		l.recovered.Store(true)
		return from, nil
	}
	lastEnd := segs[len(segs)-1].end()
	if from < segs[0].start || from > lastEnd {
		return 0, fmt.Errorf("%w: recover from %d outside [%d, %d]", ErrOutOfRange, from, segs[0].start, lastEnd)
	}
	k := int((from - segs[0].start) / l.segSize)
	if k == len(segs) { // from is the end of the last segment
		k--
	}
	pos := int(from - segs[k].start)
	first, firstPos := k, pos

	// Where the segments may hold data: the searches for valid data past
	// the end skip holes without reading them, so the unwritten part of a
	// segment is never faulted into the mapping.
	exts := make([]extents, len(segs))
	for j := k; j < len(segs); j++ {
		exts[j] = segs[j].dataExtents()
	}
	// The last segment holding a valid entry decides whether damage with
	// nothing valid after it in its segment is corruption or the end.
	lastData := k
	for j := len(segs) - 1; j > k; j-- {
		if s := (searcher{b: segs[j].data, segLen: len(segs[j].data), ext: exts[j]}); s.hasEntry(0) {
			lastData = j
			break
		}
	}

	w := walker{visit: visit, corrupt: corrupt}
	var end int
	for {
		seg := segs[k]
		var next bool
		var err error
		end, next, err = w.segment(seg.data, exts[k], len(seg.data), seg.start, pos, k < lastData, false)
		if err != nil {
			return 0, fmt.Errorf("commitlog: recover: visit: %w", err)
		}
		if !next || k == len(segs)-1 {
			break
		}
		k++
		pos = 0
	}
	seg := segs[k]
	wpos := seg.start + int64(end)

	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	// What the scan found may be in the page cache only (a crash of the
	// process, not of the machine): sync it before it counts as flushed,
	// since the next flush starts at the recovered end and a snapshot
	// relies on everything below it being on disk.
	for j := first; j <= k; j++ {
		lo, hi := 0, len(segs[j].data)
		if j == first {
			lo = firstPos
		}
		if j == k {
			hi = end
		}
		if err := segs[j].sync(lo, hi); err != nil {
			return 0, err
		}
	}
	if end < len(seg.data) {
		if i := exts[k].lastNonZero(seg.data, end); i >= 0 {
			clear(seg.data[end : i+1])
			if err := seg.syncZeroed(end, i+1); err != nil {
				return 0, err
			}
		}
	}
	if err := l.removeAfter(seg); err != nil {
		return 0, err
	}
	// Release what the scan faulted in but appends and readers of new data
	// do not need: the sealed segments it crossed and the active segment's
	// tail past the end.
	for j := first; j < k; j++ {
		segs[j].dontNeed(0, len(segs[j].data))
	}
	seg.dontNeed(end, len(seg.data))
	l.flushed.Store(wpos)
	l.resetSums(wpos)
	l.wpos.Store(wpos)
	l.recovered.Store(true)
	return wpos, nil
}

// removeAfter drops every segment after last from the list, deletes their
// files and fsyncs the directory. The caller holds appendMu and flushMu.
// Segments still referenced stay mapped until released.
func (l *Log) removeAfter(last *segment) error {
	l.segMu.Lock()
	k := len(l.segs) - 1
	for k >= 0 && l.segs[k] != last {
		k--
	}
	gone := append([]*segment(nil), l.segs[k+1:]...)
	l.segs = l.segs[: k+1 : k+1]
	l.segMu.Unlock()
	if len(gone) == 0 {
		return nil
	}
	var firstErr error
	for _, s := range gone {
		l.log.Info("removing segment past the end of data", "path", s.path)
		if err := l.cfg.FS.Remove(s.path); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("commitlog: remove segment: %w", err)
		}
		s.release()
	}
	if err := l.cfg.FS.SyncDir(l.cfg.Dir); err != nil && firstErr == nil {
		firstErr = err
	}
	return firstErr
}

// Scan visits the valid entries from offset from (an entry boundary at or
// above MinOffset) up to the write position, verifying them as Recover does
// and reporting every damaged range below the write position to corrupt
// (which may be nil). It changes nothing. visit's payload is valid only
// during the call; an error from visit stops the scan and is returned
// wrapped. Safe concurrently with appends (entries published after Scan
// started may or may not be visited) and with retention (a segment being
// scanned is held).
func (l *Log) Scan(from int64, visit func(offset int64, payload []byte) error, corrupt func(CorruptRange)) error {
	if l.closed.Load() {
		return ErrClosed
	}
	limit := l.wpos.Load()
	if from < l.minOff.Load() || from > limit {
		return fmt.Errorf("%w: scan from %d outside [%d, %d]", ErrOutOfRange, from, l.minOff.Load(), limit)
	}
	w := walker{visit: visit, corrupt: corrupt}
	pos := from
	for pos < limit {
		l.segMu.RLock()
		i := l.segmentAt(pos)
		if l.closed.Load() || i < 0 {
			l.segMu.RUnlock()
			if l.closed.Load() {
				return ErrClosed
			}
			return fmt.Errorf("%w: offset %d was deleted during the scan", ErrOutOfRange, pos)
		}
		seg := l.segs[i]
		seg.acquire()
		l.segMu.RUnlock()

		readable := len(seg.data)
		if limit < seg.end() {
			readable = int(limit - seg.start)
		}
		_, next, err := w.segment(seg.data[:readable], nil, len(seg.data), seg.start, int(pos-seg.start), limit > seg.end(), true)
		seg.release()
		if err != nil {
			return fmt.Errorf("commitlog: scan: visit: %w", err)
		}
		if !next {
			break
		}
		pos = seg.end() // size and start outlive the mapping
	}
	return nil
}

// Truncate discards everything at and after offset, which must be an entry
// boundary between MinOffset and MaxOffset: it zeroes the rest of offset's
// segment (and syncs the zeroes, so the discarded data cannot come back
// after a crash), deletes later segments, fsyncs the directory and sets the
// write position (and, if it was higher, the flushed position) to offset.
// Used to drop an incomplete batch after Recover and to truncate a raft
// log's uncommitted tail. Not safe concurrently with AppendBatch or with
// readers of the discarded range.
func (l *Log) Truncate(offset int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if !l.recovered.Load() {
		return ErrNotRecovered
	}
	wpos := l.wpos.Load()
	if offset < l.minOff.Load() || offset > wpos {
		return fmt.Errorf("%w: truncate to %d outside [%d, %d]", ErrOutOfRange, offset, l.minOff.Load(), wpos)
	}
	if offset == wpos {
		return nil
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.segMu.RLock()
	k := l.segmentAt(offset)
	var seg *segment
	if k >= 0 {
		seg = l.segs[k]
		seg.acquire() // retention skips it (and everything after) meanwhile
	}
	l.segMu.RUnlock()
	if seg == nil {
		return fmt.Errorf("%w: truncate to %d: no segment", ErrOutOfRange, offset)
	}
	defer seg.release()
	lo, hi := int(offset-seg.start), len(seg.data)
	if wpos < seg.end() {
		hi = int(wpos - seg.start)
	}
	clear(seg.data[lo:hi])
	if err := seg.syncZeroed(lo, hi); err != nil {
		return err
	}
	if err := l.removeAfter(seg); err != nil {
		return err
	}
	if l.flushed.Load() > offset {
		l.flushed.Store(offset)
	}
	// What is written again below the old eviction point leaves memory
	// with the next flushes like any other tail.
	l.evicted = min(l.evicted, offset)
	l.truncateSums(offset)
	l.wpos.Store(offset)
	return nil
}
