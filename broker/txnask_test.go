package broker

import "testing"

// Askers are listed by group until removed.
func TestTxnAskers(t *testing.T) {
	b := &Broker{}
	asked := 0
	ask := func(TxnCheck) bool { asked++; return true }
	r1 := b.AddTxnAsker("g", ask)
	r2 := b.AddTxnAsker("g", ask)
	b.AddTxnAsker("other", ask)
	if n := len(b.txnAskers.of("g")); n != 2 {
		t.Fatalf("%d askers of g, want 2", n)
	}
	r1()
	if n := len(b.txnAskers.of("g")); n != 1 {
		t.Fatalf("%d askers of g after one removal, want 1", n)
	}
	r2()
	if n := len(b.txnAskers.of("g")); n != 0 {
		t.Fatalf("%d askers of g after both removals", n)
	}
	if n := len(b.txnAskers.of("other")); n != 1 {
		t.Fatalf("%d askers of other, want 1", n)
	}
}
