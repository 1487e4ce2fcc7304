package store

import (
	"fmt"

	"github.com/ledgermq/ledgermq/consumequeue"
)

// PreparedRecords are the records of one raft entry as the leader that
// encoded them read them before proposing it (PrepareStamped). An entry
// appended with them (Entry.Prepared) is stored without its records being
// parsed again: the leader reads each record it proposes once.
type PreparedRecords struct {
	items []batchItem
	// reencoded: a record's properties were not in canonical form, so the
	// store would write it re-encoded; such an entry is read again at its
	// append (which writes the same bytes as before).
	reencoded bool
}

// Grow makes room for n more records.
func (p *PreparedRecords) Grow(n int) {
	if n > cap(p.items)-len(p.items) {
		items := make([]batchItem, len(p.items), len(p.items)+n)
		copy(items, p.items)
		p.items = items
	}
}

// Len is how many records p holds (none when p is nil).
func (p *PreparedRecords) Len() int {
	if p == nil {
		return 0
	}
	return len(p.items)
}

// Truncate forgets the records from the n-th on (those of a proposal left
// out of the entry). A nil p holds none.
func (p *PreparedRecords) Truncate(n int) {
	if p == nil {
		return
	}
	clear(p.items[n:])
	p.items = p.items[:n]
}

// PrepareStamped is CheckStamped, keeping in p what it read of rec for
// the append of the entry that carries rec (as p's next record).
func (s *Store) PrepareStamped(p *PreparedRecords, rec []byte) error {
	p.items = append(p.items, batchItem{})
	it := &p.items[len(p.items)-1]
	if err := s.checkInto(it, rec, false); err != nil {
		p.Truncate(len(p.items) - 1)
		return err
	}
	if it.m != nil {
		p.reencoded = true
	}
	return nil
}

// itemsFor returns p's records as the batch items of an entry whose
// records are recs, each item's record the entry's own bytes, or nil when
// p does not describe recs (no p, another count or size, a record stored
// re-encoded): the append then reads the records itself.
func (p *PreparedRecords) itemsFor(recs [][]byte) []batchItem {
	if p == nil || p.reencoded || len(p.items) != len(recs) {
		return nil
	}
	for i, rec := range recs {
		if p.items[i].size != len(rec) {
			return nil
		}
	}
	for i, rec := range recs {
		p.items[i].rec = rec
	}
	return p.items
}

// checkInto checks rec as CheckEncoded does, leaving what it read in it.
func (s *Store) checkInto(it *batchItem, rec []byte, verifyCRC bool) error {
	if err := s.prepareEncoded(it, rec, verifyCRC); err != nil {
		return fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	if !consumequeue.ValidTopic(it.req.topic) {
		return fmt.Errorf("%w: topic %q cannot be stored", ErrBadMessage, it.req.topic)
	}
	return nil
}
