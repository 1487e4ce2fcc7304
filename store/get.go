package store

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ledgermq/ledgermq/commitlog"
	"github.com/ledgermq/ledgermq/consumequeue"
	"github.com/ledgermq/ledgermq/message"
)

// GetStatus is the outcome of Get, named as RocketMQ's GetMessageStatus.
type GetStatus int

const (
	// Found: at least one message is returned.
	Found GetStatus = iota
	// NoMatchedMessage: units were examined but the filter rejected all.
	NoMatchedMessage
	// OffsetFoundNull: the units in range point at records that are gone
	// (retention) or corrupt.
	OffsetFoundNull
	// OffsetOverflowOne: offset equals the queue's max offset (caught up).
	OffsetOverflowOne
	// OffsetOverflowBadly: offset is past the max offset.
	OffsetOverflowBadly
	// OffsetTooSmall: offset is below the queue's min offset.
	OffsetTooSmall
	// NoMessageInQueue: the queue has never held a message.
	NoMessageInQueue
)

var statusNames = [...]string{"FOUND", "NO_MATCHED_MESSAGE", "OFFSET_FOUND_NULL", "OFFSET_OVERFLOW_ONE",
	"OFFSET_OVERFLOW_BADLY", "OFFSET_TOO_SMALL", "NO_MESSAGE_IN_QUEUE"}

func (s GetStatus) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("GetStatus(%d)", int(s))
}

// Filter selects messages by the tag hash kept in the ConsumeQueue. A hash
// match is not a tag match (hashes collide): the caller checks the tag of
// each returned record exactly.
type Filter interface {
	MatchTagsCode(code int64) bool
}

// TagFilter matches messages whose tag hash is one of a set; the zero value
// (and a filter built from "*" or "") matches everything.
type TagFilter struct {
	all   bool
	codes []int64
	Tags  []string
}

// NewTagFilter parses a RocketMQ tag expression: "*" or "" for all, or tags
// separated by "||" ("TagA || TagB").
func NewTagFilter(expr string) *TagFilter {
	f := &TagFilter{}
	for _, t := range splitTags(expr) {
		if t == "*" {
			return &TagFilter{all: true}
		}
		f.Tags = append(f.Tags, t)
		f.codes = append(f.codes, message.TagsHashCode(t))
	}
	if len(f.Tags) == 0 {
		f.all = true
	}
	return f
}

// MatchTagsCode implements Filter.
func (f *TagFilter) MatchTagsCode(code int64) bool {
	return f == nil || f.all || slices.Contains(f.codes, code)
}

// MatchTag checks a record's tag exactly.
func (f *TagFilter) MatchTag(tag string) bool {
	return f == nil || f.all || slices.Contains(f.Tags, tag)
}

func splitTags(expr string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(expr); i++ {
		if i == len(expr) || (expr[i] == '|' && i+1 < len(expr) && expr[i+1] == '|') {
			t := trimSpace(expr[start:i])
			if t != "" {
				out = append(out, t)
			}
			start = i + 2
			i++
		}
	}
	return out
}

func trimSpace(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// Record is one stored message returned by Get: its bytes (RocketMQ's
// record layout, ready to concatenate into a pull response) alias the
// mapped CommitLog until the GetResult is released.
type Record struct {
	Bytes          []byte
	QueueOffset    int64
	PhysicalOffset int64
	TagsCode       int64
}

// GetResult is the answer to Get. Release it when its bytes are no longer
// needed; until then the segments it reads from are not deleted.
type GetResult struct {
	Status          GetStatus
	Records         []Record
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
	refs            []*commitlog.Ref
}

// Release lets go of the mapped bytes. Safe to call more than once.
func (r *GetResult) Release() {
	for _, ref := range r.refs {
		ref.Release()
	}
	r.refs = nil
}

// Get reads up to max messages of topic/queueID from queue offset offset,
// skipping those the filter rejects by tag hash (nil: no filter). The
// returned NextBeginOffset is where the next Get should start, also when
// every message examined was filtered out. Records whose bytes fail their
// checksum are skipped and reported (CorruptRanges), never returned.
// Safe for concurrent use, also with Put.
func (s *Store) Get(topic string, queueID int32, offset int64, max int, filter Filter) (*GetResult, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	s.rw.RLock()
	defer s.rw.RUnlock()
	q, err := s.queue(topic, queueID)
	if err != nil {
		return nil, fmt.Errorf("store: get %s/%d: %w", topic, queueID, err)
	}
	res := &GetResult{MinOffset: q.MinOffset(), MaxOffset: q.MaxOffset()}
	switch {
	case res.MaxOffset == res.MinOffset && res.MaxOffset == 0:
		res.Status, res.NextBeginOffset = NoMessageInQueue, 0
		return res, nil
	case offset < res.MinOffset:
		res.Status, res.NextBeginOffset = OffsetTooSmall, res.MinOffset
		return res, nil
	case offset == res.MaxOffset:
		res.Status, res.NextBeginOffset = OffsetOverflowOne, offset
		return res, nil
	case offset > res.MaxOffset:
		res.Status, res.NextBeginOffset = OffsetOverflowBadly, res.MaxOffset
		return res, nil
	}
	if max <= 0 {
		max = 1
	}
	clMin := s.cl.MinOffset()
	cur, scanned, bytes, filtered := offset, 0, 0, false
	const chunk = 64
scan:
	for cur < res.MaxOffset && len(res.Records) < max && scanned < s.cfg.MaxScanUnits {
		units, err := q.Get(cur, chunk)
		if err != nil {
			if errors.Is(err, consumequeue.ErrOffsetTooSmall) {
				cur = q.MinOffset()
				continue
			}
			res.Release()
			return nil, fmt.Errorf("store: get %s/%d@%d: %w", topic, queueID, cur, err)
		}
		if len(units) == 0 {
			break
		}
		for _, u := range units {
			if len(res.Records) >= max || scanned >= s.cfg.MaxScanUnits {
				break scan
			}
			if len(res.Records) > 0 && bytes+int(u.Size) > s.cfg.MaxGetBytes {
				break scan
			}
			scanned++
			if u.Offset < clMin {
				cur++
				continue
			}
			if filter != nil && !filter.MatchTagsCode(u.TagsCode) {
				filtered = true
				cur++
				continue
			}
			ref, err := s.readRecord(u, topic, queueID, cur)
			cur++
			if err != nil {
				continue
			}
			res.refs = append(res.refs, ref)
			res.Records = append(res.Records, Record{Bytes: ref.Bytes(), QueueOffset: cur - 1, PhysicalOffset: u.Offset, TagsCode: u.TagsCode})
			bytes += int(u.Size)
		}
	}
	res.NextBeginOffset = cur
	switch {
	case len(res.Records) > 0:
		res.Status = Found
	case filtered:
		res.Status = NoMatchedMessage
	default:
		res.Status = OffsetFoundNull
	}
	return res, nil
}

// readRecord reads the record a unit points at and checks that it is the
// record the queue expects. A checksum failure or a mismatch is reported
// as corruption.
func (s *Store) readRecord(u consumequeue.Unit, topic string, queueID int32, queueOffset int64) (*commitlog.Ref, error) {
	ref, err := s.cl.Read(u.Offset, int(u.Size))
	if err != nil {
		if errors.Is(err, commitlog.ErrCorrupt) {
			s.reportCorrupt(commitlog.CorruptRange{Offset: u.Offset, Length: int64(u.Size) + commitlog.TrailerSize, Err: err})
		}
		return nil, err
	}
	v, err := message.ParseView(ref.Bytes())
	if err == nil && (v.Topic() != topic || v.QueueID() != queueID || v.QueueOffset() != queueOffset) {
		err = fmt.Errorf("%w: queue %s/%d@%d points at a record of %s/%d@%d", ErrCorrupt,
			topic, queueID, queueOffset, v.Topic(), v.QueueID(), v.QueueOffset())
	}
	if err != nil {
		ref.Release()
		s.reportCorrupt(commitlog.CorruptRange{Offset: u.Offset, Length: int64(u.Size) + commitlog.TrailerSize, Err: err})
		return nil, err
	}
	return ref, nil
}

// MinOffset and MaxOffset bound a queue's offsets (MaxOffset is the next
// offset to be written).
func (s *Store) MinOffset(topic string, queueID int32) (int64, error) {
	s.rw.RLock()
	defer s.rw.RUnlock()
	q, err := s.queue(topic, queueID)
	if err != nil {
		return 0, err
	}
	return q.MinOffset(), nil
}

// MaxOffset is the queue's next offset to be written.
func (s *Store) MaxOffset(topic string, queueID int32) (int64, error) {
	s.rw.RLock()
	defer s.rw.RUnlock()
	q, err := s.queue(topic, queueID)
	if err != nil {
		return 0, err
	}
	return q.MaxOffset(), nil
}

// OffsetByTime returns the first queue offset whose message was stored at
// or after ts (ms); MaxOffset if every message is older.
func (s *Store) OffsetByTime(topic string, queueID int32, ts int64) (int64, error) {
	s.rw.RLock()
	defer s.rw.RUnlock()
	q, err := s.queue(topic, queueID)
	if err != nil {
		return 0, err
	}
	return q.OffsetByTime(ts, func(u consumequeue.Unit) (int64, error) {
		return s.storeTimeOf(u.Offset, int(u.Size))
	})
}

func (s *Store) storeTimeOf(phy int64, size int) (int64, error) {
	ref, err := s.cl.Read(phy, size)
	if err != nil {
		return 0, err
	}
	defer ref.Release()
	v, err := message.ParseView(ref.Bytes())
	if err != nil {
		return 0, err
	}
	return v.StoreTimestamp(), nil
}

// EarliestMessageTime is the store time of the queue's oldest message.
func (s *Store) EarliestMessageTime(topic string, queueID int32) (int64, error) {
	s.rw.RLock()
	defer s.rw.RUnlock()
	q, err := s.queue(topic, queueID)
	if err != nil {
		return 0, err
	}
	clMin := s.cl.MinOffset()
	for o := q.MinOffset(); o < q.MaxOffset(); o++ {
		u, err := q.GetUnit(o)
		if err != nil {
			return 0, fmt.Errorf("store: %w", err)
		}
		if u.Offset < clMin {
			continue
		}
		if t, err := s.storeTimeOf(u.Offset, int(u.Size)); err == nil {
			return t, nil
		}
	}
	return 0, fmt.Errorf("%w: queue %s/%d is empty", ErrNotFound, topic, queueID)
}

// MessageAt decodes the message stored at a physical offset (what an offset
// message id names).
func (s *Store) MessageAt(phy int64) (*message.Ext, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	s.rw.RLock()
	defer s.rw.RUnlock()
	return s.messageAt(phy)
}

// messageAt is MessageAt for callers holding rw.
func (s *Store) messageAt(phy int64) (*message.Ext, error) {
	if s.cfg.OneLog && phy >= s.ents.visible.Load() {
		// Appended but not known to be committed.
		return nil, fmt.Errorf("%w: offset %d", ErrNotFound, phy)
	}
	size, err := s.cl.EntrySize(phy)
	if err != nil {
		return nil, fmt.Errorf("%w: offset %d: %v", ErrNotFound, phy, err)
	}
	b, err := s.cl.ReadAt(nil, phy, size)
	if err != nil {
		if errors.Is(err, commitlog.ErrCorrupt) {
			s.reportCorrupt(commitlog.CorruptRange{Offset: phy, Length: int64(size) + commitlog.TrailerSize, Err: err})
			return nil, fmt.Errorf("%w: offset %d: %v", ErrCorrupt, phy, err)
		}
		return nil, fmt.Errorf("%w: offset %d: %v", ErrNotFound, phy, err)
	}
	if isMarker(b) {
		return nil, fmt.Errorf("%w: offset %d holds no message", ErrNotFound, phy)
	}
	m, _, err := message.DecodeRecord(b)
	if err != nil {
		s.reportCorrupt(commitlog.CorruptRange{Offset: phy, Length: int64(size) + commitlog.TrailerSize, Err: err})
		return nil, fmt.Errorf("%w: offset %d: %v", ErrCorrupt, phy, err)
	}
	return m, nil
}

// MessageByID decodes the message an offset message id names.
func (s *Store) MessageByID(msgID string) (*message.Ext, error) {
	_, phy, err := message.ParseOffsetMsgID(msgID)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	return s.MessageAt(phy)
}

// QueryByKey returns up to max messages of topic whose KEYS contain key or
// whose UNIQ_KEY is key, stored within [begin, end] (ms), newest first.
func (s *Store) QueryByKey(topic, key string, max int, begin, end int64) ([]*message.Ext, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	s.rw.RLock()
	defer s.rw.RUnlock()
	offs, err := s.idx.Query(topic+"#"+key, begin, end, max*2+8)
	if err != nil {
		return nil, fmt.Errorf("store: query %s: %w", key, err)
	}
	var out []*message.Ext
	for _, off := range offs {
		if len(out) >= max {
			break
		}
		if off < s.cl.MinOffset() {
			continue
		}
		m, err := s.messageAt(off)
		if err != nil {
			continue
		}
		if m.Topic == topic && (m.UniqKey() == key || slices.Contains(m.Keys(), key)) {
			out = append(out, m)
		}
	}
	return out, nil
}
