package dedup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"time"
)

// ErrBadSnapshot is wrapped by every error of Restore: the bytes are not a
// snapshot this version can read, or they are damaged.
var ErrBadSnapshot = errors.New("dedup: bad snapshot")

// Snapshot layout (doc.go has the table).
const (
	snapMagic   = "LMDW"
	snapVersion = 1
	headerSize  = 64
	crcSize     = 4
	// entryFixed is an entry's size without its topic and key.
	entryFixed = 34
	// minEntry is the smallest entry: a one-byte topic and key.
	minEntry = entryFixed + 2
	// maxRetentionMs is the longest retention a time.Duration can hold.
	maxRetentionMs = math.MaxInt64 / int64(time.Millisecond)
)

// castagnoli is the CRC-32C table.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// AppendSnapshot appends the window's snapshot to dst and returns the
// extended slice: its configuration, newest store time, counters and
// every entry in insertion order, little-endian, under a CRC-32C (the
// format is in doc.go). Replicas that applied the same entries produce the
// same bytes.
func (w *Window) AppendSnapshot(dst []byte) []byte {
	w.mu.RLock()
	defer w.mu.RUnlock()
	start := len(dst)
	// An entry is entryFixed + topic + key, and its id 1 + topic + key,
	// less 16 if packed.
	dst = slices.Grow(dst, headerSize+w.g.live*(entryFixed-1+packedLen)+w.g.idBytes+crcSize)
	le := binary.LittleEndian
	dst = append(dst, snapMagic...)
	dst = le.AppendUint16(dst, snapVersion)
	dst = le.AppendUint16(dst, 0) // flags
	dst = le.AppendUint64(dst, uint64(w.retention))
	dst = le.AppendUint32(dst, uint32(w.cfg.MaxEntries))
	dst = le.AppendUint32(dst, uint32(w.g.live))
	dst = le.AppendUint64(dst, uint64(w.newest))
	dst = le.AppendUint64(dst, w.n.expired)
	dst = le.AppendUint64(dst, w.n.evictedByCount)
	dst = le.AppendUint64(dst, w.n.replaced)
	dst = le.AppendUint64(dst, w.n.ignored)
	w.g.each(func(s *slot) {
		id := w.g.id(s)
		topic := idTopic(id)
		dst = append(dst, byte(len(topic)), byte(idKeyLen(id)))
		dst = le.AppendUint32(dst, uint32(s.r.QueueID))
		dst = le.AppendUint32(dst, uint32(s.r.Size))
		dst = le.AppendUint64(dst, uint64(s.r.QueueOffset))
		dst = le.AppendUint64(dst, uint64(s.r.PhysicalOffset))
		dst = le.AppendUint64(dst, uint64(s.r.StoreTime))
		dst = append(dst, topic...)
		dst = appendIDKey(dst, id)
	})
	return le.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// Restore returns the window a snapshot made by AppendSnapshot describes,
// configuration included. b must be exactly one snapshot. Any other input
// gives an error wrapping ErrBadSnapshot; Restore never panics and
// allocates in proportion to len(b) only.
func Restore(b []byte) (*Window, error) {
	if len(b) < headerSize+crcSize {
		return nil, badf("%d bytes, shorter than a header", len(b))
	}
	le := binary.LittleEndian
	if string(b[:4]) != snapMagic {
		return nil, badf("magic %q", b[:4])
	}
	if v := le.Uint16(b[4:]); v != snapVersion {
		return nil, badf("version %d, want %d", v, snapVersion)
	}
	body := b[:len(b)-crcSize]
	if got, want := crc32.Checksum(body, castagnoli), le.Uint32(b[len(body):]); got != want {
		return nil, badf("CRC-32C %08x, stored %08x", got, want)
	}
	if f := le.Uint16(b[6:]); f != 0 {
		return nil, badf("flags %#x", f)
	}
	h := header{
		retention:  int64(le.Uint64(b[8:])),
		maxEntries: int64(le.Uint32(b[16:])),
		entries:    int64(le.Uint32(b[20:])),
		newest:     int64(le.Uint64(b[24:])),
		n: counters{
			expired:        le.Uint64(b[32:]),
			evictedByCount: le.Uint64(b[40:]),
			replaced:       le.Uint64(b[48:]),
			ignored:        le.Uint64(b[56:]),
		},
	}
	if err := h.check(len(body) - headerSize); err != nil {
		return nil, err
	}
	// The ids take at most the entries' topics and keys and a byte each.
	ids := len(body) - headerSize - int(h.entries)*(entryFixed-1)
	w := &Window{newest: h.newest, n: h.n, g: newRing(int(h.entries), ids)}
	w.setConfig(Config{
		Window:     time.Duration(h.retention) * time.Millisecond,
		MaxEntries: int(h.maxEntries),
	})
	if err := w.restoreEntries(body[headerSize:], int(h.entries)); err != nil {
		return nil, err
	}
	return w, nil
}

// header is a snapshot's fixed part.
type header struct {
	retention, maxEntries, entries, newest int64
	n                                      counters
}

// check validates the header against the rest bytes that follow it,
// bounding the entry count by them before anything is allocated.
func (h *header) check(rest int) error {
	switch {
	case h.retention < 1 || h.retention > maxRetentionMs:
		return badf("retention %d ms", h.retention)
	case h.maxEntries < 1 || h.maxEntries > MaxEntriesLimit:
		return badf("max entries %d", h.maxEntries)
	case h.entries > h.maxEntries:
		return badf("%d entries, above the maximum %d", h.entries, h.maxEntries)
	case h.entries > int64(rest/minEntry):
		return badf("%d entries in %d bytes", h.entries, rest)
	}
	return nil
}

// restoreEntries decodes n entries that must fill b exactly into w.
func (w *Window) restoreEntries(b []byte, n int) error {
	le := binary.LittleEndian
	for i := range n {
		if len(b) < entryFixed {
			return badf("entry %d: truncated", i)
		}
		tl, kl := int(b[0]), int(b[1])
		r := Result{
			QueueID:        int32(le.Uint32(b[2:])),
			Size:           int32(le.Uint32(b[6:])),
			QueueOffset:    int64(le.Uint64(b[10:])),
			PhysicalOffset: int64(le.Uint64(b[18:])),
			StoreTime:      int64(le.Uint64(b[26:])),
		}
		b = b[entryFixed:]
		switch {
		case tl == 0 || tl > MaxTopicLen || kl == 0 || kl > MaxKeyLen:
			return badf("entry %d: topic length %d, key length %d", i, tl, kl)
		case len(b) < tl+kl:
			return badf("entry %d: truncated", i)
		case r.StoreTime > w.newest:
			return badf("entry %d: store time %d after the newest %d", i, r.StoreTime, w.newest)
		}
		var buf idBuf
		id := makeID(&buf, b[:tl], b[tl:tl+kl])
		h := w.g.hash(id)
		if w.g.find(id, h) >= 0 {
			return badf("entry %d: duplicate key", i)
		}
		w.g.push(id, h, r)
		b = b[tl+kl:]
	}
	if len(b) != 0 {
		return badf("%d bytes after the last entry", len(b))
	}
	return nil
}

// badf returns an error wrapping ErrBadSnapshot.
func badf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadSnapshot, fmt.Sprintf(format, args...))
}
