package index

import (
	"fmt"
	"math"

	"github.com/hashicorp/go-hclog"
	"github.com/ledgermq/ledgermq/internal/vfs"
)

// Defaults applied by Open to zero Config fields.
const (
	DefaultSlotNum    = 5_000_000
	DefaultMaxEntries = 20_000_000
	DefaultMaxFiles   = 64
)

// Config configures a Service. Zero fields take the defaults above.
//
// SlotNum and MaxEntries fix the size of every file (HeaderSize +
// SlotNum*SlotSize + MaxEntries*EntrySize); files of another size found in
// Dir are reported as corrupt, so they must not change between runs without
// a Reset.
type Config struct {
	Dir        string // directory holding the index files; created if missing
	SlotNum    int    // hash slots per file; default 5 000 000
	MaxEntries int    // entries per file, entry 0 unused; default 20 000 000
	// MaxFiles bounds how many files are memory-mapped at once. The newest
	// MaxFiles files are mapped; older ones are read with pread on query.
	// Default 64.
	MaxFiles int
	Logger   hclog.Logger // default hclog.Default().Named("index")
	// FS is the file system every file and directory operation goes
	// through (vfs.Default when nil): tests fail operations with
	// vfs.Faulty.
	FS vfs.FS
}

// withDefaults returns cfg with zero fields filled in, or an error wrapping
// ErrBadConfig.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Dir == "" {
		return cfg, fmt.Errorf("%w: empty Dir", ErrBadConfig)
	}
	if cfg.SlotNum == 0 {
		cfg.SlotNum = DefaultSlotNum
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.MaxFiles == 0 {
		cfg.MaxFiles = DefaultMaxFiles
	}
	cfg.FS = vfs.Or(cfg.FS)
	if cfg.Logger == nil {
		cfg.Logger = hclog.Default().Named("index")
	}
	switch {
	case cfg.SlotNum < 1 || cfg.SlotNum > math.MaxInt32:
		return cfg, fmt.Errorf("%w: SlotNum %d not in [1, %d]", ErrBadConfig, cfg.SlotNum, math.MaxInt32)
	case cfg.MaxEntries < 2 || cfg.MaxEntries > math.MaxInt32:
		return cfg, fmt.Errorf("%w: MaxEntries %d not in [2, %d]", ErrBadConfig, cfg.MaxEntries, math.MaxInt32)
	case cfg.MaxFiles < 1:
		return cfg, fmt.Errorf("%w: MaxFiles %d < 1", ErrBadConfig, cfg.MaxFiles)
	}
	if g := cfg.geometry(); g.fileSize() > math.MaxInt {
		return cfg, fmt.Errorf("%w: file size %d does not fit in memory", ErrBadConfig, g.fileSize())
	}
	return cfg, nil
}

func (cfg Config) geometry() geometry {
	return geometry{slotNum: int64(cfg.SlotNum), maxEntries: int64(cfg.MaxEntries)}
}
