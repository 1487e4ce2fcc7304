package dledger

import (
	"sync"

	"github.com/ledgermq/ledgermq/store"
)

// ownEntries remembers the last entries this node proposed, by the address
// of their first byte, with what the proposer read of their records. On
// the leader raft hands the raft log and the FSM the very slice the
// proposer built (the future's log), whose records appendRecords encoded
// and checked: the one-log raft log takes what was read of them
// (prepared) and stores them without parsing them again, the FSM asks
// take whether an entry is one of them, and checks only the others
// (entries from the network or read back from the raft log). Forgetting an
// entry is safe: it is then checked again.
type ownEntries struct {
	mu   sync.Mutex
	ring [32]ownEntry
	next int
}

// ownEntry is one entry ownEntries remembers.
type ownEntry struct {
	first    *byte
	prepared *store.PreparedRecords // nil once taken, or for none
}

// add remembers b as proposed by this node, its records read as prep
// (nil: not kept).
func (o *ownEntries) add(b []byte, prep *store.PreparedRecords) {
	if len(b) == 0 {
		return
	}
	o.mu.Lock()
	o.ring[o.next] = ownEntry{first: &b[0], prepared: prep}
	o.next = (o.next + 1) % len(o.ring)
	o.mu.Unlock()
}

// take reports whether b is an entry add remembered, and forgets it.
func (o *ownEntries) take(b []byte) bool {
	_, ok := o.find(b, true)
	return ok
}

// prepared reports whether b is an entry add remembered, without
// forgetting it (the one-log raft log asks before the FSM takes it), and
// hands over what the proposer read of its records, once.
func (o *ownEntries) prepared(b []byte) (*store.PreparedRecords, bool) {
	return o.find(b, false)
}

func (o *ownEntries) find(b []byte, forget bool) (*store.PreparedRecords, bool) {
	if len(b) == 0 {
		return nil, false
	}
	p := &b[0]
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range o.ring {
		e := &o.ring[i]
		if e.first != p {
			continue
		}
		prep := e.prepared
		e.prepared = nil
		if forget {
			e.first = nil
		}
		return prep, true
	}
	return nil, false
}
