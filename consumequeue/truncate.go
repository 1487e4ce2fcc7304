package consumequeue

import (
	"errors"
	"fmt"
	"io/fs"
)

// Truncate drops every unit at queue offset ≥ offset: whole files past it
// are removed (and the directory synced), the file holding it is cut. If
// offset ≤ the first unit on disk the queue is left with no unit and no
// file, and the next Put may start it anywhere. MinOffset never exceeds
// MaxOffset afterwards. Takes the queue's lock exclusively.
func (q *Queue) Truncate(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: truncate %s@%d", ErrOffsetTooSmall, q, offset)
	}
	if err := q.lock(); err != nil {
		return err
	}
	defer q.mu.Unlock()
	return q.truncateLocked(offset)
}

func (q *Queue) truncateLocked(offset int64) error {
	if offset >= q.max.Load() {
		return nil
	}
	// The tail goes to its file first, so that what follows sees every
	// unit in the files (a rare path: recovery, re-dispatch).
	if err := q.spillLocked(); err != nil {
		return err
	}
	if offset <= q.first {
		if err := q.removeFilesLocked(q.first); err != nil {
			return err
		}
		q.setEmpty(offset)
		return nil
	}
	start := q.fileStart(offset)
	keepFile := offset > start
	from := start
	if keepFile {
		from = q.fileEnd(start)
	}
	if err := q.removeFilesLocked(from); err != nil {
		return err
	}
	if keepFile {
		cf, err := q.s.cache.acquire(fileKey{q, start}, false)
		if err != nil {
			return fmt.Errorf("truncate %s@%d: %w", q, offset, err)
		}
		err = cf.f.Truncate((offset - start) * UnitSize)
		q.s.cache.release(cf, true)
		if err != nil {
			return fmt.Errorf("consumequeue: truncate %s@%d: %w", q, offset, err)
		}
	}
	q.max.Store(offset)
	if q.min.Load() > offset {
		q.min.Store(offset)
	}
	return nil
}

// removeFilesLocked removes every file of the queue starting at or after
// queue offset from (≥ first), newest first, then syncs the directory.
// It does not change the offsets.
func (q *Queue) removeFilesLocked(from int64) error {
	removed := false
	// fileStart(max) is the file a Put at max would write: it may exist
	// empty if that Put failed.
	for s := q.fileStart(q.max.Load()); s >= from; s = q.fileStart(s - 1) {
		err := q.removeFile(s)
		if err == nil {
			removed = true
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if s == q.first {
			break
		}
	}
	if removed {
		if err := q.s.cfg.FS.SyncDir(q.dir()); err != nil {
			return fmt.Errorf("consumequeue: %s: %w", q, err)
		}
	}
	return nil
}

// removeFile removes the file starting at start and drops its handle. A
// missing file is reported wrapping fs.ErrNotExist.
func (q *Queue) removeFile(start int64) error {
	q.s.cache.forget(fileKey{q, start})
	if err := q.s.cfg.FS.Remove(q.filePath(start)); err != nil {
		return fmt.Errorf("consumequeue: %s: %w", q, err)
	}
	return nil
}

// TruncateByPhysical drops every trailing unit whose CommitLog offset is ≥
// phyOffset, after the CommitLog tail was cut there. Units increase in
// CommitLog offset, so it binary-searches the first such unit and
// truncates at it. Takes the queue's lock exclusively.
func (q *Queue) TruncateByPhysical(phyOffset int64) error {
	if err := q.lock(); err != nil {
		return err
	}
	defer q.mu.Unlock()
	o, err := q.searchPhysicalLocked(q.first, q.max.Load(), phyOffset)
	if err != nil {
		return err
	}
	return q.truncateLocked(o)
}

// searchPhysicalLocked returns the first queue offset in [lo, hi) whose
// unit has CommitLog offset ≥ phy, or hi. Invalid units count as their
// raw offset (a never-written unit: 0).
func (q *Queue) searchPhysicalLocked(lo, hi, phy int64) (int64, error) {
	for lo < hi {
		mid := lo + (hi-lo)/2
		u, err := q.readRawLocked(mid)
		if err != nil {
			return 0, err
		}
		if u.Offset >= phy {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}

// DeleteBefore applies CommitLog retention: it removes whole files whose
// units all point below phyMinOffset (judged by each file's last unit),
// never the last file (the one being written), then advances MinOffset to
// the first unit whose CommitLog offset is ≥ phyMinOffset (MaxOffset if
// none is). MinOffset never moves back. Takes the queue's lock
// exclusively.
func (q *Queue) DeleteBefore(phyMinOffset int64) error {
	if err := q.lock(); err != nil {
		return err
	}
	defer q.mu.Unlock()
	max := q.max.Load()
	if max == q.first {
		return nil
	}
	last := q.fileStart(max - 1)
	removed := false
	var err error
	for q.first < last {
		end := q.fileEnd(q.first)
		var u Unit
		if u, err = q.readRawLocked(end - 1); err != nil || u.Offset >= phyMinOffset {
			break
		}
		if err = q.removeFile(q.first); err != nil && !errors.Is(err, fs.ErrNotExist) {
			break
		}
		err = nil
		removed = true
		q.first = end
		if q.min.Load() < end {
			q.min.Store(end)
		}
	}
	if removed {
		if serr := q.s.cfg.FS.SyncDir(q.dir()); serr != nil && err == nil {
			err = fmt.Errorf("consumequeue: %s: %w", q, serr)
		}
	}
	if err != nil {
		return err
	}
	o, err := q.searchPhysicalLocked(q.min.Load(), max, phyMinOffset)
	if err != nil {
		return err
	}
	q.min.Store(o)
	return nil
}
