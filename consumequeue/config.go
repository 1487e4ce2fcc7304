package consumequeue

import (
	"fmt"
	"math"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/internal/syncreport"
	"github.com/ledgermq/ledgermq/internal/vfs"
)

// Defaults and bounds applied by Open.
const (
	// DefaultMaxOpenFiles bounds the open file handles of a Store.
	DefaultMaxOpenFiles = 1024
	// MaxUnitsPerFile bounds Config.UnitsPerFile (a file of 1.28 GB).
	MaxUnitsPerFile = 1 << 26
	// MaxTopicLen is the longest topic name accepted, in bytes: the longest
	// file name Linux file systems allow.
	MaxTopicLen = 255
)

// Config configures a Store. Zero fields take the defaults.
//
// UnitsPerFile fixes where file boundaries fall and so how files are named;
// it must not change between runs over the same Dir.
type Config struct {
	// Dir holds one directory per topic; created if missing.
	Dir string
	// UnitsPerFile is the number of units per file; default 300 000
	// (6 000 000 bytes), at most MaxUnitsPerFile.
	UnitsPerFile int
	// MaxOpenFiles bounds the file handles the Store keeps open, across all
	// queues. Handles form an LRU cache; the least recently used idle
	// handle is closed to make room. Default 1024.
	MaxOpenFiles int
	// Logger receives warnings about repairs made while loading a queue.
	// Default hclog.Default().Named("consumequeue").
	Logger hclog.Logger
	// SyncReport, if set, records every sync of a queue file (the chaos
	// harness's power-loss model, internal/syncreport); nil: off.
	SyncReport *syncreport.Report
	// WriteBuffer is the bytes of units a queue holds in memory before it
	// writes them (tail.go), rounded down to whole units; default
	// DefaultWriteBuffer; negative: every Put writes at once.
	WriteBuffer int
	// MaxBuffered bounds the memory of all queues' write buffers; a queue
	// that would exceed it writes each Put at once. Default
	// DefaultMaxBuffered.
	MaxBuffered int
	// FS is the file system of the queue files and directories
	// (internal/vfs); nil: the operating system's. Tests fail its
	// operations with vfs.Faulty.
	FS vfs.FS
}

// withDefaults returns cfg with zero fields filled in, or an error wrapping
// ErrBadConfig.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Dir == "" {
		return cfg, fmt.Errorf("%w: empty Dir", ErrBadConfig)
	}
	if cfg.UnitsPerFile == 0 {
		cfg.UnitsPerFile = DefaultUnitsPerFile
	}
	if cfg.MaxOpenFiles == 0 {
		cfg.MaxOpenFiles = DefaultMaxOpenFiles
	}
	if cfg.WriteBuffer == 0 {
		cfg.WriteBuffer = DefaultWriteBuffer
	}
	cfg.WriteBuffer -= cfg.WriteBuffer % UnitSize
	if cfg.MaxBuffered == 0 {
		cfg.MaxBuffered = DefaultMaxBuffered
	}
	cfg.FS = vfs.Or(cfg.FS)
	if cfg.Logger == nil {
		cfg.Logger = hclog.Default().Named("consumequeue")
	}
	switch {
	case cfg.UnitsPerFile < 1 || cfg.UnitsPerFile > MaxUnitsPerFile:
		return cfg, fmt.Errorf("%w: UnitsPerFile %d not in [1, %d]", ErrBadConfig, cfg.UnitsPerFile, MaxUnitsPerFile)
	case cfg.MaxOpenFiles < 1:
		return cfg, fmt.Errorf("%w: MaxOpenFiles %d < 1", ErrBadConfig, cfg.MaxOpenFiles)
	}
	return cfg, nil
}

// maxQueueOffset is the first queue offset that cannot be stored: beyond
// it the byte offset in a file name, or the end of its file, would not fit
// an int64.
func maxQueueOffset(unitsPerFile int64) int64 {
	return math.MaxInt64/UnitSize - unitsPerFile
}

// ValidTopic reports whether topic can name a queue directory: non-empty, at
// most MaxTopicLen bytes, not "." and free of '/', '\\', NUL and "..".
//
// This is the file-system rule only. The broker applies RocketMQ's stricter
// rule (characters [%|a-zA-Z0-9_-], at most 127) to names clients send;
// every such name passes this check.
func ValidTopic(topic string) bool {
	switch {
	case topic == "" || len(topic) > MaxTopicLen || topic == ".":
		return false
	case strings.ContainsAny(topic, "/\\\x00"), strings.Contains(topic, ".."):
		return false
	}
	return true
}

func checkTopic(topic string) error {
	if !ValidTopic(topic) {
		return fmt.Errorf("%w: %q", ErrBadTopic, topic)
	}
	return nil
}
