package commitlog

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/internal/syncreport"
	"github.com/ledgermq/ledgermq/internal/vfs"
)

// FlushMode says when appended data is made durable.
type FlushMode int

const (
	// FlushAsync returns from AppendBatch at once; the flusher goroutine
	// makes data durable every FlushInterval (RocketMQ's ASYNC_FLUSH).
	FlushAsync FlushMode = iota
	// FlushSync returns from AppendBatch only once the batch is durable;
	// concurrent appenders share one msync (group commit, SYNC_FLUSH).
	FlushSync
)

// String returns "async" or "sync".
func (m FlushMode) String() string {
	switch m {
	case FlushAsync:
		return "async"
	case FlushSync:
		return "sync"
	}
	return fmt.Sprintf("FlushMode(%d)", int(m))
}

// Defaults and bounds of Config.
const (
	DefaultSegmentSize           int64   = 1 << 30
	MinSegmentSize               int64   = 4 << 10
	MaxSegmentSize               int64   = math.MaxInt32 // the end-of-segment marker's length is an int32
	DefaultFlushInterval                 = 500 * time.Millisecond
	DefaultFileReservedTime              = 72 * time.Hour
	DefaultDiskMaxUsedSpaceRatio float64 = 0.75
)

// Config configures a Log. Zero values mean the default, so Config{Dir: d}
// is valid; DefaultConfig spells the defaults out.
type Config struct {
	// Dir holds the segment files and the LOCK file. Created if missing.
	Dir string
	// SegmentSize is the size of every segment file: at least
	// MinSegmentSize, at most MaxSegmentSize, a multiple of the OS page
	// size. It must not change for an existing directory. Default 1 GiB.
	SegmentSize int64
	// FlushMode is FlushAsync (default) or FlushSync.
	FlushMode FlushMode
	// FlushInterval is the period of the background flush in FlushAsync
	// mode. Default 500ms.
	FlushInterval time.Duration
	// FileReservedTime is how long a sealed segment is kept after its last
	// write before DeleteExpired removes it. Default 72h.
	FileReservedTime time.Duration
	// DiskMaxUsedSpaceRatio is the used fraction of the disk holding Dir
	// above which DeleteExpired removes sealed segments regardless of age.
	// 0 < r <= 1, default 0.75.
	DiskMaxUsedSpaceRatio float64
	// Preallocate reserves a new segment's disk blocks when it is created
	// (fallocate), so that the disk is claimed up front. Off by default: a
	// segment file is created sparse at its full size and takes disk space
	// as it is written; writes go through pwrite, so a full disk is an
	// error of the write (ErrWrite), never a fault of the mapping.
	Preallocate bool
	// Clock gives the time used for retention ages. Default time.Now.
	Clock func() time.Time
	// Logger receives warnings (ignored files, outstanding refs on Close,
	// flush failures) and retention decisions. Default: a null logger.
	Logger hclog.Logger
	// KeepFrom, if set, bounds retention: no segment that ends after the
	// offset it returns is deleted (the raft log's first entry still
	// needed, when the CommitLog is the raft log).
	KeepFrom func() int64
	// CacheWindow, when positive, bounds how much of the log stays in
	// memory: after each flush, the bytes more than CacheWindow below the
	// flushed position leave this process's mapping and the page cache
	// (madvise and fadvise DONTNEED; they are durable, so their pages are
	// clean and freed at once). Reads of them then go to the disk. The
	// memory freed is what the next appends write into, so a node's
	// footprint stays near CacheWindow instead of growing with the log
	// until the kernel reclaims it. 0: the kernel decides (everything
	// stays cached while memory lasts).
	CacheWindow int64
	// SyncReport, if set, records every sync of a segment (the chaos
	// harness's power-loss model, internal/syncreport); nil: off.
	SyncReport *syncreport.Report
	// FS is the file system the segments are created, written, mapped,
	// synced and removed through (internal/vfs); nil: the operating
	// system's. Tests pass a vfs.Faulty to fail those operations.
	FS vfs.FS
}

// DefaultConfig returns the configuration with every default filled in.
func DefaultConfig(dir string) Config {
	return Config{
		Dir:                   dir,
		SegmentSize:           DefaultSegmentSize,
		FlushMode:             FlushAsync,
		FlushInterval:         DefaultFlushInterval,
		FileReservedTime:      DefaultFileReservedTime,
		DiskMaxUsedSpaceRatio: DefaultDiskMaxUsedSpaceRatio,
		Clock:                 time.Now,
		Logger:                hclog.NewNullLogger(),
	}
}

// withDefaults returns c with zero values replaced by defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig(c.Dir)
	if c.SegmentSize == 0 {
		c.SegmentSize = d.SegmentSize
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = d.FlushInterval
	}
	if c.FileReservedTime == 0 {
		c.FileReservedTime = d.FileReservedTime
	}
	if c.DiskMaxUsedSpaceRatio == 0 {
		c.DiskMaxUsedSpaceRatio = d.DiskMaxUsedSpaceRatio
	}
	if c.Clock == nil {
		c.Clock = d.Clock
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	c.FS = vfs.Or(c.FS)
	return c
}

// Validate reports the first setting that is out of bounds, after zero
// values have been replaced by their defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	page := int64(os.Getpagesize())
	switch {
	case c.Dir == "":
		return errors.New("commitlog: config: Dir is empty")
	case c.CacheWindow < 0:
		return fmt.Errorf("commitlog: config: CacheWindow %d is negative", c.CacheWindow)
	case c.SegmentSize < MinSegmentSize || c.SegmentSize > MaxSegmentSize:
		return fmt.Errorf("commitlog: config: SegmentSize %d outside [%d, %d]", c.SegmentSize, MinSegmentSize, MaxSegmentSize)
	case c.SegmentSize%page != 0:
		return fmt.Errorf("commitlog: config: SegmentSize %d is not a multiple of the page size %d", c.SegmentSize, page)
	case c.FlushMode != FlushAsync && c.FlushMode != FlushSync:
		return fmt.Errorf("commitlog: config: unknown %v", c.FlushMode)
	case c.FlushInterval < time.Millisecond:
		return fmt.Errorf("commitlog: config: FlushInterval %v below 1ms", c.FlushInterval)
	case c.FileReservedTime < 0:
		return fmt.Errorf("commitlog: config: FileReservedTime %v is negative", c.FileReservedTime)
	case !(c.DiskMaxUsedSpaceRatio > 0 && c.DiskMaxUsedSpaceRatio <= 1):
		return fmt.Errorf("commitlog: config: DiskMaxUsedSpaceRatio %v outside (0, 1]", c.DiskMaxUsedSpaceRatio)
	}
	return nil
}

// String renders the effective configuration on one line, for logs and
// --check-config style tools.
func (c Config) String() string {
	c = c.withDefaults()
	return fmt.Sprintf("commitlog{dir=%q segmentSize=%d flushMode=%v flushInterval=%v fileReservedTime=%v diskMaxUsedSpaceRatio=%g}",
		c.Dir, c.SegmentSize, c.FlushMode, c.FlushInterval, c.FileReservedTime, c.DiskMaxUsedSpaceRatio)
}
