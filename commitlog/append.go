package commitlog

import (
	"context"
	"encoding/binary"
	"fmt"
)

// AppendBatch reserves space for len(sizes) entries contiguously in one
// segment and has the caller write them: fill(i, offset, dst) gets exactly
// sizes[i] zeroed bytes of the batch's staging buffer and must write the
// whole payload, starting with its int32 big-endian length (== sizes[i]) and
// a magic other than BlankMagic. AppendBatch then writes the CRC trailers,
// writes the batch to the segment file with one pwrite (see Writes in the
// package documentation), publishes the new write position, and returns each
// entry's offset.
//
// When the batch does not fit in the rest of the active segment it goes to a
// new segment (the directory is fsynced after creating it)
// and the rest of the old one gets an end-of-segment marker. A batch larger
// than SegmentSize-8 bytes (payloads plus trailers) is ErrTooLarge; a size
// below MinEntrySize, or a payload whose header fill wrote wrongly, is
// ErrInvalidEntry. If fill returns an error (or writes a bad header)
// nothing is written or published: the write position stays, and the error
// is returned. A failed write of the batch is ErrWrite. A roll to a new segment that happened
// before fill stays (the marker is published with it).
//
// Concurrent calls are serialized; fill runs with the append lock held and
// must not call back into the Log. In FlushSync mode AppendBatch then waits,
// without the lock, until the batch is durable (group commit); if the flush
// fails it returns the ErrFlush error, and the batch is in the log but not
// known to be durable. Safe
// concurrently with every reader, Flush, WaitFlushed and DeleteExpired.
func (l *Log) AppendBatch(sizes []int, fill func(i int, offset int64, dst []byte) error) ([]int64, error) {
	offsets := make([]int64, len(sizes))
	if err := l.appendBatch(sizes, offsets, fill); err != nil {
		return nil, err
	}
	return offsets, nil
}

// Append is AppendBatch of one already-built payload, which is copied in.
// payload must start with its own length and a magic other than BlankMagic.
func (l *Log) Append(payload []byte) (int64, error) {
	sizes := [1]int{len(payload)}
	var offsets [1]int64
	err := l.appendBatch(sizes[:], offsets[:], func(_ int, _ int64, dst []byte) error {
		copy(dst, payload)
		return nil
	})
	return offsets[0], err
}

func (l *Log) appendBatch(sizes []int, offsets []int64, fill func(int, int64, []byte) error) error {
	if len(sizes) == 0 {
		return nil
	}
	total := int64(0)
	for _, n := range sizes {
		if n < MinEntrySize {
			return fmt.Errorf("%w (%d)", errEntryTooSmall, n)
		}
		if int64(n) > l.segSize {
			return fmt.Errorf("%w: entry of %d bytes", ErrTooLarge, n)
		}
		total += int64(n) + TrailerSize
		if total > l.segSize-MinEntrySize {
			return fmt.Errorf("%w: batch of %d entries exceeds %d bytes", ErrTooLarge, len(sizes), l.segSize-MinEntrySize)
		}
	}

	end, err := l.appendLocked(sizes, offsets, total, fill)
	if err != nil {
		return err
	}
	if l.cfg.FlushMode == FlushSync {
		return l.WaitFlushed(context.Background(), end)
	}
	return nil
}

// appendLocked does the work of AppendBatch under the append lock and
// returns the new write position.
//
// The batch is assembled in a staging buffer and written to the file with
// one pwrite, not stored through the mapping: a store to a page of a shared
// file mapping faults it in (and, on ext4, starts a journal handle per page),
// and every later writeback must write-protect the mapped pages again
// (rmap walk and TLB shootdown), which together cost more than the write
// itself. The mapping and pwrite share the page cache, so readers see the
// bytes through the mapping once the write position is published.
func (l *Log) appendLocked(sizes []int, offsets []int64, total int64, fill func(int, int64, []byte) error) (int64, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed.Load() {
		return 0, ErrClosed
	}
	if !l.recovered.Load() {
		return 0, ErrNotRecovered
	}
	seg, err := l.activeFor(total)
	if err != nil {
		return 0, err
	}
	start := l.wpos.Load()
	region := l.staging(int(total))
	pos := 0
	for i, n := range sizes {
		dst := region[pos : pos+n : pos+n]
		offsets[i] = start + int64(pos)
		err := fill(i, offsets[i], dst)
		if err == nil {
			err = checkHeader(dst)
			if err != nil {
				err = fmt.Errorf("entry %d: %w", i, err)
			}
		}
		if err != nil {
			return 0, err
		}
		pos += n + TrailerSize
	}
	pos = 0
	for _, n := range sizes {
		binary.BigEndian.PutUint32(region[pos+n:], EntryCRC(region[pos:pos+n]))
		pos += n + TrailerSize
	}
	if err := seg.writeAt(region, start-seg.start); err != nil {
		return 0, err
	}
	l.sumMu.Lock()
	l.sums.extend(start, region)
	l.sumMu.Unlock()
	end := start + total
	l.wpos.Store(end)
	return end, nil
}

// maxKeptStaging bounds the staging buffer kept between appends; a larger
// batch gets a buffer of its own.
const maxKeptStaging = 8 << 20

// staging returns a zeroed buffer of n bytes for one batch (zeroed, so a
// fill that skips bytes leaves zeros, as the file had, on every replica).
// The caller holds appendMu.
func (l *Log) staging(n int) []byte {
	if n > maxKeptStaging {
		return make([]byte, n)
	}
	if cap(l.stage) < n {
		l.stage = make([]byte, n, max(n, min(2*cap(l.stage), maxKeptStaging)))
		return l.stage[:n]
	}
	b := l.stage[:n]
	clear(b)
	return b
}

// activeFor returns the segment the next total bytes go to, rolling to a new
// segment (and writing the end-of-segment marker into the old one) when they
// do not fit. The caller holds appendMu.
func (l *Log) activeFor(total int64) (*segment, error) {
	wpos := l.wpos.Load()
	l.segMu.RLock()
	var active *segment
	if n := len(l.segs); n > 0 {
		active = l.segs[n-1]
	}
	l.segMu.RUnlock()
	if active != nil && active.end()-wpos >= total {
		return active, nil
	}
	// Roll. The new segment is created and the directory synced before the
	// marker is written, so a durable marker always has its successor.
	next := l.SegmentStart(wpos)
	if active != nil {
		next = active.end()
	}
	seg, err := createSegment(l.cfg.FS, l.cfg.Dir, next, l.segSize, l.cfg.Preallocate, l.log)
	if err != nil {
		return nil, err
	}
	if err := l.cfg.FS.SyncDir(l.cfg.Dir); err != nil {
		seg.release()
		removeQuietly(l.cfg.FS, seg.path, l.log)
		return nil, fmt.Errorf("commitlog: %w", err)
	}
	// Its size is durable (allocate synced it) and so is its name: zeros.
	seg.syncs = l.cfg.SyncReport
	l.cfg.SyncReport.Created(seg.path, seg.size)
	var marker []byte // what the old segment's rest starts with; zeros follow
	if active != nil {
		if rest := active.end() - wpos; rest >= MinEntrySize {
			var blank [MinEntrySize]byte
			putBlankHeader(blank[:], rest)
			marker = blank[:]
			if err := active.writeAt(blank[:], wpos-active.start); err != nil {
				seg.release()
				removeQuietly(l.cfg.FS, seg.path, l.log)
				return nil, err
			}
		}
	}
	l.segMu.Lock()
	l.segs = append(l.segs, seg)
	if len(l.segs) == 1 {
		l.minOff.Store(seg.start)
	}
	l.segMu.Unlock()
	l.sumMu.Lock()
	if active != nil {
		l.sums.extend(wpos, marker)
		l.sums.extendZeros(wpos+int64(len(marker)), next-wpos-int64(len(marker)))
	} else {
		l.sums.reset(next)
	}
	l.sumMu.Unlock()
	l.wpos.Store(next)
	return seg, nil
}
