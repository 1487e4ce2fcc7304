package commitlog

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/ledgermq/ledgermq/internal/vfs"
)

// Log is a segmented, append-only log of entries on mmap'd files. See the
// package documentation for the format, the invariants and which methods may
// run concurrently.
type Log struct {
	cfg     Config
	segSize int64
	log     hclog.Logger
	lock    *vfs.DirLock

	// appendMu serializes AppendBatch, Truncate, the end of Recover and
	// Close. Lock order: appendMu, flushMu, segMu, sigMu.
	appendMu  sync.Mutex
	stage     []byte // the batch staging buffer of appendLocked; appendMu
	recovered atomic.Bool
	closed    atomic.Bool

	// segMu guards segs, the mapped segments in offset order; their starts
	// are contiguous multiples of segSize.
	segMu sync.RWMutex
	segs  []*segment

	minOff  atomic.Int64 // start of the oldest segment (0 if none)
	wpos    atomic.Int64 // write position: bytes below it are published
	flushed atomic.Int64 // bytes below it are durable
	evicted int64        // bytes below it left memory (Config.CacheWindow); flushMu

	// flushMu is held for a whole flush, so that Truncate never sees a flush
	// in progress and the flushed position never passes the write position.
	flushMu sync.Mutex

	// sigMu guards sig, closed and replaced after every flush that moved
	// the flushed position (a broadcast), and flushErr, the sticky error of
	// a failed flush.
	sigMu    sync.Mutex
	sig      chan struct{}
	flushErr error

	kick chan struct{} // wakes the flusher; capacity 1
	stop chan struct{} // closed by Close to stop the flusher
	done chan struct{} // closed by the flusher when it has exited

	syncs atomic.Int64 // msync calls made by flushes, for tests and benchmarks

	// sumMu guards sums, the running CRC of the bytes written (sums.go);
	// taken after appendMu. checksumRead counts the bytes checksums read
	// from the files, for tests and benchmarks.
	sumMu        sync.Mutex
	sums         sumChain
	checksumRead atomic.Int64

	// Seams for tests: the disk usage probe and a hook the flusher calls
	// before every flush.
	diskUsage        func(dir string) (float64, error)
	testHookPreFlush func()
}

// Open opens (creating if needed) the log in cfg.Dir: it takes the
// directory lock (ErrLocked if another Log holds it), maps every segment and
// starts the flusher goroutine. It does not scan: the write position is
// unknown, and AppendBatch returns ErrNotRecovered, until Recover succeeds.
//
// Segment files must be named by their 20-digit start offset, start at
// multiples of SegmentSize, be contiguous and be SegmentSize bytes long;
// only the last one may be shorter (a creation cut short by a crash), and it
// is extended. Anything else is ErrBadSegment. Files with other names are
// ignored.
func Open(cfg Config) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	lock, err := vfs.Lock(cfg.Dir)
	if err != nil {
		if errors.Is(err, vfs.ErrLocked) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, cfg.Dir)
		}
		return nil, fmt.Errorf("commitlog: lock: %w", err)
	}
	l := &Log{
		cfg:       cfg,
		segSize:   cfg.SegmentSize,
		log:       cfg.Logger,
		lock:      lock,
		sig:       make(chan struct{}),
		kick:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		diskUsage: diskUsedRatio,
	}
	if err := l.loadSegments(); err != nil {
		for _, s := range l.segs {
			s.release()
		}
		lock.Release()
		return nil, err
	}
	if len(l.segs) > 0 {
		l.minOff.Store(l.segs[0].start)
	}
	l.wpos.Store(l.minOff.Load())
	l.flushed.Store(l.minOff.Load())
	go l.flusher()
	return l, nil
}

// loadSegments lists, validates and maps the segment files of the directory.
func (l *Log) loadSegments() error {
	entries, err := l.cfg.FS.ReadDir(l.cfg.Dir)
	if err != nil {
		return fmt.Errorf("commitlog: read dir: %w", err)
	}
	type file struct {
		start int64
		size  int64
		path  string
	}
	var files []file
	for _, e := range entries {
		start, ok := ParseSegmentName(e.Name())
		if !ok || e.IsDir() {
			if e.Name() != "LOCK" {
				l.log.Warn("ignoring unexpected file in commit log directory", "name", e.Name())
			}
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return fmt.Errorf("commitlog: stat %s: %w", e.Name(), err)
		}
		files = append(files, file{start: start, size: fi.Size(), path: filepath.Join(l.cfg.Dir, e.Name())})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].start < files[j].start })
	for i, f := range files {
		last := i == len(files)-1
		switch {
		case f.start%l.segSize != 0:
			return fmt.Errorf("%w: %s does not start at a multiple of the segment size %d", ErrBadSegment, f.path, l.segSize)
		case i > 0 && f.start != files[i-1].start+l.segSize:
			return fmt.Errorf("%w: %s does not follow %s (missing segment)", ErrBadSegment, f.path, files[i-1].path)
		case f.size > l.segSize || (f.size < l.segSize && !last):
			return fmt.Errorf("%w: %s has size %d, want %d", ErrBadSegment, f.path, f.size, l.segSize)
		}
		if f.size < l.segSize {
			l.log.Warn("extending short last segment", "path", f.path, "size", f.size)
		}
		s, err := openSegment(l.cfg.FS, f.path, f.start, l.segSize, l.cfg.Preallocate, l.log)
		if err != nil {
			return err
		}
		s.syncs = l.cfg.SyncReport
		l.segs = append(l.segs, s)
	}
	return nil
}

// Close stops the flusher (which makes everything written durable first),
// unmaps the segments, closes the files and releases the directory lock.
// Afterwards every method that returns an error returns ErrClosed.
//
// Close must not be called while Refs are held. If some are, Close still
// closes the log but keeps the mappings those Refs point into alive until
// each is released (so their bytes stay readable), logs an error and
// returns ErrRefsOutstanding. Close waits for in-flight appends; it must not
// run concurrently with Recover or Truncate.
func (l *Log) Close() error {
	if !l.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	close(l.stop)
	<-l.done

	l.segMu.Lock()
	outstanding := 0
	for _, s := range l.segs {
		if n := s.refs.Load() - 1; n > 0 {
			outstanding += int(n)
		}
		s.release()
	}
	l.segs = nil
	l.segMu.Unlock()

	err := l.stickyErr()
	if rerr := l.lock.Release(); rerr != nil && err == nil {
		err = fmt.Errorf("commitlog: release lock: %w", rerr)
	}
	if outstanding > 0 {
		l.log.Error("commit log closed with outstanding refs", "refs", outstanding)
		return fmt.Errorf("%w: %d", ErrRefsOutstanding, outstanding)
	}
	return err
}

// MinOffset returns the start of the oldest segment, or 0 if there is none.
// Safe for concurrent use.
func (l *Log) MinOffset() int64 { return l.minOff.Load() }

// MaxOffset returns the write position: every entry below it is published
// and readable. Before Recover it equals MinOffset. Safe for concurrent use.
func (l *Log) MaxOffset() int64 { return l.wpos.Load() }

// FlushedOffset returns the position below which every byte is durable.
// Safe for concurrent use.
func (l *Log) FlushedOffset() int64 { return l.flushed.Load() }

// SegmentStart returns the start offset of the segment that contains (or
// would contain) offset. It is pure arithmetic. Safe for concurrent use.
func (l *Log) SegmentStart(offset int64) int64 {
	if offset < 0 {
		return 0
	}
	return offset - offset%l.segSize
}

// Segments lists every segment, oldest first; the last one is the active
// segment (not sealed). It returns an empty list after Close. Safe for
// concurrent use.
func (l *Log) Segments() []SegmentInfo {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	out := make([]SegmentInfo, 0, len(l.segs))
	for i, s := range l.segs {
		out = append(out, SegmentInfo{
			Start:   s.start,
			Size:    l.segSize,
			Path:    s.path,
			Sealed:  i < len(l.segs)-1,
			ModTime: s.modTime(),
		})
	}
	return out
}

// SealedSegments lists the segments that are full (every one but the active
// one), oldest first. Safe for concurrent use.
func (l *Log) SealedSegments() []SegmentInfo {
	all := l.Segments()
	if len(all) == 0 {
		return nil
	}
	return all[:len(all)-1]
}

// segmentAt returns the index of the segment holding offset in segs, or -1.
// The caller holds segMu.
func (l *Log) segmentAt(offset int64) int {
	if len(l.segs) == 0 || offset < l.segs[0].start {
		return -1
	}
	i := (offset - l.segs[0].start) / l.segSize
	if i >= int64(len(l.segs)) {
		return -1
	}
	return int(i)
}
