package dledger

import (
	"testing"

	"github.com/ledgermq/ledgermq/message"
)

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

// TestAppliedRingOneLog: with one log the entry applied may be the one read
// back from the log, its records' offsets filled in; it is still the
// proposal, and an entry whose records differ elsewhere is not.
func TestAppliedRingOneLog(t *testing.T) {
	m := testMsg("T", 0, "mine")
	m.StoreHost = testBorn
	rec, err := message.AppendRecord(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	proposed := encodeMessagesEntry([][]byte{rec})
	stored := append([]byte(nil), rec...)
	if err := message.PatchOffsets(stored, 41, 4096); err != nil {
		t.Fatal(err)
	}
	readBack := encodeMessagesEntry([][]byte{stored})
	other := append([]byte(nil), readBack...)
	other[len(other)-1] ^= 1

	r := newAppliedRing()
	r.skipOffsets = true
	r.record(7, readBack, applyResult{})
	if _, same, found := r.lookup(7, proposed); !found || !same {
		t.Fatalf("the proposal read back: found=%v same=%v", found, same)
	}
	if _, same, _ := r.lookup(7, other); same {
		t.Fatal("another entry matched")
	}
}

// TestAppliedChanged: a waiter's channel is closed by the next applied
// batch, and only by it; every waiter before that batch shares it.
func TestAppliedChanged(t *testing.T) {
	f := &fsm{}
	a, b := f.appliedChanged(), f.appliedChanged()
	if a != b {
		t.Fatal("two waiters before a batch got different channels")
	}
	select {
	case <-a:
		t.Fatal("closed before any batch")
	default:
	}
	f.ApplyBatch(nil)
	select {
	case <-a:
	default:
		t.Fatal("not closed by the batch")
	}
	c := f.appliedChanged()
	select {
	case <-c:
		t.Fatal("a channel taken after the batch is closed")
	default:
	}
}
