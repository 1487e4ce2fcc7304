package store

import (
	"bytes"
	"fmt"

	"github.com/ledgermq/ledgermq/index"
	"github.com/ledgermq/ledgermq/message"
)

// PutEncoded is Put for messages that arrive already encoded as RocketMQ
// stored records (magic MagicV1, stamped by the caller, queue and physical
// offsets ignored), such as the records of a raft entry. It stores exactly
// the bytes Put would store for the decoded messages and returns the same
// results, without decoding and re-encoding every message: a record in
// the canonical form the encoder produces (properties in ascending name
// order, each name once) is copied as it is, with its offsets patched in;
// any other valid record is decoded and encoded the way Put does it.
//
// recs may alias memory the caller owns; PutEncoded does not keep them.
// Errors are Put's; a record that does not parse, whose length is not its
// TOTALSIZE or whose body CRC is wrong is ErrBadMessage and nothing is
// written.
//
// PutEncoded is safe for concurrent use with everything Put is.
func (s *Store) PutEncoded(seq uint64, recs [][]byte) ([]PutResult, error) {
	return s.putEncoded(seq, recs, true)
}

// PutChecked is PutEncoded for records whose body CRC has been checked
// once already on this node: records this process encoded itself (their
// CRC was computed, not received) and checked with CheckStamped, or
// records received from the network and checked on arrival
// (message.ParseView and VerifyBodyCRC). It checks everything else
// PutEncoded checks; only the CRC pass over every body is not repeated.
func (s *Store) PutChecked(seq uint64, recs [][]byte) ([]PutResult, error) {
	return s.putEncoded(seq, recs, false)
}

func (s *Store) putEncoded(seq uint64, recs [][]byte, verifyCRC bool) ([]PutResult, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	items := make([]batchItem, len(recs))
	for i, rec := range recs {
		if err := s.prepareEncoded(&items[i], rec, verifyCRC); err != nil {
			return nil, fmt.Errorf("%w: message %d: %v", ErrBadMessage, i, err)
		}
	}
	return s.putBatch(seq, items)
}

// prepareEncoded checks one encoded record as Put's validation would check
// the decoded message, and prepares it for the append. verifyCRC also
// checks the body CRC.
func (s *Store) prepareEncoded(it *batchItem, rec []byte, verifyCRC bool) error {
	return s.prepareEncodedMax(it, rec, verifyCRC, s.MaxMessageSize())
}

// prepareEncodedMax is prepareEncoded with the largest body it accepts.
func (s *Store) prepareEncodedMax(it *batchItem, rec []byte, verifyCRC bool, maxBody int) error {
	v, err := message.ParseView(rec)
	if err != nil {
		return err
	}
	if v.Size() != len(rec) {
		return fmt.Errorf("record of %d bytes says it has %d", len(rec), v.Size())
	}
	if verifyCRC {
		if err := v.VerifyBodyCRC(); err != nil {
			return err
		}
	}
	if !canonicalProperties(v.PropertiesBytes()) {
		m, err := v.Decode()
		if err != nil {
			return err
		}
		if err := s.validateMax([]*message.Ext{m}, maxBody); err != nil {
			return err
		}
		return it.fromExt(m)
	}
	topic := v.Topic()
	switch {
	case v.QueueID() < 0:
		return fmt.Errorf("queue id %d", v.QueueID())
	case len(v.Body()) > maxBody:
		return fmt.Errorf("body of %d bytes exceeds %d", len(v.Body()), maxBody)
	}
	tags, _ := v.Property(message.PropertyTags)
	keysProp, _ := v.Property(message.PropertyKeys)
	uniq, _ := v.Property(message.PropertyUniqKey)
	keys := message.SplitKeys(string(keysProp))
	// Every key is indexed as topic#key (see validate).
	for _, k := range keys {
		if len(topic)+1+len(k) > index.MaxKeyLen {
			return fmt.Errorf("key of %d bytes exceeds %d", len(k), index.MaxKeyLen-len(topic)-1)
		}
	}
	if len(topic)+1+len(uniq) > index.MaxKeyLen {
		return fmt.Errorf("key of %d bytes exceeds %d", len(uniq), index.MaxKeyLen-len(topic)-1)
	}
	var realTopic []byte
	if v.ReconsumeTimes() > 0 {
		realTopic, _ = v.Property(message.PropertyRealTopic)
	}
	*it = batchItem{
		rec:  rec,
		size: len(rec),
		req: dispatchReq{
			topic:     topic,
			queueID:   v.QueueID(),
			sysFlag:   v.SysFlag(),
			storeTime: v.StoreTimestamp(),
			tags:      string(tags),
			keys:      keys,
			uniqKey:   indexKey(topic, uniq),
			reconsume: v.ReconsumeTimes(),
			realTopic: string(realTopic),
		},
		storeHost: v.StoreHost(),
	}
	return nil
}

// canonicalProperties reports whether well-framed encoded properties (as
// ParseView has checked them) are what message.EncodeProperties writes for
// the map they decode to: names in strictly ascending byte order, so none
// appears twice. Decoding and encoding such bytes gives them back unchanged.
func canonicalProperties(b []byte) bool {
	var prev []byte
	for off := 0; off < len(b); {
		end := bytes.IndexByte(b[off:], message.PropertySeparator)
		if end < 0 {
			return false
		}
		item := b[off : off+end]
		sep := bytes.IndexByte(item, message.NameValueSeparator)
		if sep <= 0 {
			return false
		}
		name := item[:sep]
		if prev != nil && bytes.Compare(prev, name) >= 0 {
			return false
		}
		prev = name
		off += end + 1
	}
	return true
}
