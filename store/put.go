package store

import (
	"context"
	"errors"
	"fmt"
	"math"

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
	props := make([][]byte, len(msgs))
	sizes := make([]int, len(msgs)+1)
	for i, m := range msgs {
		props[i] = message.EncodeProperties(m.Properties)
		if len(props[i]) > message.MaxPropertiesLength {
			return nil, fmt.Errorf("%w: properties of message %d are %d bytes", ErrBadMessage, i, len(props[i]))
		}
		sizes[i] = message.RecordSize(m, len(props[i]))
	}
	sizes[len(msgs)] = markerSize
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
	states := make([]*queueState, len(msgs))
	pending := map[*queueState]int64{}
	for i, m := range msgs {
		st, err := s.queueLocked(m.Topic, m.QueueID)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		states[i] = st
		if _, ok := pending[st]; !ok {
			pending[st] = st.next
		}
		if dispatchesToQueue(m.SysFlag) {
			m.QueueOffset = pending[st]
			pending[st]++
		} else {
			// Prepared and rolled-back transaction messages get no queue
			// slot; RocketMQ records the would-be offset.
			m.QueueOffset = pending[st]
		}
	}
	first := int64(-1)
	var fillErr error
	offsets, err := s.cl.AppendBatch(sizes, func(i int, off int64, dst []byte) error {
		if first < 0 {
			first = off
		}
		if i == len(msgs) {
			encodeMarker(dst, marker{count: len(msgs), seq: seq, first: first})
			return nil
		}
		m := msgs[i]
		m.PhysicalOffset = off
		fillErr = message.EncodeRecordInto(dst, m, props[i])
		return fillErr
	})
	if err != nil {
		s.mu.Unlock()
		if errors.Is(err, commitlog.ErrTooLarge) {
			return nil, fmt.Errorf("%w: %v", ErrBatchTooLarge, err)
		}
		if fillErr != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadMessage, fillErr)
		}
		s.writeErr = err
		s.log.Error("commitlog append failed; refusing further writes", "error", err)
		return nil, fmt.Errorf("%w: %v", ErrWriteFailed, err)
	}
	reqs := make([]dispatchReq, len(msgs))
	for i, m := range msgs {
		reqs[i] = dispatchFromExt(m)
	}
	all := func(int) bool { return true }
	if err := s.dispatchLocked(reqs, states, all, all); err != nil {
		s.writeErr = err
		s.mu.Unlock()
		s.log.Error("dispatch failed; refusing further writes", "error", err)
		return nil, fmt.Errorf("%w: %v", ErrWriteFailed, err)
	}
	res := make([]PutResult, len(msgs))
	for i, m := range msgs {
		res[i] = PutResult{
			PhysicalOffset: offsets[i],
			QueueOffset:    m.QueueOffset,
			Size:           int32(sizes[i]),
			MsgID:          message.OffsetMsgID(m.StoreHost, offsets[i]),
		}
	}
	end := offsets[len(msgs)] + markerSize + commitlog.TrailerSize
	s.lastSeq.Store(seq)
	s.dirty = true
	type touch struct {
		k    queueKey
		next int64
	}
	var touched []touch
	if s.cfg.OnDispatch != nil {
		for i, m := range msgs {
			touched = append(touched, touch{queueKey{m.Topic, m.QueueID}, states[i].next})
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
		case len(m.Body) > s.cfg.MaxMessageSize:
			return fmt.Errorf("%w: message %d: body of %d bytes exceeds %d", ErrBadMessage, i, len(m.Body), s.cfg.MaxMessageSize)
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
