package store

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/ledgermq/ledgermq/consumequeue"
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

// dispatchLocked writes the ConsumeQueue units (where toQueue[i]) and the
// IndexFile keys (where toIndex[i]) of a batch of records, given in
// CommitLog order with their queues' writer states. A queue's units of one
// batch are consecutive and go to disk in one write. Called with s.mu held.
func (s *Store) dispatchLocked(reqs []dispatchReq, states []*queueState, toQueue, toIndex func(i int) bool) error {
	type run struct {
		st    *queueState
		first dispatchReq
		units []consumequeue.Unit
	}
	var runs []*run
	open := map[*queueState]*run{}
	for i, r := range reqs {
		if !toQueue(i) || !dispatchesToQueue(r.sysFlag) {
			continue
		}
		u := consumequeue.Unit{Offset: r.phy, Size: r.size, TagsCode: message.TagsHashCode(r.tags)}
		ru := open[states[i]]
		if ru == nil || ru.first.queueOffset+int64(len(ru.units)) != r.queueOffset {
			ru = &run{st: states[i], first: r}
			open[states[i]] = ru
			runs = append(runs, ru)
		}
		ru.units = append(ru.units, u)
	}
	for _, ru := range runs {
		r, st := ru.first, ru.st
		err := st.q.PutUnits(r.queueOffset, ru.units)
		if errors.Is(err, consumequeue.ErrGap) {
			// The slots between the queue's end and this record belong to
			// records lost to corruption; point them at the corrupt range
			// so a reader skips them and reports it.
			if err = s.fillGapLocked(st, r); err == nil {
				err = st.q.PutUnits(r.queueOffset, ru.units)
			}
		}
		if err != nil {
			return fmt.Errorf("store: dispatch %s/%d@%d: %w", r.topic, r.queueID, r.queueOffset, err)
		}
		if end := r.queueOffset + int64(len(ru.units)); end > st.next {
			st.next = end
		}
	}
	for i, r := range reqs {
		if !toIndex(i) {
			continue
		}
		if r.uniqKey != "" {
			if err := s.idx.Put(r.uniqKey, r.phy, r.storeTime); err != nil {
				return fmt.Errorf("store: index %s: %w", r.uniqKey, err)
			}
			s.idxPending++
		}
		for _, k := range r.keys {
			if err := s.idx.Put(r.topic+"#"+k, r.phy, r.storeTime); err != nil {
				return fmt.Errorf("store: index %s: %w", k, err)
			}
		}
		s.idxPending += int64(len(r.keys))
	}
	return nil
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
