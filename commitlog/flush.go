package commitlog

import (
	"context"
	"time"
)

// flusher is the one background goroutine of a Log. It is started by Open
// and stopped by Close, which waits for it. It flushes when kicked (by
// WaitFlushed, and so by every FlushSync append), every FlushInterval in
// FlushAsync mode, and once more before it exits.
func (l *Log) flusher() {
	defer close(l.done)
	var tick <-chan time.Time
	if l.cfg.FlushMode == FlushAsync {
		t := time.NewTicker(l.cfg.FlushInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-l.stop:
			l.flushOnce()
			return
		case <-l.kick:
		case <-tick:
		}
		l.flushOnce()
	}
}

// flushOnce makes everything below the current write position durable and
// wakes the waiters. Group commit comes from its shape: appenders that
// publish while an msync is running are all covered by the next one.
func (l *Log) flushOnce() {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.stickyErr() != nil {
		return
	}
	if h := l.testHookPreFlush; h != nil {
		h()
	}
	from, to := l.flushed.Load(), l.wpos.Load()
	if to <= from {
		return
	}
	// Take references under the lock so that retention cannot unmap a
	// segment while it is being synced.
	var segs []*segment
	l.segMu.RLock()
	for _, s := range l.segs {
		if s.end() > from && s.start < to {
			s.acquire()
			segs = append(segs, s)
		}
	}
	l.segMu.RUnlock()
	var err error
	for _, s := range segs {
		if err == nil {
			lo, hi := max(from, s.start)-s.start, min(to, s.end())-s.start
			err = s.sync(int(lo), int(hi))
			l.syncs.Add(1)
			if err == nil && s.end() <= to {
				// Sealed and now durable: appends are done with it, so
				// its pages leave this process until a reader needs
				// them again.
				s.dontNeed(0, int(s.size))
			}
		}
		s.release()
	}
	l.sigMu.Lock()
	if err != nil {
		l.flushErr = err
		l.log.Error("commit log flush failed; durability is no longer guaranteed", "error", err)
	} else {
		l.flushed.Store(to)
	}
	close(l.sig)
	l.sig = make(chan struct{})
	l.sigMu.Unlock()
	if err == nil && l.cfg.CacheWindow > 0 {
		l.evictBelow(to - l.cfg.CacheWindow)
	}
}

// evictStep is the least a flush evicts at once: a pair of system calls per
// segment every few MiB, not at every flush of a quiet log.
const evictStep = 4 << 20

// evictBelow takes the log's bytes below off out of memory
// (Config.CacheWindow). The caller holds flushMu and off is below the
// flushed position, so the pages are clean and the kernel frees them at
// once; readers that touch them later fault them in from the file.
func (l *Log) evictBelow(off int64) {
	from := max(l.evicted, l.minOff.Load())
	if off-from < evictStep {
		return
	}
	var segs []*segment
	l.segMu.RLock()
	for _, s := range l.segs {
		if s.end() > from && s.start < off {
			s.acquire()
			segs = append(segs, s)
		}
	}
	l.segMu.RUnlock()
	for _, s := range segs {
		lo, hi := max(from, s.start)-s.start, min(off, s.end())-s.start
		s.dontNeed(int(lo), int(hi))
		s.dropCache(lo, hi)
		s.release()
	}
	l.evicted = off
}

func (l *Log) stickyErr() error {
	l.sigMu.Lock()
	defer l.sigMu.Unlock()
	return l.flushErr
}

// signal returns the channel the next flush closes, and the sticky error.
func (l *Log) signal() (<-chan struct{}, error) {
	l.sigMu.Lock()
	defer l.sigMu.Unlock()
	return l.sig, l.flushErr
}

func (l *Log) kickFlusher() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// WaitFlushed blocks until FlushedOffset() >= offset, ctx is done (its error
// is returned), a flush fails (ErrFlush) or the log is closed (ErrClosed,
// unless the final flush of Close covered offset). It asks the flusher for
// a flush rather than waiting for the next interval. Waiting for an offset
// past MaxOffset waits until that much has been written and flushed. Safe
// for concurrent use; many waiters share one flush.
func (l *Log) WaitFlushed(ctx context.Context, offset int64) error {
	for {
		sig, err := l.signal()
		if l.flushed.Load() >= offset {
			return nil
		}
		if err != nil {
			return err
		}
		l.kickFlusher()
		select {
		case <-sig:
		case <-ctx.Done():
			return ctx.Err()
		case <-l.done:
			if l.flushed.Load() >= offset {
				return nil
			}
			if err := l.stickyErr(); err != nil {
				return err
			}
			return ErrClosed
		}
	}
}

// SyncTo makes everything below offset durable as WaitFlushed does, but
// runs the flush on the caller's goroutine when one is needed instead of
// handing it to the flusher and waiting to be woken: for the one appender
// that waits for its own append (a raft log store), that saves two
// goroutine hand-offs — often two thread wake-ups — per append. It shares
// flushOnce (and its lock) with the flusher, so a flush running already
// covers the caller once it ends. Errors are WaitFlushed's.
func (l *Log) SyncTo(offset int64) error {
	if l.flushed.Load() >= offset {
		return nil
	}
	if !l.closed.Load() {
		l.flushOnce()
	}
	return l.WaitFlushed(context.Background(), offset)
}

// Flush makes everything published so far durable and returns when it is.
// It goes through the flusher, so concurrent Flush calls and FlushSync
// appends share msyncs. Safe concurrently with AppendBatch.
func (l *Log) Flush() error {
	if l.closed.Load() {
		return ErrClosed
	}
	return l.WaitFlushed(context.Background(), l.wpos.Load())
}
