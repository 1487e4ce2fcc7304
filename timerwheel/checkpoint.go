package timerwheel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// Checkpoint layout (see doc.go).
const (
	checkpointName         = "checkpoint"
	checkpointSize         = 36
	checkpointMagic uint32 = 0x4C4D5443 // "LMTC"
	checkpointVer   uint16 = 1
)

// checkpoint is what a restart trusts: records [First, Len) are on disk
// and valid; LastPhy is the CommitLog offset of record Len-1 (-1: none),
// which the owner compares with its store to notice an index that belongs
// to other data.
type checkpoint struct {
	First, Len, LastPhy int64
}

func encodeCheckpoint(c checkpoint) []byte {
	b := make([]byte, checkpointSize)
	binary.BigEndian.PutUint32(b[0:], checkpointMagic)
	binary.BigEndian.PutUint16(b[4:], checkpointVer)
	binary.BigEndian.PutUint64(b[8:], uint64(c.First))
	binary.BigEndian.PutUint64(b[16:], uint64(c.Len))
	binary.BigEndian.PutUint64(b[24:], uint64(c.LastPhy))
	binary.BigEndian.PutUint32(b[32:], crc32.Checksum(b[:32], castagnoli))
	return b
}

// decodeCheckpoint parses a checkpoint file's bytes; nothing in b can
// make it panic.
func decodeCheckpoint(b []byte) (checkpoint, error) {
	if len(b) != checkpointSize {
		return checkpoint{}, fmt.Errorf("%w: checkpoint of %d bytes", ErrCorrupt, len(b))
	}
	if binary.BigEndian.Uint32(b[0:]) != checkpointMagic || binary.BigEndian.Uint16(b[4:]) != checkpointVer {
		return checkpoint{}, fmt.Errorf("%w: checkpoint magic or version", ErrCorrupt)
	}
	if binary.BigEndian.Uint32(b[32:]) != crc32.Checksum(b[:32], castagnoli) {
		return checkpoint{}, fmt.Errorf("%w: checkpoint crc", ErrCorrupt)
	}
	c := checkpoint{
		First:   int64(binary.BigEndian.Uint64(b[8:])),
		Len:     int64(binary.BigEndian.Uint64(b[16:])),
		LastPhy: int64(binary.BigEndian.Uint64(b[24:])),
	}
	if c.First < 0 || c.Len < c.First || c.LastPhy < -1 {
		return checkpoint{}, fmt.Errorf("%w: checkpoint %+v", ErrCorrupt, c)
	}
	return c, nil
}

// readCheckpoint returns the directory's checkpoint; ok is false when
// there is none.
func readCheckpoint(dir string) (checkpoint, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, checkpointName))
	if errors.Is(err, os.ErrNotExist) {
		return checkpoint{}, false, nil
	}
	if err != nil {
		return checkpoint{}, false, fmt.Errorf("timerwheel: read checkpoint: %w", err)
	}
	c, err := decodeCheckpoint(b)
	if err != nil {
		return checkpoint{}, false, err
	}
	return c, true, nil
}

// writeCheckpoint replaces the checkpoint atomically (temporary file,
// fsync, rename, directory fsync).
func writeCheckpoint(dir string, c checkpoint) error {
	if err := vfs.WriteFileAtomic(vfs.Default, filepath.Join(dir, checkpointName), encodeCheckpoint(c)); err != nil {
		return fmt.Errorf("timerwheel: checkpoint: %w", err)
	}
	return nil
}
