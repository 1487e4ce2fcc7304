package dledger

import "testing"

// TestAppliedRing: an entry is found with its result when the same bytes
// were applied at its index, reported replaced when others were, and
// unknown once the ring has moved past it.
func TestAppliedRing(t *testing.T) {
	r := newAppliedRing()
	r.record(7, []byte("mine"), applyResult{})
	if _, same, found := r.lookup(7, []byte("mine")); !found || !same {
		t.Fatalf("same entry: found=%v same=%v", found, same)
	}
	if _, same, found := r.lookup(7, []byte("theirs")); !found || same {
		t.Fatalf("replaced entry: found=%v same=%v", found, same)
	}
	if _, _, found := r.lookup(8, []byte("mine")); found {
		t.Fatal("an index never applied was found")
	}
	r.record(7+recentApplied, []byte("later"), applyResult{})
	if _, _, found := r.lookup(7, []byte("mine")); found {
		t.Fatal("an entry the ring moved past was found")
	}
}
