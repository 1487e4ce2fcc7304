package dledger

import "sync"

// ownEntries remembers the last entries this node proposed, by the address
// of their first byte. On the leader raft hands the FSM the very slice the
// proposer built (the future's log), whose records appendRecords encoded
// and checked; the FSM asks take whether an entry is one of them, and
// checks only the others (entries from the network or read back from the
// raft log). Forgetting an entry is safe: it is then checked again.
type ownEntries struct {
	mu   sync.Mutex
	ring [32]*byte
	next int
}

// add remembers b as proposed by this node.
func (o *ownEntries) add(b []byte) {
	if len(b) == 0 {
		return
	}
	o.mu.Lock()
	o.ring[o.next] = &b[0]
	o.next = (o.next + 1) % len(o.ring)
	o.mu.Unlock()
}

// take reports whether b is an entry add remembered, and forgets it.
func (o *ownEntries) take(b []byte) bool { return o.find(b, true) }

// has reports whether b is an entry add remembered, without forgetting it
// (the one-log raft log asks before the FSM takes it).
func (o *ownEntries) has(b []byte) bool { return o.find(b, false) }

func (o *ownEntries) find(b []byte, forget bool) bool {
	if len(b) == 0 {
		return false
	}
	p := &b[0]
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, q := range o.ring {
		if q == p {
			if forget {
				o.ring[i] = nil
			}
			return true
		}
	}
	return false
}
