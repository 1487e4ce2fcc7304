package store

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"sort"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// The checkpoint file records how far the CommitLog, the ConsumeQueues and
// the IndexFile are known to be durable and in step, so a restart replays
// only the tail. It is replaced atomically (write, fsync, rename, fsync dir).
//
//	offset size field
//	0      4    magic 0x4C4D5143 ("LMQC")
//	4      2    version (1)
//	6      2    flags: bit 0 = clean shutdown
//	8      8    CommitLog offset: every record before it is flushed and
//	            dispatched, and its queue and index entries are flushed
//	16     8    sequence number of the last batch before that offset
//	24     8    IndexFile end physical offset at that moment (-1: none)
//	32     4    number of queues N
//	36          N queue entries:
//	              1  topic length t (1..255)
//	              t  topic
//	              4  queue id
//	              8  min queue offset
//	              8  max queue offset (next to write)
//	end-4  4    CRC32-C of every byte before it
const (
	checkpointMagic   uint32 = 0x4C4D5143
	checkpointVersion uint16 = 1
	checkpointName           = "checkpoint"
	checkpointFixed          = 36
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// QueueState is one queue's offsets as recorded in a checkpoint.
type QueueState struct {
	Topic   string
	QueueID int32
	Min     int64
	Max     int64
}

// Checkpoint is the decoded checkpoint file.
type Checkpoint struct {
	Clean           bool
	CommitLogOffset int64
	Seq             uint64
	IndexPhyOffset  int64
	Queues          []QueueState
}

// EncodeCheckpoint returns the file bytes of c. Queues are written sorted so
// that equal checkpoints encode equally.
func EncodeCheckpoint(c Checkpoint) ([]byte, error) {
	qs := append([]QueueState(nil), c.Queues...)
	sort.Slice(qs, func(i, j int) bool {
		if qs[i].Topic != qs[j].Topic {
			return qs[i].Topic < qs[j].Topic
		}
		return qs[i].QueueID < qs[j].QueueID
	})
	size := checkpointFixed + 4
	for _, q := range qs {
		if len(q.Topic) == 0 || len(q.Topic) > 255 {
			return nil, fmt.Errorf("%w: topic length %d", ErrBadCheckpoint, len(q.Topic))
		}
		size += 1 + len(q.Topic) + 4 + 8 + 8
	}
	b := make([]byte, checkpointFixed, size)
	binary.BigEndian.PutUint32(b[0:], checkpointMagic)
	binary.BigEndian.PutUint16(b[4:], checkpointVersion)
	var flags uint16
	if c.Clean {
		flags |= 1
	}
	binary.BigEndian.PutUint16(b[6:], flags)
	binary.BigEndian.PutUint64(b[8:], uint64(c.CommitLogOffset))
	binary.BigEndian.PutUint64(b[16:], c.Seq)
	binary.BigEndian.PutUint64(b[24:], uint64(c.IndexPhyOffset))
	binary.BigEndian.PutUint32(b[32:], uint32(len(qs)))
	for _, q := range qs {
		b = append(b, byte(len(q.Topic)))
		b = append(b, q.Topic...)
		b = binary.BigEndian.AppendUint32(b, uint32(q.QueueID))
		b = binary.BigEndian.AppendUint64(b, uint64(q.Min))
		b = binary.BigEndian.AppendUint64(b, uint64(q.Max))
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// DecodeCheckpoint parses checkpoint file bytes. Any damage (short file,
// wrong magic or version, bad CRC, counts that do not add up) is
// ErrBadCheckpoint; it never panics.
func DecodeCheckpoint(b []byte) (Checkpoint, error) {
	var c Checkpoint
	if len(b) < checkpointFixed+4 {
		return c, fmt.Errorf("%w: %d bytes", ErrBadCheckpoint, len(b))
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return c, fmt.Errorf("%w: checksum mismatch", ErrBadCheckpoint)
	}
	if m := binary.BigEndian.Uint32(b[0:]); m != checkpointMagic {
		return c, fmt.Errorf("%w: magic %#x", ErrBadCheckpoint, m)
	}
	if v := binary.BigEndian.Uint16(b[4:]); v != checkpointVersion {
		return c, fmt.Errorf("%w: version %d", ErrBadCheckpoint, v)
	}
	c.Clean = binary.BigEndian.Uint16(b[6:])&1 != 0
	c.CommitLogOffset = int64(binary.BigEndian.Uint64(b[8:]))
	c.Seq = binary.BigEndian.Uint64(b[16:])
	c.IndexPhyOffset = int64(binary.BigEndian.Uint64(b[24:]))
	n := binary.BigEndian.Uint32(b[32:])
	if c.CommitLogOffset < 0 {
		return c, fmt.Errorf("%w: offset %d", ErrBadCheckpoint, c.CommitLogOffset)
	}
	rest := body[checkpointFixed:]
	// Each entry is at least 22 bytes: bound n before allocating.
	if uint64(n)*22 > uint64(len(rest)) {
		return c, fmt.Errorf("%w: %d queues in %d bytes", ErrBadCheckpoint, n, len(rest))
	}
	c.Queues = make([]QueueState, 0, n)
	for i := uint32(0); i < n; i++ {
		if len(rest) < 1 {
			return c, fmt.Errorf("%w: truncated queue %d", ErrBadCheckpoint, i)
		}
		t := int(rest[0])
		if t == 0 || len(rest) < 1+t+20 {
			return c, fmt.Errorf("%w: truncated queue %d", ErrBadCheckpoint, i)
		}
		q := QueueState{
			Topic:   string(rest[1 : 1+t]),
			QueueID: int32(binary.BigEndian.Uint32(rest[1+t:])),
			Min:     int64(binary.BigEndian.Uint64(rest[5+t:])),
			Max:     int64(binary.BigEndian.Uint64(rest[13+t:])),
		}
		if q.QueueID < 0 || q.Min < 0 || q.Max < q.Min {
			return c, fmt.Errorf("%w: queue %s/%d offsets %d..%d", ErrBadCheckpoint, q.Topic, q.QueueID, q.Min, q.Max)
		}
		c.Queues = append(c.Queues, q)
		rest = rest[1+t+20:]
	}
	if len(rest) != 0 {
		return c, fmt.Errorf("%w: %d trailing bytes", ErrBadCheckpoint, len(rest))
	}
	return c, nil
}

func readCheckpoint(path string) (Checkpoint, bool, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return Checkpoint{}, false, nil
	}
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("store: read checkpoint: %w", err)
	}
	c, err := DecodeCheckpoint(b)
	if err != nil {
		return Checkpoint{}, false, err
	}
	return c, true, nil
}

func writeCheckpoint(fs vfs.FS, path string, c Checkpoint) error {
	b, err := EncodeCheckpoint(c)
	if err != nil {
		return err
	}
	return vfs.WriteFileAtomic(fs, path, b)
}
