package jepsen

import (
	"slices"
	"testing"
)

func (h *hist) txn(v string, outcome string) *hist {
	seq, _ := parseValue(v)
	h.evs = append(h.evs, Event{Type: EvTxn, Process: "t0", Value: v, Seq: seq, Outcome: outcome, Queue: -1, Offset: -1})
	return h
}

// txnHealthy: t0-1 (commit), t0-2 (rollback), t0-3 (unknown, then
// commit on check-back), t0-4 (unknown, then rollback), t0-5 (commit) all
// with their half stored; t0-6's half send failed (no local transaction).
// The committed ones are stored in queue 1 and delivered.
func txnHealthy() *hist {
	h := healthy()
	for _, v := range []string{"t0-1", "t0-2", "t0-3", "t0-4", "t0-5"} {
		h.txn(v, OK)
	}
	h.txn("t0-6", Failed)
	committed := []string{"t0-1", "t0-3", "t0-5"}
	for i, v := range committed {
		h.recv(v, 1, int64(i))
	}
	return h.read(1, committed, three...)
}

func TestCheckTxnHealthyPasses(t *testing.T) {
	r := Check(txnHealthy().evs, CheckInput{Nodes: three})
	if !r.Valid() || r.Txn.Attempted != 6 || r.Txn.Committed != 3 || r.Txn.RolledBack != 3 || r.Unexpected != 0 {
		t.Fatalf("healthy transactions: %s %+v", r.Summary(), r.Txn)
	}
	if got := txnMustDeliver(txnHealthy().evs); !slices.Equal(got, []string{"t0-1", "t0-3", "t0-5"}) {
		t.Fatalf("must deliver %v", got)
	}
}

func TestCheckTxnLostCommit(t *testing.T) {
	h := healthy()
	h.txn("t0-1", OK).txn("t0-5", OK)
	h.recv("t0-1", 1, 0).read(1, []string{"t0-1"}, three...) // t0-5 committed, never stored
	r := Check(h.evs, CheckInput{Nodes: three})
	if r.Valid() || r.Txn.Lost != 1 || r.Lost != 1 {
		t.Fatalf("a lost commit: %s", r.Summary())
	}
}

func TestCheckTxnRolledBackDelivered(t *testing.T) {
	for _, tc := range []struct {
		name, v, outcome string
	}{
		{"rollback", "t0-2", OK},
		{"unknown then rollback", "t0-4", OK},
		{"local transaction never ran", "t0-1", Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := healthy()
			h.txn(tc.v, tc.outcome)
			h.recv(tc.v, 1, 0).read(1, []string{tc.v}, three...)
			r := Check(h.evs, CheckInput{Nodes: three})
			if r.Valid() || r.Txn.RolledBackDelivered != 1 || r.Unexpected != 1 {
				t.Fatalf("%s delivered: %s", tc.v, r.Summary())
			}
		})
	}
}

func TestCheckTxnDuplicate(t *testing.T) {
	h := healthy()
	h.txn("t0-1", OK)
	h.recv("t0-1", 1, 0).recv("t0-1", 1, 1).read(1, []string{"t0-1", "t0-1"}, three...)
	r := Check(h.evs, CheckInput{Nodes: three})
	if r.Valid() || r.Txn.Duplicates != 1 || r.UnjustifiedDuplicates != 1 {
		t.Fatalf("a transaction stored twice: %s", r.Summary())
	}
}
