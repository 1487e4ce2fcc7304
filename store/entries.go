package store

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/ledgermq/ledgermq/commitlog"
	"github.com/ledgermq/ledgermq/internal/vfs"
	"github.com/ledgermq/ledgermq/message"
)

// One log (Config.OneLog): the CommitLog is the raft log, so a message is
// written once per node, and fsynced once (with every append under
// FlushSync, in the background under FlushAsync).
//
// AppendEntries writes each raft entry as its records followed by a
// version-2 marker (marker.go) that holds the entry's term, type and every
// byte of it that is not a record; Entry reads it back for raft. A record's
// physical offset and queue offset are both fixed when it is appended:
// the physical offset by its place, the queue offset from the queue heads
// at append time (heads), which advance with every record appended and
// go back when a raft truncation removes records (TruncateEntries). Both are
// functions of the log's prefix alone, so every replica writes the same
// bytes at the same offsets. DispatchEntry, called in log order for
// committed entries, makes an entry's records visible: it writes their
// ConsumeQueue units and index keys, checking that each queue offset is the
// queue's next. Nothing after the last dispatched entry is visible to
// readers.
//
// A topic deletion resets its queues to offset 0 when it is applied
// (DeleteTopic); the records appended after the deleting entry were given
// queue offsets from 0 when they were appended (Entry.DeletesTopic), and a
// truncation of the deleting entry puts the heads back.
//
// Recovery (recover.go) lists the entries from Config.EntriesFrom, dispatches
// those up to the checkpoint or Config.CommittedSeq, and keeps the rest
// pending for DispatchEntry: whether they were committed is raft's to say.

// ErrNotOneLog is returned by the entry methods of a store that is not the
// raft log, and by Put on one that is.
var ErrNotOneLog = errors.New("store: the commitlog is not the raft log here")

// Entry is one raft log entry as the one-log store holds it.
type Entry struct {
	Seq  uint64
	Term uint64
	// Type is raft's log type.
	Type uint8
	// Header is every byte of the entry other than its records.
	Header []byte
	// Records are the RocketMQ records the entry carries, encoded and
	// stamped by the proposer; queue and physical offsets are assigned
	// here. Entry returns them as stored (offsets filled in).
	Records [][]byte
	// Checked: the records' body CRCs were verified on this node already.
	Checked bool
	// Prepared, if set, is what the leader read of Records as it encoded
	// them (PrepareStamped): they are stored without being parsed again.
	Prepared *PreparedRecords
	// DeletesTopic names the topic this entry deletes when it is applied
	// (after its records, if any).
	DeletesTopic string
}

// entryPos is where one entry lies in the CommitLog.
type entryPos struct {
	first  int64 // its first record, or its marker
	marker int64
	end    int64 // after the marker's trailer
	term   uint64
}

// pendingEntry is an appended entry with records (or a topic deletion)
// that is not dispatched yet.
type pendingEntry struct {
	reqs []dispatchReq
	// deletes: the entry deletes this topic; saved holds its queues' heads
	// before it, prevReset the topic's reset before it (0: none).
	deletes   string
	saved     map[queueKey]int64
	prevReset uint64
}

// entryTable lists the entries held, [first, first+len(pos)).
type entryTable struct {
	mu    sync.RWMutex
	first uint64
	pos   []entryPos
	// base is where entry first began (the end of the entry before it);
	// tail where the next one goes (the end of the last one).
	base, tail int64

	// Guarded by Store.mu:
	heads   map[queueKey]int64 // next queue offset at append time
	resets  map[string]uint64  // topic → seq of its pending deletion
	pending map[uint64]*pendingEntry
	applied int64 // end of the last dispatched entry
	// visible is applied, read without Store.mu (readers by offset).
	visible atomic.Int64
}

func (t *entryTable) reset(from int64) {
	t.mu.Lock()
	t.first, t.pos, t.base, t.tail = 0, nil, from, from
	t.mu.Unlock()
	t.heads = map[queueKey]int64{}
	t.resets = map[string]uint64{}
	t.pending = map[uint64]*pendingEntry{}
	t.setApplied(from)
}

// setApplied moves the end of the dispatched entries. Called with
// Store.mu held (or before the store is shared).
func (t *entryTable) setApplied(end int64) {
	t.applied = end
	t.visible.Store(end)
}

// add records an entry appended (or found by recovery) at p.
func (t *entryTable) add(seq uint64, p entryPos) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pos) == 0 || seq != t.first+uint64(len(t.pos)) {
		// The first, or the first after a hole recovery skipped: raft sees
		// the log from here.
		t.first, t.pos, t.base = seq, t.pos[:0], t.tail
	}
	t.pos = append(t.pos, p)
	t.tail = p.end
}

func (t *entryTable) at(seq uint64) (entryPos, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if seq < t.first || seq >= t.first+uint64(len(t.pos)) {
		return entryPos{}, false
	}
	return t.pos[seq-t.first], true
}

// FirstEntry and LastEntry bound the entries the store holds (raft's
// FirstIndex and LastIndex): 0 and 0 when it holds none.
func (s *Store) FirstEntry() uint64 {
	s.ents.mu.RLock()
	defer s.ents.mu.RUnlock()
	if len(s.ents.pos) == 0 {
		return 0
	}
	return s.ents.first
}

// LastEntry: see FirstEntry.
func (s *Store) LastEntry() uint64 {
	s.ents.mu.RLock()
	defer s.ents.mu.RUnlock()
	if len(s.ents.pos) == 0 {
		return 0
	}
	return s.ents.first + uint64(len(s.ents.pos)) - 1
}

// EntryEnd is the CommitLog offset where entry seq ends (its marker's
// trailer included): a snapshot at seq covers the bytes below it.
func (s *Store) EntryEnd(seq uint64) (int64, bool) {
	p, ok := s.ents.at(seq)
	return p.end, ok
}

// AppliedEnd is where the dispatched entries end: with OneLog the bytes
// after it are entries raft may not have committed; otherwise the
// CommitLog's write position.
func (s *Store) AppliedEnd() int64 {
	if !s.cfg.OneLog {
		return s.MaxPhysicalOffset()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ents.applied
}

// OneLog reports whether the CommitLog is the raft log (Config.OneLog).
func (s *Store) OneLog() bool { return s.cfg.OneLog }

// AppendEntries writes entries, which must follow the last one appended
// (or start anywhere above LastSeq when the store holds none), and returns
// once they are durable (FlushSync) or in the page cache, flushed within
// FlushInterval (FlushAsync; see FlushMode): raft's StoreLogs. A record that does not parse or
// fails its CRC (when not Checked) is ErrBadMessage and nothing of that
// entry or the later ones is written; the earlier ones stay.
func (s *Store) AppendEntries(ents []Entry) error {
	if !s.cfg.OneLog {
		return ErrNotOneLog
	}
	if s.closed.Load() {
		return ErrClosed
	}
	s.rw.RLock()
	defer s.rw.RUnlock()
	var end int64
	for i := range ents {
		e, err := s.appendEntry(&ents[i])
		if err != nil {
			return err
		}
		end = e
	}
	if len(ents) == 0 || s.cfg.FlushMode != FlushSync || (s.cfg.Faults != nil && s.cfg.Faults.SkipFsync()) { // skip-fsync: a jepsenbroken build only
		return nil
	}
	// The raft log's one appender waits for its own append: it flushes on
	// its own goroutine.
	if err := s.cl.SyncTo(end); err != nil {
		return fmt.Errorf("%w: flush: %v", ErrWriteFailed, err)
	}
	return nil
}

func (s *Store) appendEntry(e *Entry) (int64, error) {
	items := e.Prepared.itemsFor(e.Records)
	if items == nil {
		items = make([]batchItem, len(e.Records))
		for i, rec := range e.Records {
			// The group's maximum message size is checked by the leader
			// before it proposes; here it may not be applied yet (a raised
			// limit travels in an entry before the message it admits).
			if err := s.prepareEncodedMax(&items[i], rec, !e.Checked, math.MaxInt); err != nil {
				return 0, fmt.Errorf("%w: entry %d, message %d: %v", ErrBadMessage, e.Seq, i, err)
			}
		}
	}
	m := marker{v2: true, count: len(items), seq: e.Seq, term: e.Term, logType: e.Type, header: e.Header}
	if len(e.Header) > maxMarkerHeader {
		return 0, fmt.Errorf("%w: entry %d: header of %d bytes", ErrBatchTooLarge, e.Seq, len(e.Header))
	}
	sizes := make([]int, len(items)+1)
	for i := range items {
		sizes[i] = items[i].size
	}
	sizes[len(items)] = m.size()

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return 0, ErrClosed
	}
	if s.writeErr != nil {
		return 0, fmt.Errorf("%w: %v", ErrWriteFailed, s.writeErr)
	}
	t := &s.ents
	t.mu.RLock()
	want := t.first + uint64(len(t.pos))
	held := len(t.pos) > 0
	t.mu.RUnlock()
	switch {
	case held && e.Seq != want:
		return 0, fmt.Errorf("store: entry %d does not follow entry %d", e.Seq, want-1)
	case e.Seq <= s.lastSeq.Load():
		return 0, fmt.Errorf("%w: entry %d, applied up to %d", ErrSeqApplied, e.Seq, s.lastSeq.Load())
	}
	// Queue offsets from the heads, kept aside until the append succeeds.
	next := map[queueKey]int64{}
	for i := range items {
		r := &items[i].req
		k := queueKey{r.topic, r.queueID}
		h, ok := next[k]
		if !ok {
			var err error
			if h, err = s.headLocked(k); err != nil {
				return 0, err
			}
		}
		r.queueOffset = h
		if dispatchesToQueue(r.sysFlag) {
			h++
		}
		next[k] = h
	}
	offsets, err := s.appendItemsLocked(items, sizes, m)
	if err != nil {
		return 0, err
	}
	for k, h := range next {
		t.heads[k] = h
	}
	markerOff := offsets[len(items)]
	end := markerOff + int64(m.size()) + commitlog.TrailerSize
	if len(items) > 0 || e.DeletesTopic != "" {
		p := &pendingEntry{}
		if len(items) > 0 {
			p.reqs = make([]dispatchReq, len(items))
			for i := range items {
				r := items[i].req
				r.phy, r.size, r.host = offsets[i], int32(sizes[i]), items[i].storeHost
				p.reqs[i] = r
			}
		}
		if e.DeletesTopic != "" {
			s.resetTopicLocked(p, e.DeletesTopic, e.Seq)
		}
		t.pending[e.Seq] = p
	}
	t.add(e.Seq, entryPos{first: offsets[0], marker: markerOff, end: end, term: e.Term})
	return end, nil
}

// headLocked is the queue offset the next record appended to k gets.
// Called with s.mu held.
func (s *Store) headLocked(k queueKey) (int64, error) {
	if h, ok := s.ents.heads[k]; ok {
		return h, nil
	}
	if _, ok := s.ents.resets[k.topic]; ok {
		return 0, nil // deleted by an entry not applied yet
	}
	st, err := s.queueLocked(k.topic, k.id)
	if err != nil {
		return 0, err
	}
	return st.next, nil
}

// resetTopicLocked starts topic's queues again at offset 0 for the records
// appended after entry seq, remembering in p what it changed.
func (s *Store) resetTopicLocked(p *pendingEntry, topic string, seq uint64) {
	t := &s.ents
	p.deletes, p.saved = topic, map[queueKey]int64{}
	p.prevReset = t.resets[topic]
	for k, h := range t.heads {
		if k.topic == topic {
			p.saved[k] = h
			delete(t.heads, k)
		}
	}
	t.resets[topic] = seq
}

// Entry returns entry seq as AppendEntries took it, its records as stored.
// An entry the store does not hold (compacted, or never appended) is
// ErrNotFound.
func (s *Store) Entry(seq uint64) (Entry, error) {
	if !s.cfg.OneLog {
		return Entry{}, ErrNotOneLog
	}
	if s.closed.Load() {
		return Entry{}, ErrClosed
	}
	s.rw.RLock()
	defer s.rw.RUnlock()
	p, ok := s.ents.at(seq)
	if !ok {
		return Entry{}, fmt.Errorf("%w: raft entry %d", ErrNotFound, seq)
	}
	// One read of the whole entry; then each record and the marker are
	// checked as the CommitLog's reads check them.
	buf := make([]byte, 0, p.end-p.first)
	var recs [][]byte
	for off := p.first; off < p.marker; {
		n, err := s.cl.EntrySize(off)
		if err != nil {
			return Entry{}, s.entryReadErr(seq, off, err)
		}
		at := len(buf)
		if buf, err = s.cl.ReadAt(buf, off, n); err != nil {
			return Entry{}, s.entryReadErr(seq, off, err)
		}
		recs = append(recs, buf[at:len(buf):len(buf)])
		off += int64(n) + commitlog.TrailerSize
	}
	n := int(p.end - p.marker - commitlog.TrailerSize)
	at := len(buf)
	buf, err := s.cl.ReadAt(buf, p.marker, n)
	if err != nil {
		return Entry{}, s.entryReadErr(seq, p.marker, err)
	}
	m, err := decodeMarker(buf[at:])
	if err != nil || !m.v2 || m.seq != seq || m.count != len(recs) {
		return Entry{}, fmt.Errorf("%w: raft entry %d: marker at %d: %v (seq %d, %d records)", ErrCorrupt, seq, p.marker, err, m.seq, m.count)
	}
	return Entry{Seq: seq, Term: m.term, Type: m.logType, Header: m.header, Records: recs, Checked: true}, nil
}

func (s *Store) entryReadErr(seq uint64, off int64, err error) error {
	if errors.Is(err, commitlog.ErrCorrupt) {
		s.reportCorrupt(commitlog.CorruptRange{Offset: off, Err: err})
		return fmt.Errorf("%w: raft entry %d at %d: %v", ErrCorrupt, seq, off, err)
	}
	return fmt.Errorf("store: raft entry %d at %d: %w", seq, off, err)
}

// TruncateEntries removes the entries from seq on (raft's removal of a
// log suffix that conflicts with the leader's). None of them may be
// dispatched. The queue heads go back to what they were before them.
func (s *Store) TruncateEntries(seq uint64) error {
	if !s.cfg.OneLog {
		return ErrNotOneLog
	}
	if s.closed.Load() {
		return ErrClosed
	}
	s.rw.RLock()
	defer s.rw.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &s.ents
	if seq <= s.lastSeq.Load() {
		return fmt.Errorf("store: truncate raft entries from %d: applied up to %d", seq, s.lastSeq.Load())
	}
	t.mu.RLock()
	first, n := t.first, uint64(len(t.pos))
	t.mu.RUnlock()
	if n == 0 || seq >= first+n {
		return nil
	}
	if seq < first {
		return fmt.Errorf("store: truncate raft entries from %d: the log starts at %d", seq, first)
	}
	// Where the kept log ends: the end of the entry before seq (not seq's
	// first byte: seq may have rolled to a new segment, which a replica
	// that never had it would not have done).
	t.mu.RLock()
	to := t.base
	if seq > first {
		to = t.pos[seq-1-first].end
	}
	t.mu.RUnlock()
	for q := first + n - 1; q >= seq; q-- {
		p := t.pending[q]
		if p == nil {
			continue
		}
		if p.deletes != "" {
			for k := range t.heads {
				if k.topic == p.deletes {
					delete(t.heads, k)
				}
			}
			for k, h := range p.saved {
				t.heads[k] = h
			}
			if p.prevReset != 0 {
				t.resets[p.deletes] = p.prevReset
			} else {
				delete(t.resets, p.deletes)
			}
		}
		for i := len(p.reqs) - 1; i >= 0; i-- {
			r := p.reqs[i]
			if dispatchesToQueue(r.sysFlag) {
				t.heads[queueKey{r.topic, r.queueID}] = r.queueOffset
			}
		}
		delete(t.pending, q)
	}
	if err := s.cl.Truncate(to); err != nil {
		s.writeErr = err
		return fmt.Errorf("%w: truncate raft entries from %d at %d: %v", ErrWriteFailed, seq, to, err)
	}
	t.mu.Lock()
	t.pos = t.pos[:seq-first]
	t.tail = to
	t.mu.Unlock()
	s.log.Info("raft log suffix removed", "from", seq, "to", first+n-1, "commitlog_end", to)
	return nil
}

// CompactEntries forgets the entries up to seq (raft's log compaction after
// a snapshot). Their bytes stay in the CommitLog until retention removes
// their segments; raft no longer reads them.
func (s *Store) CompactEntries(seq uint64) error {
	if !s.cfg.OneLog {
		return ErrNotOneLog
	}
	t := &s.ents
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pos) == 0 || seq < t.first {
		return nil
	}
	drop := min(seq-t.first+1, uint64(len(t.pos)))
	t.base = t.pos[drop-1].end
	rest := make([]entryPos, len(t.pos)-int(drop), max(len(t.pos)-int(drop), 16))
	copy(rest, t.pos[drop:])
	t.first += drop
	t.pos = rest
	return nil
}

// CompactedEnd is where the entries raft may still read begin: retention
// keeps every segment from it on.
func (s *Store) CompactedEnd() int64 {
	t := &s.ents
	t.mu.RLock()
	defer t.mu.RUnlock()
	if len(t.pos) == 0 {
		return t.tail
	}
	return t.pos[0].first
}

// DispatchEntry makes committed entry seq visible to readers: its records'
// ConsumeQueue units and index keys are written, each queue offset checked
// to be its queue's next. Entries are dispatched in log order; one at or
// below LastSeq is ErrSeqApplied. It returns where each record is.
func (s *Store) DispatchEntry(seq uint64) ([]PutResult, error) {
	if !s.cfg.OneLog {
		return nil, ErrNotOneLog
	}
	if s.closed.Load() {
		return nil, ErrClosed
	}
	s.rw.RLock()
	defer s.rw.RUnlock()
	s.mu.Lock()
	t := &s.ents
	if last := s.lastSeq.Load(); seq <= last {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %d <= %d", ErrSeqApplied, seq, last)
	}
	if s.writeErr != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %v", ErrWriteFailed, s.writeErr)
	}
	pos, ok := t.at(seq)
	if !ok {
		s.mu.Unlock()
		return nil, fmt.Errorf("store: dispatch raft entry %d: not in the log", seq)
	}
	p := t.pending[seq]
	var res []PutResult
	var touched []queueKey
	if p != nil && len(p.reqs) > 0 {
		states := make([]*queueState, len(p.reqs))
		want := map[*queueState]int64{}
		for i, r := range p.reqs {
			st, err := s.queueLocked(r.topic, r.queueID)
			if err != nil {
				s.mu.Unlock()
				return nil, err
			}
			next, ok := want[st]
			if !ok {
				next = st.next
			}
			if dispatchesToQueue(r.sysFlag) {
				if r.queueOffset != next {
					s.mu.Unlock()
					return nil, fmt.Errorf("%w: raft entry %d: %s/%d record at %d has queue offset %d, the queue's next is %d",
						ErrCorrupt, seq, r.topic, r.queueID, r.phy, r.queueOffset, next)
				}
				next++
			}
			want[st] = next
			states[i] = st
		}
		all := func(int) bool { return true }
		if err := s.dispatchLocked(p.reqs, states, all, all); err != nil {
			s.writeErr = err
			s.mu.Unlock()
			s.log.Error("dispatch failed; refusing further writes", "error", err)
			return nil, fmt.Errorf("%w: %v", ErrWriteFailed, err)
		}
		s.addDuplicatesLocked(p.reqs)
		res = make([]PutResult, len(p.reqs))
		for i, r := range p.reqs {
			res[i] = PutResult{PhysicalOffset: r.phy, QueueOffset: r.queueOffset, Size: r.size,
				MsgID: message.OffsetMsgID(r.host, r.phy)}
			if s.cfg.OnDispatch != nil {
				touched = append(touched, queueKey{r.topic, r.queueID})
			}
		}
	}
	if p != nil && p.deletes != "" && t.resets[p.deletes] == seq {
		delete(t.resets, p.deletes)
	}
	delete(t.pending, seq)
	t.setApplied(pos.end)
	s.lastSeq.Store(seq)
	s.dirty = true
	var nexts []int64
	for _, k := range touched {
		nexts = append(nexts, s.queues[k].next)
	}
	s.mu.Unlock()
	for i, k := range touched {
		s.cfg.OnDispatch(k.topic, k.id, nexts[i])
	}
	return res, nil
}

// recoveredEntry is an entry recovery found past what it dispatched.
type recoveredEntry struct {
	seq     uint64
	reqs    []dispatchReq
	deletes string
}

// adoptRecovered makes the entries recovery found after the dispatched
// ones pending again, with the queue heads their records carry. Called
// with s.mu held, after the queues were trimmed to what was dispatched.
// DispatchEntry checks each queue offset against its queue.
func (s *Store) adoptRecovered(found []recoveredEntry) {
	sort.Slice(found, func(i, j int) bool { return found[i].seq < found[j].seq })
	t := &s.ents
	for _, e := range found {
		if len(e.reqs) == 0 && e.deletes == "" {
			continue
		}
		p := &pendingEntry{reqs: e.reqs}
		for _, r := range e.reqs {
			if dispatchesToQueue(r.sysFlag) {
				t.heads[queueKey{r.topic, r.queueID}] = r.queueOffset + 1
			}
		}
		if e.deletes != "" {
			s.resetTopicLocked(p, e.deletes, e.seq)
		}
		t.pending[e.seq] = p
	}
}

// oneLogMarkerName is the file whose presence says that the store's
// CommitLog is the raft log; a store keeps the layout it was created with.
const oneLogMarkerName = "onelog"

// checkLayout refuses to open a store in the other layout than the one it
// was created with, and records the one-log layout of a new store.
func checkLayout(cfg Config) error {
	has, err := HasOneLog(cfg.Dir)
	if err != nil {
		return err
	}
	if has == cfg.OneLog {
		return nil
	}
	if has {
		return fmt.Errorf("%w: the commitlog in %s is the raft log (it was created so); start the node with the one-log layout", ErrLayout, cfg.Dir)
	}
	segs, err := HasCommitLog(cfg.Dir)
	if err != nil {
		return err
	}
	if segs {
		return fmt.Errorf("%w: the commitlog in %s was written beside a separate raft log; it becomes the raft log only through the group's switch (dledger)", ErrLayout, cfg.Dir)
	}
	return ConvertToOneLog(cfg.Dir)
}

// HasOneLog reports whether the store in dir was created in the one-log
// layout or converted to it (ConvertToOneLog).
func HasOneLog(dir string) (bool, error) {
	_, err := os.Stat(filepath.Join(dir, oneLogMarkerName))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("store: %w", err)
}

// HasCommitLog reports whether the store in dir holds CommitLog segments.
func HasCommitLog(dir string) (bool, error) {
	segs, err := filepath.Glob(filepath.Join(dir, commitLogDirName, "[0-9]*"))
	if err != nil {
		return false, fmt.Errorf("store: %w", err)
	}
	return len(segs) > 0, nil
}

// ConvertToOneLog makes the closed two-log store in dir a one-log store:
// its CommitLog, written beside a separate raft log, becomes the prefix
// of the raft log that raft no longer reads (a snapshot covers it), and
// the entries after it are appended in the one-log layout. The bytes stay
// as they are: every replica applied the same entries, so every replica
// holds the same prefix. The caller has made a snapshot at the store's
// last entry durable first (dledger's conversion).
func ConvertToOneLog(dir string) error {
	if err := vfs.WriteFileAtomic(vfs.Default, filepath.Join(dir, oneLogMarkerName), []byte("the commitlog is the raft log\n")); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// MarkApplied records every entry up to seq as applied when none of those
// after LastSeq carries records (raft's no-ops and barriers, which the FSM
// never sees): a raft snapshot at seq then covers the CommitLog up to
// EntryEnd(seq) on every replica. Entries already past seq are left alone.
func (s *Store) MarkApplied(seq uint64) error {
	if !s.cfg.OneLog {
		return ErrNotOneLog
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.lastSeq.Load()
	if seq <= last {
		return nil
	}
	for q := last + 1; q <= seq; q++ {
		if p := s.ents.pending[q]; p != nil {
			return fmt.Errorf("store: raft entry %d is not applied", q)
		}
	}
	p, ok := s.ents.at(seq)
	if !ok {
		return fmt.Errorf("store: raft entry %d: not in the log", seq)
	}
	s.ents.setApplied(p.end)
	s.lastSeq.Store(seq)
	s.dirty = true
	return nil
}
