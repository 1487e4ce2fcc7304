package store

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/ledgermq/ledgermq/consumequeue"
	"github.com/ledgermq/ledgermq/index"
	"github.com/ledgermq/ledgermq/message"
)

// dispatchReq is what the dispatcher needs of one stored record to keep the
// ConsumeQueue and the IndexFile in step with the CommitLog. Put and
// PutEncoded build it from the batch they write (putBatch); recovery builds
// it from the record bytes; both then go through dispatchLocked, the one
// dispatch path.
type dispatchReq struct {
	topic       string
	queueID     int32
	queueOffset int64
	phy         int64
	size        int32
	sysFlag     int32
	storeTime   int64
	tags        string
	keys        []string
	// uniqKey is the IndexFile key of the record's UNIQ_KEY (topic#key,
	// one string made once), "" without one.
	uniqKey string
	// reconsume is the record's reconsume count and realTopic, only when
	// that is above 0, its REAL_TOPIC: the rest of its DuplicateKey.
	reconsume int32
	realTopic string
	// host is the record's store host (its offset message id's), kept
	// for the one-log store's answers (entries.go).
	host netip.AddrPort
}

// indexKey is the IndexFile key of key in topic (topic#key), "" for no
// key; key is a string or the bytes of one, copied once.
func indexKey[K string | []byte](topic string, key K) string {
	if len(key) == 0 {
		return ""
	}
	var buf [128]byte
	b := append(append(append(buf[:0], topic...), '#'), key...)
	return string(b)
}

// retryRealTopic is a retry's REAL_TOPIC for its DuplicateKey ("" for a
// first attempt, which does not need it).
func retryRealTopic(reconsume int32, props map[string]string) string {
	if reconsume <= 0 {
		return ""
	}
	return props[message.PropertyRealTopic]
}

// dispatchFromRecord decodes what dispatch needs from an encoded record at
// physical offset off.
func dispatchFromRecord(off int64, b []byte) (dispatchReq, error) {
	v, err := message.ParseView(b)
	if err != nil {
		return dispatchReq{}, err
	}
	if v.PhysicalOffset() != off {
		return dispatchReq{}, fmt.Errorf("%w: record at %d says it is at %d", ErrCorrupt, off, v.PhysicalOffset())
	}
	props, err := message.DecodeProperties(v.PropertiesBytes())
	if err != nil {
		return dispatchReq{}, err
	}
	m := message.Message{Properties: props}
	return dispatchReq{
		topic:       v.Topic(),
		queueID:     v.QueueID(),
		queueOffset: v.QueueOffset(),
		phy:         off,
		size:        int32(len(b)),
		sysFlag:     v.SysFlag(),
		storeTime:   v.StoreTimestamp(),
		tags:        m.Tags(),
		keys:        m.Keys(),
		uniqKey:     indexKey(v.Topic(), m.UniqKey()),
		reconsume:   v.ReconsumeTimes(),
		realTopic:   retryRealTopic(v.ReconsumeTimes(), props),
		host:        v.StoreHost(),
	}, nil
}

// dispatchesToQueue reports whether a record with this sysFlag gets a
// ConsumeQueue slot: prepared and rolled-back transaction messages do not
// (consumers must not see them), as in RocketMQ.
func dispatchesToQueue(sysFlag int32) bool {
	t := sysFlag & message.SysFlagTransactionMask
	return t != message.SysFlagTransactionPrepared && t != message.SysFlagTransactionRollback
}

// dispatchScratch is the working memory of dispatchLocked, pooled so that
// a dispatch allocates nothing once warm.
type dispatchScratch struct {
	runs  []unitRun
	runOf []int32 // run of each record, -1 for one without a unit
	units []consumequeue.Unit
	// last maps a queue to its newest run once a batch has more runs than
	// a scan of them is worth.
	last map[*queueState]int32
	keys []index.Key
}

// unitRun is a run of units for consecutive queue offsets of one queue.
type unitRun struct {
	st    *queueState
	first int // the record of the run's first unit
	n     int // units in the run
	at    int // where the run's units start in dispatchScratch.units
}

// scanRuns is the number of runs up to which dispatchLocked finds a
// queue's newest run by scanning them rather than through a map.
const scanRuns = 8

// keepScratch is the largest scratch (in units or keys) returned to the
// pool; a recovery batch larger than that does not pin its memory.
const keepScratch = 1 << 12

var dispatchScratches = sync.Pool{New: func() any {
	return &dispatchScratch{last: map[*queueState]int32{}}
}}

// dispatchLocked writes the ConsumeQueue units (where toQueue[i]) and the
// IndexFile keys (where toIndex[i]) of a batch of records, given in
// CommitLog order with their queues' writer states. A queue's units of one
// batch are consecutive and go to disk in one write; the batch's keys go
// to the index in one call. Called with s.mu held.
func (s *Store) dispatchLocked(reqs []dispatchReq, states []*queueState, toQueue, toIndex func(i int) bool) error {
	sc := dispatchScratches.Get().(*dispatchScratch)
	defer sc.release()
	// Group the units into runs: a record whose queue offset follows its
	// queue's newest run joins it, any other starts a run.
	runs, runOf := sc.runs[:0], sc.runOf[:0]
	mapped := false
	for i := range reqs {
		r := &reqs[i]
		if !toQueue(i) || !dispatchesToQueue(r.sysFlag) {
			runOf = append(runOf, -1)
			continue
		}
		st := states[i]
		j := int32(-1)
		if mapped {
			if k, ok := sc.last[st]; ok {
				j = k
			}
		} else {
			for k := len(runs) - 1; k >= 0; k-- {
				if runs[k].st == st {
					j = int32(k)
					break
				}
			}
		}
		if j < 0 || reqs[runs[j].first].queueOffset+int64(runs[j].n) != r.queueOffset {
			j = int32(len(runs))
			runs = append(runs, unitRun{st: st, first: i})
			switch {
			case mapped:
				sc.last[st] = j
			case len(runs) > scanRuns:
				for k := range runs {
					sc.last[runs[k].st] = int32(k)
				}
				mapped = true
			}
		}
		runs[j].n++
		runOf = append(runOf, j)
	}
	sc.runs, sc.runOf = runs, runOf
	if mapped {
		clear(sc.last)
	}
	total := 0
	for k := range runs {
		runs[k].at = total
		total += runs[k].n
	}
	units := slices.Grow(sc.units[:0], total)[:total]
	sc.units = units
	// Place each unit in its run's span, counting the run up again.
	for k := range runs {
		runs[k].n = 0
	}
	for i, j := range runOf {
		if j < 0 {
			continue
		}
		r, ru := &reqs[i], &runs[j]
		units[ru.at+ru.n] = consumequeue.Unit{Offset: r.phy, Size: r.size, TagsCode: message.TagsHashCode(r.tags)}
		ru.n++
	}
	for k := range runs {
		ru := &runs[k]
		r, st, us := &reqs[ru.first], ru.st, units[ru.at:ru.at+ru.n]
		err := st.q.PutUnits(r.queueOffset, us)
		if errors.Is(err, consumequeue.ErrGap) {
			// The slots between the queue's end and this record belong to
			// records lost to corruption; point them at the corrupt range
			// so a reader skips them and reports it.
			if err = s.fillGapLocked(st, *r); err == nil {
				err = st.q.PutUnits(r.queueOffset, us)
			}
		}
		if err != nil {
			return fmt.Errorf("store: dispatch %s/%d@%d: %w", r.topic, r.queueID, r.queueOffset, err)
		}
		if end := r.queueOffset + int64(len(us)); end > st.next {
			st.next = end
		}
	}
	// Every record's UNIQ_KEY and KEYS values, as topic#key, in one put.
	keys := sc.keys[:0]
	for i := range reqs {
		if !toIndex(i) {
			continue
		}
		r := &reqs[i]
		if r.uniqKey != "" {
			keys = append(keys, index.Key{Name: r.uniqKey, PhyOffset: r.phy, StoreTimestamp: r.storeTime})
		}
		for _, k := range r.keys {
			key := index.Key{Topic: r.topic, Name: k, PhyOffset: r.phy, StoreTimestamp: r.storeTime}
			if r.topic == "" {
				key = index.Key{Name: "#" + k, PhyOffset: r.phy, StoreTimestamp: r.storeTime}
			}
			keys = append(keys, key)
		}
	}
	sc.keys = keys
	if len(keys) == 0 {
		return nil
	}
	n, err := s.idx.PutKeys(keys)
	s.idxPending += int64(n)
	if err != nil {
		return fmt.Errorf("store: index %s: %w", keys[n].Name, err)
	}
	return nil
}

// release clears what the scratch points at and returns it to the pool,
// unless a large batch made it too big to keep.
func (sc *dispatchScratch) release() {
	if cap(sc.units) > keepScratch || cap(sc.keys) > keepScratch || cap(sc.runOf) > keepScratch {
		return
	}
	clear(sc.runs)
	clear(sc.keys)
	dispatchScratches.Put(sc)
}

// fillGapLocked fills the queue up to (not including) r's slot.
func (s *Store) fillGapLocked(st *queueState, r dispatchReq) error {
	hole := s.lastHole
	if hole < 0 || hole >= r.phy {
		return fmt.Errorf("%w: queue slot %d missing with no corrupt record before it", consumequeue.ErrGap, r.queueOffset)
	}
	for o := st.q.MaxOffset(); o < r.queueOffset; o++ {
		if err := st.q.Put(o, consumequeue.Unit{Offset: hole, Size: 8}); err != nil {
			return err
		}
	}
	return nil
}
