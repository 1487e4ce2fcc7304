package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"

	"github.com/ledgermq/ledgermq/commitlog"
	"github.com/ledgermq/ledgermq/index"
	"github.com/ledgermq/ledgermq/message"
)

// PutResult is where one message of a batch was stored.
type PutResult struct {
	PhysicalOffset int64
	QueueOffset    int64
	Size           int32
	// MsgID is the offset message id (store host + physical offset).
	MsgID string
	// QueueID and Duplicate are set on the answer to a message that was
	// not stored because it repeats one the duplicate window holds
	// (duplicates.go): the fields above then say where that first one
	// is, and QueueID which queue it went to.
	QueueID   int32
	Duplicate bool
}

// Put appends a batch of messages as one all-or-nothing unit and returns
// each message's position in batch order.
//
// seq is the caller's sequence number for the batch (the raft index); it
// must be above LastSeq, or Put skips the batch and returns ErrSeqApplied
// (a re-delivered entry after a crash). seq 0 means LastSeq()+1.
//
// The caller stamps every field that varies between replicas before the
// batch is agreed on: Topic, QueueID, Flag, Body, Properties (UNIQ_KEY
// included), SysFlag, BornTimestamp, BornHost, StoreTimestamp, StoreHost,
// ReconsumeTimes, PreparedTransactionOffset. Put assigns QueueOffset and
// PhysicalOffset from apply order and writes them, with StoreSize and
// BodyCRC, into the caller's messages; nothing else is taken from the local
// machine, so replicas applying the same batches hold identical bytes.
//
// Put is safe for concurrent use; batches are applied one at a time. In
// FlushSync mode it returns after the batch is on disk, sharing the fsync
// with concurrent callers.
func (s *Store) Put(seq uint64, msgs []*message.Ext) ([]PutResult, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := s.validate(msgs); err != nil {
		return nil, err
	}
	items := make([]batchItem, len(msgs))
	for i, m := range msgs {
		if err := items[i].fromExt(m); err != nil {
			return nil, fmt.Errorf("%w: message %d: %v", ErrBadMessage, i, err)
		}
	}
	return s.putBatch(seq, items)
}

// RecordSeq records batch seq as applied without storing a message (Put of
// an empty batch): a replay after a crash then skips it. Its errors are
// Put's (ErrSeqApplied for a seq at or below LastSeq).
func (s *Store) RecordSeq(seq uint64) error {
	_, err := s.Put(seq, nil)
	return err
}

// batchItem is one record of a batch on its way into the CommitLog: either
// a message that is encoded in place (Put) or a canonical encoded record
// that is copied as it is (PutEncoded). Both give the same bytes.
type batchItem struct {
	m     *message.Ext // encoded at append time from m and props
	props []byte       // m's encoded properties
	rec   []byte       // copied at append time, offsets patched
	size  int
	// req holds what dispatch needs; phy, queueOffset and size are set
	// when the record's place is known.
	req       dispatchReq
	storeHost netip.AddrPort
}

// fromExt prepares a message for Put.
func (it *batchItem) fromExt(m *message.Ext) error {
	props := message.EncodeProperties(m.Properties)
	if len(props) > message.MaxPropertiesLength {
		return fmt.Errorf("properties are %d bytes", len(props))
	}
	*it = batchItem{
		m:     m,
		props: props,
		size:  message.RecordSize(m, len(props)),
		req: dispatchReq{
			topic:     m.Topic,
			queueID:   m.QueueID,
			sysFlag:   m.SysFlag,
			storeTime: m.StoreTimestamp,
			tags:      m.Tags(),
			keys:      m.Keys(),
			uniqKey:   indexKey(m.Topic, m.UniqKey()),
			reconsume: m.ReconsumeTimes,
			realTopic: retryRealTopic(m.ReconsumeTimes, m.Properties),
		},
		storeHost: m.StoreHost,
	}
	return nil
}

// write writes the item's record at CommitLog offset off into dst.
func (it *batchItem) write(dst []byte, off int64) error {
	if it.m == nil {
		copy(dst, it.rec)
		return message.PatchOffsets(dst, it.req.queueOffset, off)
	}
	it.m.QueueOffset = it.req.queueOffset
	it.m.PhysicalOffset = off
	return message.EncodeRecordInto(dst, it.m, it.props)
}

// appendItemsLocked appends items and their marker m (its first offset
// filled in) as one CommitLog append and returns their offsets. A write
// failure makes the store refuse writes from then on. Called with s.mu
// held.
func (s *Store) appendItemsLocked(items []batchItem, sizes []int, m marker) ([]int64, error) {
	first := int64(-1)
	var fillErr error
	offsets, err := s.cl.AppendBatch(sizes, func(i int, off int64, dst []byte) error {
		if first < 0 {
			first = off
		}
		if i == len(items) {
			m.first = first
			encodeMarker(dst, m)
			return nil
		}
		fillErr = items[i].write(dst, off)
		return fillErr
	})
	switch {
	case err == nil:
		return offsets, nil
	case errors.Is(err, commitlog.ErrTooLarge):
		return nil, fmt.Errorf("%w: %v", ErrBatchTooLarge, err)
	case fillErr != nil:
		return nil, fmt.Errorf("%w: %v", ErrBadMessage, fillErr)
	}
	s.writeErr = err
	s.log.Error("commitlog append failed; refusing further writes", "error", err)
	return nil, fmt.Errorf("%w: %v", ErrWriteFailed, err)
}

// putBatch appends validated items and the batch marker as one CommitLog
// append, dispatches them and answers their positions (see Put).
func (s *Store) putBatch(seq uint64, items []batchItem) ([]PutResult, error) {
	if s.cfg.OneLog {
		return nil, ErrNotOneLog
	}
	sizes := make([]int, len(items)+1)
	for i := range items {
		sizes[i] = items[i].size
	}
	sizes[len(items)] = markerSize
	if math.Float64frombits(s.diskRatio.Load()) > s.cfg.DiskRefuseRatio {
		return nil, fmt.Errorf("%w: more than %.0f%% of the disk is used", ErrDiskFull, s.cfg.DiskRefuseRatio*100)
	}

	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if s.writeErr != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %v", ErrWriteFailed, s.writeErr)
	}
	last := s.lastSeq.Load()
	if seq == 0 {
		seq = last + 1
	} else if seq <= last {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %d <= %d", ErrSeqApplied, seq, last)
	}
	// Assign queue offsets; a queue may appear more than once in a batch.
	states := make([]*queueState, len(items))
	pending := map[*queueState]int64{}
	for i := range items {
		r := &items[i].req
		st, err := s.queueLocked(r.topic, r.queueID)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		states[i] = st
		if _, ok := pending[st]; !ok {
			pending[st] = st.next
		}
		// Prepared and rolled-back transaction messages get no queue slot;
		// RocketMQ records the would-be offset.
		r.queueOffset = pending[st]
		if dispatchesToQueue(r.sysFlag) {
			pending[st]++
		}
	}
	offsets, err := s.appendItemsLocked(items, sizes, marker{count: len(items), seq: seq})
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	reqs := make([]dispatchReq, len(items))
	for i := range items {
		r := &items[i].req
		r.phy = offsets[i]
		r.size = int32(sizes[i])
		reqs[i] = *r
	}
	all := func(int) bool { return true }
	if err := s.dispatchLocked(reqs, states, all, all); err != nil {
		s.writeErr = err
		s.mu.Unlock()
		s.log.Error("dispatch failed; refusing further writes", "error", err)
		return nil, fmt.Errorf("%w: %v", ErrWriteFailed, err)
	}
	s.addDuplicatesLocked(reqs)
	res := make([]PutResult, len(items))
	for i := range items {
		res[i] = PutResult{
			PhysicalOffset: offsets[i],
			QueueOffset:    reqs[i].queueOffset,
			Size:           int32(sizes[i]),
			MsgID:          message.OffsetMsgID(items[i].storeHost, offsets[i]),
		}
	}
	end := offsets[len(items)] + markerSize + commitlog.TrailerSize
	s.lastSeq.Store(seq)
	s.dirty = true
	type touch struct {
		k    queueKey
		next int64
	}
	var touched []touch
	if s.cfg.OnDispatch != nil {
		for i := range items {
			touched = append(touched, touch{queueKey{reqs[i].topic, reqs[i].queueID}, states[i].next})
		}
	}
	s.mu.Unlock()

	for _, t := range touched {
		s.cfg.OnDispatch(t.k.topic, t.k.id, t.next)
	}
	if s.cfg.FlushMode == FlushSync {
		if err := s.cl.WaitFlushed(context.Background(), end); err != nil {
			return nil, fmt.Errorf("%w: flush: %v", ErrWriteFailed, err)
		}
	}
	return res, nil
}

func (s *Store) validate(msgs []*message.Ext) error {
	return s.validateMax(msgs, s.MaxMessageSize())
}

// validateMax is validate with the largest body it accepts.
func (s *Store) validateMax(msgs []*message.Ext, maxBody int) error {
	for i, m := range msgs {
		switch {
		case m == nil:
			return fmt.Errorf("%w: message %d is nil", ErrBadMessage, i)
		case m.Topic == "" || len(m.Topic) > message.MaxTopicLength:
			return fmt.Errorf("%w: message %d: topic length %d", ErrBadMessage, i, len(m.Topic))
		case m.QueueID < 0:
			return fmt.Errorf("%w: message %d: queue id %d", ErrBadMessage, i, m.QueueID)
		case !m.BornHost.IsValid() || !m.StoreHost.IsValid():
			return fmt.Errorf("%w: message %d: born and store hosts must be set", ErrBadMessage, i)
		case len(m.Body) > maxBody:
			return fmt.Errorf("%w: message %d: body of %d bytes exceeds %d", ErrBadMessage, i, len(m.Body), maxBody)
		}
		// Every key is indexed as topic#key: refuse what the IndexFile
		// cannot hold before anything is written.
		for _, k := range append(m.Keys(), m.UniqKey()) {
			if len(m.Topic)+1+len(k) > index.MaxKeyLen {
				return fmt.Errorf("%w: message %d: key of %d bytes exceeds %d", ErrBadMessage, i, len(k), index.MaxKeyLen-len(m.Topic)-1)
			}
		}
	}
	return nil
}

// queueLocked returns the writer state of a queue, loading its next offset
// from the ConsumeQueue on first use. Called with s.mu held.
func (s *Store) queueLocked(topic string, id int32) (*queueState, error) {
	k := queueKey{topic, id}
	if st, ok := s.queues[k]; ok {
		return st, nil
	}
	if err := s.verifyLocked(k); err != nil {
		return nil, err
	}
	q, err := s.cq.Queue(topic, id)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	st := &queueState{q: q, next: q.MaxOffset()}
	s.queues[k] = st
	return st, nil
}
