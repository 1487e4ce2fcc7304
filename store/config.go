package store

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/commitlog"
	"github.com/ledgermq/ledgermq/internal/syncreport"
	"github.com/ledgermq/ledgermq/internal/vfs"
)

// FlushMode says when Put returns relative to the CommitLog reaching disk:
// FlushAsync (RocketMQ ASYNC_FLUSH) returns once the batch is in the page
// cache and a background flush runs every FlushInterval (the raft log is the
// durable copy); FlushSync (SYNC_FLUSH) returns once the batch is on disk,
// concurrent Puts sharing one flush (group commit).
//
// With one log (Config.OneLog) the CommitLog is the raft log, and the mode
// says the same of AppendEntries: FlushSync fsyncs every append before it
// returns; FlushAsync returns once the entries are in the page cache and
// leaves them to the background flush, as RocketMQ's DLedger and NATS
// JetStream do by default. A kill -9 loses nothing either way; a crash of
// the machine may take the last FlushInterval of appends from a node, which
// then abstains from raft votes until it has them again (dledger's boot
// record).
type FlushMode = commitlog.FlushMode

// The flush modes.
const (
	FlushAsync = commitlog.FlushAsync
	FlushSync  = commitlog.FlushSync
)

// ParseFlushMode accepts RocketMQ's names (SYNC_FLUSH, ASYNC_FLUSH) and the
// short forms sync and async.
func ParseFlushMode(s string) (FlushMode, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "ASYNC_FLUSH", "ASYNC", "":
		return FlushAsync, nil
	case "SYNC_FLUSH", "SYNC":
		return FlushSync, nil
	}
	return 0, fmt.Errorf("store: unknown flush mode %q (want SYNC_FLUSH or ASYNC_FLUSH)", s)
}

// Config configures a Store. Start from DefaultConfig.
type Config struct {
	// Dir is the store's root: commitlog/, consumequeue/, index/ and the
	// checkpoint live below it.
	Dir string
	// SegmentSize is the CommitLog segment size (RocketMQ
	// mappedFileSizeCommitLog). Default 1 GiB.
	SegmentSize int64
	// FlushMode is RocketMQ's flushDiskType.
	FlushMode FlushMode
	// FlushInterval is the asynchronous flush period. Default 500 ms.
	FlushInterval time.Duration
	// CheckpointInterval is how often the queues are flushed and the
	// checkpoint written. Default 1 s.
	CheckpointInterval time.Duration
	// IndexFlushInterval and IndexFlushEntries: a checkpoint also flushes
	// the IndexFile once IndexFlushInterval has passed or IndexFlushEntries
	// keys were indexed since its last flush (and a clean close always).
	// Defaults 30 s and 100 000. IndexFlushBytes bounds the same work in
	// CommitLog bytes: a checkpoint also flushes the IndexFile once the
	// log has grown that far past what the last flush indexed (default
	// 64 MiB; large messages reach it long before 100 000 keys, and what
	// recovery reads again is bytes). A flush cleans every page of the
	// hash-slot table, and the next write to each then faults to dirty it
	// again: flushed every second, with random keys, that was a fault for
	// most messages. Between flushes the checkpoint records the index as
	// of the last flush, so recovery after a crash indexes again from
	// there: IndexFlushEntries bounds that work.
	IndexFlushInterval time.Duration
	IndexFlushEntries  int
	IndexFlushBytes    int64
	// UnitsPerQueueFile is the ConsumeQueue file size in units. Default
	// 300 000.
	UnitsPerQueueFile int
	// MaxOpenQueueFiles bounds the open ConsumeQueue file handles. Default
	// 1024.
	MaxOpenQueueFiles int
	// IndexSlots and IndexEntries size each IndexFile. Defaults 5 000 000
	// and 20 000 000.
	IndexSlots   int
	IndexEntries int
	// MaxMessageSize bounds one message body. Default 4 MiB.
	MaxMessageSize int
	// MaxGetBytes bounds the bytes one Get returns. Default 256 KiB.
	MaxGetBytes int
	// MaxScanUnits bounds the queue units one Get examines when a filter
	// rejects them. Default 16 000.
	MaxScanUnits int
	// FileReservedTime is how long sealed CommitLog segments are kept
	// (RocketMQ fileReservedTime, hours there). Default 72 h.
	FileReservedTime time.Duration
	// DeleteWhen is the hours of day (RocketMQ deleteWhen, e.g. "04" or
	// "03;04") at which expired segments are deleted. Default "04".
	DeleteWhen string
	// CacheWindow bounds how much of the CommitLog's tail stays in memory
	// (commitlog.Config.CacheWindow); 0: the kernel decides. Default
	// 256 MiB: seconds of a busy node's sends, which covers consumers
	// that keep up and raft's reads for followers; readers further
	// behind read from the disk. A node's page cache then stays about
	// that size instead of growing with the log: its appends write into
	// the memory the last eviction freed, which the kernel has at hand,
	// where a growing cache takes fresh memory for every page (on a
	// virtual machine whose host reclaims free guest memory, about five
	// times the cost of a page it recycles).
	CacheWindow int64
	// Preallocate reserves each new CommitLog segment's blocks at creation
	// (commitlog.Config.Preallocate). Default off: segments are sparse.
	Preallocate bool
	// DiskMaxUsedSpaceRatio: above it the oldest segments are deleted at
	// any hour, expired or not. Default 0.75.
	DiskMaxUsedSpaceRatio float64
	// DiskRefuseRatio: above it Put is refused with ErrDiskFull. Default
	// 0.95.
	DiskRefuseRatio float64
	// CleanInterval is how often retention runs. Default 10 s.
	CleanInterval time.Duration
	// Clock gives the time for retention; default time.Now. Nothing that is
	// written to the CommitLog comes from it (store times are the caller's).
	Clock func() time.Time
	// Logger; default a null logger.
	Logger hclog.Logger
	// SyncReport, if set, records every fsync of the store's CommitLog and
	// queues, and of the raft log beside it, in the node's durable-length
	// report (internal/syncreport, opened once per node by its owner): a
	// test aid for the chaos harness's power-loss nemesis; nil, the
	// default, is off.
	SyncReport *syncreport.Report
	// FS is the file system of the CommitLog's segments, the
	// ConsumeQueue's and IndexFile's files, the checkpoint and the
	// duplicate window's file (internal/vfs; nil: the operating
	// system's); tests fail its operations with vfs.Faulty. The local
	// snapshots' hard links do not go through it yet.
	FS vfs.FS
	// Faults, if set, breaks the store on purpose (a jepsenbroken build
	// only; Faults).
	Faults Faults
	// OnDispatch, if set, is called after a batch is visible to readers,
	// once per touched queue with its new max offset (long polling wakes on
	// it). It runs on the Put caller's goroutine and must not block or call
	// Put.
	OnDispatch func(topic string, queueID int32, maxOffset int64)
	// Duplicates configures the duplicate window (duplicates.go); the
	// zero value is on, with its defaults.
	Duplicates DuplicatesConfig

	// OneLog makes the CommitLog the raft log (entries.go): entries are
	// written by AppendEntries, made visible by DispatchEntry once
	// committed, and Put is refused. A store keeps the layout it was
	// created with: its directory records it (oneLogMarkerName).
	OneLog bool
	// CommittedSeq is, with OneLog, a sequence number known to be
	// committed (the raft snapshot's index): recovery dispatches the
	// entries up to it even when the checkpoint is lost.
	CommittedSeq uint64
	// EntriesFrom is, with OneLog, the CommitLog offset from which
	// recovery lists the raft entries for Entry (the end of the raft
	// snapshot's last entry); entries before it are compacted away.
	EntriesFrom int64
	// EntryDeletes, with OneLog, tells from an entry's header which topic
	// it deletes when applied ("" for none), for entries recovery finds
	// not yet dispatched (see Entry.DeletesTopic).
	EntryDeletes func(header []byte) string
}

// DefaultCacheWindow is Config.CacheWindow's default.
const DefaultCacheWindow = 256 << 20

// DefaultConfig returns the production defaults for a store in dir.
func DefaultConfig(dir string) Config {
	return Config{
		Dir:                   dir,
		SegmentSize:           1 << 30,
		CacheWindow:           DefaultCacheWindow,
		FlushMode:             FlushAsync,
		FlushInterval:         500 * time.Millisecond,
		CheckpointInterval:    time.Second,
		IndexFlushInterval:    30 * time.Second,
		IndexFlushEntries:     100000,
		IndexFlushBytes:       64 << 20,
		UnitsPerQueueFile:     300000,
		MaxOpenQueueFiles:     1024,
		IndexSlots:            5000000,
		IndexEntries:          20000000,
		MaxMessageSize:        4 << 20,
		MaxGetBytes:           256 << 10,
		MaxScanUnits:          16000,
		FileReservedTime:      72 * time.Hour,
		DeleteWhen:            "04",
		DiskMaxUsedSpaceRatio: 0.75,
		DiskRefuseRatio:       0.95,
		CleanInterval:         10 * time.Second,
	}
}

// Validate checks every bound and returns all problems at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("store: config: "+format, args...)) }
	if c.Dir == "" {
		bad("Dir is empty")
	}
	if c.SegmentSize < 64<<10 {
		bad("SegmentSize %d < 64 KiB", c.SegmentSize)
	}
	if c.FlushInterval <= 0 || c.CheckpointInterval <= 0 || c.IndexFlushInterval <= 0 || c.CleanInterval <= 0 || c.IndexFlushEntries < 1 || c.IndexFlushBytes < 1 {
		bad("intervals must be positive")
	}
	if c.UnitsPerQueueFile < 1 || c.MaxOpenQueueFiles < 4 {
		bad("UnitsPerQueueFile %d / MaxOpenQueueFiles %d too small", c.UnitsPerQueueFile, c.MaxOpenQueueFiles)
	}
	if c.IndexSlots < 1 || c.IndexEntries < 2 {
		bad("IndexSlots %d / IndexEntries %d too small", c.IndexSlots, c.IndexEntries)
	}
	if c.MaxMessageSize < 1 || int64(c.MaxMessageSize)+4096 > c.SegmentSize {
		bad("MaxMessageSize %d must be positive and fit a segment", c.MaxMessageSize)
	}
	if c.MaxGetBytes < 1 || c.MaxScanUnits < 1 {
		bad("MaxGetBytes and MaxScanUnits must be positive")
	}
	if c.FileReservedTime <= 0 {
		bad("FileReservedTime must be positive")
	}
	if _, err := parseDeleteWhen(c.DeleteWhen); err != nil {
		errs = append(errs, err)
	}
	if c.DiskMaxUsedSpaceRatio <= 0 || c.DiskMaxUsedSpaceRatio > 1 || c.DiskRefuseRatio <= 0 || c.DiskRefuseRatio > 1 {
		bad("disk ratios must be in (0, 1]")
	}
	return errors.Join(errs...)
}

// parseDeleteWhen parses "04" or "03;04" into a set of hours.
func parseDeleteWhen(s string) (map[int]bool, error) {
	hours := map[int]bool{}
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		h, err := strconv.Atoi(part)
		if err != nil || h < 0 || h > 23 {
			return nil, fmt.Errorf("store: config: DeleteWhen %q: want hours 00..23 separated by ';'", s)
		}
		hours[h] = true
	}
	return hours, nil
}
