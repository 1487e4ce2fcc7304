package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ledgermq/ledgermq/dedup"
	"github.com/ledgermq/ledgermq/internal/vfs"
	"github.com/ledgermq/ledgermq/message"
)

// The duplicate window (package dedup) remembers the (topic, UNIQ_KEY) of
// every message dispatched recently with where it was stored, so that the
// leader can answer a send that repeats one (a producer's retry after a
// failover) with the first store instead of storing it again
// (docs/invariants.md I10). Every replica keeps the window's source, the
// backlog: each dispatch (Put's, DispatchEntry's) appends its records in
// CommitLog order, the same order on every replica, with the store time
// the leader stamped. Only the leader, which asks, holds the index built
// from it (dedup.Window): built when it becomes leader (IndexDuplicates, or
// its first Duplicate), kept up to date by its proposer (RecordSent) and
// dropped when it stops leading (IdleDuplicates). Recovery does not add
// what it dispatches again; instead, after recovery, the backlog is
// rebuilt by reading the CommitLog from its oldest message, which each
// checkpoint records in the file "duplicates" (below), up to what is
// dispatched. A store without that file (a new store, or one written by an
// older version) starts with an empty window.
//
// A message is known by its topic and its duplicate key (DuplicateKey):
// its UNIQ_KEY, and for a consumer's retry (a record whose reconsume
// count is n > 0) the UNIQ_KEY with "#n#" and the topic it waits for
// (REAL_TOPIC, when parked). A message sent back keeps its UNIQ_KEY from
// one attempt to the next, so the count tells the attempts apart, and
// the real topic tells apart two consumer groups' copies parked in the
// same schedule topic; a send-back the consumer repeats, or its own send
// to %RETRY% after a send-back it believed failed, has the same key and
// is stored once.
//
// The file "duplicates" (replaced atomically at each checkpoint):
//
//	offset size field
//	0      4    magic "LMDF"
//	4      2    version (1)
//	6      2    flags, 0
//	8      8    CommitLog offset of the oldest message the window held
//	16     4    CRC32-C of every byte before it
const (
	duplicatesName    = "duplicates"
	duplicatesMagic   = "LMDF"
	duplicatesVersion = 1
	duplicatesSize    = 20
)

// DuplicatesConfig configures the duplicate window. The zero value keeps
// dedup.DefaultWindow (2 minutes) and dedup.DefaultMaxEntries.
type DuplicatesConfig struct {
	// Off: no window; every message is stored.
	Off bool
	// Window is how long a message's key is kept, by store time; it bounds
	// every per-topic window. MaxEntries bounds the keys kept (the oldest
	// leave first).
	Window     time.Duration
	MaxEntries int
}

// DuplicateKey is the key the window knows a message by: uniq (its
// UNIQ_KEY) for a first attempt, and for a consumer's retry (reconsume
// count n > 0) uniq#n#realTopic (realTopic: the REAL_TOPIC property, ""
// if unset). "" without a UNIQ_KEY.
func DuplicateKey(uniq string, reconsume int32, realTopic string) string {
	if uniq == "" || reconsume <= 0 {
		return uniq
	}
	return uniq + retrySuffix(reconsume, realTopic)
}

// DuplicateKeyOf is m's DuplicateKey.
func DuplicateKeyOf(m *message.Ext) string {
	if m.ReconsumeTimes <= 0 {
		return m.UniqKey()
	}
	return DuplicateKey(m.UniqKey(), m.ReconsumeTimes, m.Properties[message.PropertyRealTopic])
}

// retrySuffix is what a retry's duplicate key adds to its UNIQ_KEY.
func retrySuffix(reconsume int32, realTopic string) string {
	return "#" + strconv.FormatInt(int64(reconsume), 10) + "#" + realTopic
}

// dupEntry is a dispatched message as the window takes it: its IndexFile
// key (topic#key, the string dispatch made), the topic's length, where
// it was stored and its store time.
type dupEntry struct {
	id   string
	tlen int
	r    dedup.Result
	t    int64
}

func (e *dupEntry) topic() string { return e.id[:e.tlen] }
func (e *dupEntry) key() string   { return e.id[e.tlen+1:] }

// dupBacklog is the source of the window: the last MaxEntries messages
// dispatched within the retention, oldest first, in a ring. Keeping it
// costs an append per message; the window's index (dedup.Window: a map
// of every key) is built from it only on the node that asks, the leader
// (Duplicate), and dropped when it stops asking (IdleDuplicates), so
// followers do not pay for an index nobody reads.
type dupBacklog struct {
	ents      []dupEntry
	head, n   int
	max       int
	retention int64 // ms
	newest    int64
}

func newDupBacklog(cfg DuplicatesConfig) *dupBacklog {
	c := dedup.New(dedup.Config{Window: cfg.Window, MaxEntries: cfg.MaxEntries}).Config()
	return &dupBacklog{max: c.MaxEntries, retention: c.Window.Milliseconds(), newest: math.MinInt64}
}

// push appends e, dropping the oldest beyond max and those older than
// the retention relative to the newest store time.
func (b *dupBacklog) push(e dupEntry) {
	b.newest = max(b.newest, e.t)
	for b.n > 0 && (b.n >= b.max || b.newest-b.at(0).t > b.retention) {
		*b.at(0) = dupEntry{}
		b.head = (b.head + 1) % len(b.ents)
		b.n--
	}
	if b.n == len(b.ents) {
		grown := make([]dupEntry, min(max(16, 2*len(b.ents)), b.max))
		for i := range b.n {
			grown[i] = *b.at(i)
		}
		b.ents, b.head = grown, 0
	}
	b.n++
	*b.at(b.n - 1) = e
}

func (b *dupBacklog) at(i int) *dupEntry { return &b.ents[(b.head+i)%len(b.ents)] }

// oldest is the CommitLog offset of the oldest entry, or end when empty.
func (b *dupBacklog) oldest(end int64) int64 {
	if b.n == 0 {
		return end
	}
	return b.at(0).r.PhysicalOffset
}

// addDuplicatesLocked records dispatched records, in order, in the
// backlog. Called with s.mu held, after the records are dispatched. The
// index of the node that holds one learns of its sends from RecordSent.
func (s *Store) addDuplicatesLocked(reqs []dispatchReq) {
	b := s.backlog
	addDuplicates(b, reqs)
	if b != nil && b.n == b.max {
		s.dupsSpan.Store(b.newest - b.at(0).t)
	} else {
		s.dupsSpan.Store(-1)
	}
}

// DuplicateSpan is how far back, in store time, the window reaches now:
// window, or less while it holds its maximum count of keys and the oldest
// of them is younger than that (a rate above MaxEntries per window). A
// retry later than that after its first store may be stored again.
func (s *Store) DuplicateSpan(window time.Duration) time.Duration {
	if span := s.dupsSpan.Load(); span >= 0 {
		return min(window, time.Duration(span)*time.Millisecond)
	}
	return window
}

// addDuplicates adds dispatched records to b (nil: none), in order.
func addDuplicates(b *dupBacklog, reqs []dispatchReq) {
	if b == nil {
		return
	}
	for i := range reqs {
		r := &reqs[i]
		if r.uniqKey == "" || len(r.uniqKey) <= len(r.topic) {
			continue
		}
		id := r.uniqKey
		if r.reconsume > 0 {
			id += retrySuffix(r.reconsume, r.realTopic)
		}
		e := dupEntry{id: id, tlen: len(r.topic), t: r.storeTime,
			r: dedup.Result{QueueID: r.queueID, Size: r.size, QueueOffset: r.queueOffset, PhysicalOffset: r.phy}}
		b.push(e)
	}
}

// Sent is a send the leader stored, for its window's index: the topic and
// UNIQ_KEY, the queue, where it went and the store time it was stamped
// with.
type Sent struct {
	Topic, Key string
	QueueID    int32
	Result     PutResult
	StoreTime  int64
	// Miss is what Duplicate returned when it missed the message
	// (zero when it was not asked): a message the window did not hold
	// is then added without a second search of its index.
	Miss DuplicateMiss
}

// DuplicateMiss is what a Duplicate that missed knows for the
// RecordSent of the same message (dedup.Miss): valid while no other
// message with the same topic and key is recorded in between, which the
// leader's pending keys ensure.
type DuplicateMiss = dedup.Miss

// RecordSent adds the sends this node stored as leader to the window's
// index, if it holds one. The leader's proposer calls it after answering
// each entry, off the path of the next one: until then it treats the
// entry's keys as pending itself. The backlog learns of the same messages
// from the dispatch, which every replica runs.
func (s *Store) RecordSent(sent []Sent) {
	w := s.dups.Load()
	if w == nil || len(sent) == 0 {
		return
	}
	for i := range sent {
		e := &sent[i]
		w.AddMissed(e.Topic, e.Key, dedup.Result{QueueID: e.QueueID, Size: e.Result.Size,
			QueueOffset: e.Result.QueueOffset, PhysicalOffset: e.Result.PhysicalOffset}, e.StoreTime, e.Miss)
	}
}

// Duplicate returns where the message (topic, key: its DuplicateKey) was stored if it was
// dispatched within window of now (the store time the leader stamps on
// the message being decided, Unix ms), with QueueID set and Duplicate
// true. Its MsgID names the store host the first store's record carries
// (the leader's of then), read back from the CommitLog; if the record
// cannot be read (retention took it), MsgID is "" and the caller names
// its own. A window of 0 or less or a store without a window always
// miss. The first call after the store opened or went idle
// builds the window's index from the backlog. When it misses, it also
// returns what the miss knows for the message's Sent (Sent.Miss).
func (s *Store) Duplicate(topic, key string, now int64, window time.Duration) (PutResult, bool, DuplicateMiss) {
	if s.cfg.Duplicates.Off || window <= 0 {
		return PutResult{}, false, DuplicateMiss{}
	}
	w := s.dups.Load()
	if w == nil {
		w = s.activeDuplicates()
	}
	r, ok, miss := w.LookupMiss(topic, key, now, window)
	if !ok {
		return PutResult{}, false, miss
	}
	res := PutResult{PhysicalOffset: r.PhysicalOffset, QueueOffset: r.QueueOffset, Size: r.Size,
		QueueID: r.QueueID, Duplicate: true}
	if m, err := s.MessageAt(r.PhysicalOffset); err == nil {
		res.MsgID = message.OffsetMsgID(m.StoreHost, r.PhysicalOffset)
	}
	return res, true, DuplicateMiss{}
}

// IndexDuplicates builds the window's index afresh from the backlog: a
// node that becomes leader calls it once every entry before its term is
// dispatched (after its barrier), before it takes a send. An index that
// exists already is replaced, never kept: one built while the node was
// not leading (a Duplicate asked by a proposal left over from its last
// term) misses what was dispatched since, which the index learns only
// from RecordSent, the leader's own sends.
func (s *Store) IndexDuplicates() {
	if s.cfg.Duplicates.Off {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.indexDuplicatesLocked()
}

// activeDuplicates returns the window's index, building it from the
// backlog unless another call did.
func (s *Store) activeDuplicates() *dedup.Window {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.dups.Load(); w != nil {
		return w
	}
	return s.indexDuplicatesLocked()
}

// indexDuplicatesLocked builds the window's index from the backlog and
// installs it; s.mu is held.
func (s *Store) indexDuplicatesLocked() *dedup.Window {
	start := time.Now()
	w := dedup.New(dedup.Config{Window: s.cfg.Duplicates.Window, MaxEntries: s.cfg.Duplicates.MaxEntries})
	b := s.backlog
	w.Reserve(b.n)
	for i := range b.n {
		e := b.at(i)
		w.Add(e.topic(), e.key(), e.r, e.t)
	}
	s.dups.Store(w)
	s.log.Debug("duplicate window indexed", "entries", w.Len(), "took", time.Since(start))
	return w
}

// IdleDuplicates drops the window's index (a node that stopped leading
// no longer asks); the backlog stays, and the next Duplicate builds it
// again.
func (s *Store) IdleDuplicates() {
	s.mu.Lock()
	s.dups.Store(nil)
	s.mu.Unlock()
}

// DuplicateStats returns the window's gauges and counters: the index's
// when this node holds one, else the backlog's size (zero when off).
func (s *Store) DuplicateStats() dedup.Stats {
	if w := s.dups.Load(); w != nil {
		return w.Stats()
	}
	if s.cfg.Duplicates.Off {
		return dedup.Stats{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return dedup.Stats{Entries: s.backlog.n}
}

// newBacklog makes the backlog cfg asks for (nil when off).
func newBacklog(cfg DuplicatesConfig) *dupBacklog {
	if cfg.Off {
		return nil
	}
	return newDupBacklog(cfg)
}

func encodeDuplicatesFile(from int64) []byte {
	b := make([]byte, 0, duplicatesSize)
	b = append(b, duplicatesMagic...)
	b = binary.BigEndian.AppendUint16(b, duplicatesVersion)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(from))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// errBadDuplicatesFile: the window file is damaged or of another version.
var errBadDuplicatesFile = errors.New("store: bad duplicates file")

func decodeDuplicatesFile(b []byte) (int64, error) {
	if len(b) != duplicatesSize || string(b[:4]) != duplicatesMagic {
		return 0, fmt.Errorf("%w: %d bytes", errBadDuplicatesFile, len(b))
	}
	if crc32.Checksum(b[:16], castagnoli) != binary.BigEndian.Uint32(b[16:]) {
		return 0, fmt.Errorf("%w: checksum mismatch", errBadDuplicatesFile)
	}
	if v := binary.BigEndian.Uint16(b[4:]); v != duplicatesVersion {
		return 0, fmt.Errorf("%w: version %d", errBadDuplicatesFile, v)
	}
	from := int64(binary.BigEndian.Uint64(b[8:]))
	if from < 0 {
		return 0, fmt.Errorf("%w: offset %d", errBadDuplicatesFile, from)
	}
	return from, nil
}

// writeDuplicatesFile records where the window's messages start; the
// checkpoint calls it after the CommitLog up to there is flushed.
func (s *Store) writeDuplicatesFile(from int64) error {
	if s.cfg.Duplicates.Off || from == s.dupsWritten.Load() {
		return nil
	}
	if err := vfs.WriteFileAtomic(s.cfg.FS, filepath.Join(s.cfg.Dir, duplicatesName), encodeDuplicatesFile(from)); err != nil {
		return err
	}
	s.dupsWritten.Store(from)
	return nil
}

// dispatchedEnd is where the dispatched records end: with one log the
// last dispatched entry's end, else the CommitLog's.
func (s *Store) dispatchedEnd() int64 {
	if s.cfg.OneLog {
		return s.ents.applied
	}
	return s.cl.MaxOffset()
}

// rebuildDuplicates fills a fresh backlog from the CommitLog: the
// records from the offset the window file names up to what is dispatched
// (end), batch by batch, as the dispatches that first added them did. Any
// trouble (no file, a damaged one, an offset outside the log, a record
// that does not parse) leaves it empty and is logged: the window only
// spares a retried message a second store, it never decides what is kept.
// Called with s.mu held or before the store is shared.
func (s *Store) rebuildDuplicates(end int64) {
	if s.backlog == nil {
		return
	}
	b := newDupBacklog(s.cfg.Duplicates)
	s.backlog = b
	s.dups.Store(nil)
	data, err := os.ReadFile(filepath.Join(s.cfg.Dir, duplicatesName))
	if os.IsNotExist(err) {
		return
	}
	from, err := decodeDuplicatesFile(data)
	if err == nil && (from < s.cl.MinOffset() || from > end) {
		err = fmt.Errorf("%w: offset %d outside the log's [%d, %d]", errBadDuplicatesFile, from, s.cl.MinOffset(), end)
	}
	if err != nil {
		s.log.Warn("duplicate window not rebuilt; it starts empty", "error", err)
		return
	}
	start := time.Now()
	var batch []dispatchReq
	errEnd := errors.New("end")
	err = s.cl.Scan(from, func(off int64, payload []byte) error {
		if off >= end {
			return errEnd
		}
		if isMarker(payload) {
			addDuplicates(b, batch)
			batch = batch[:0]
			return nil
		}
		d, err := dispatchFromRecord(off, payload)
		if err != nil {
			return err
		}
		batch = append(batch, d)
		return nil
	}, nil)
	if err != nil && !errors.Is(err, errEnd) {
		s.backlog = newDupBacklog(s.cfg.Duplicates)
		s.log.Warn("duplicate window not rebuilt; it starts empty", "from", from, "error", err)
		return
	}
	s.log.Debug("duplicate window rebuilt", "from", from, "end", end, "entries", b.n, "took", time.Since(start))
}
