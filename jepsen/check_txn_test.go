package jepsen

import (
	"slices"
	"strings"
	"testing"
)

// txn appends a transaction; an acknowledged half message names queue 1
// (where the tests store the committed ones).
func (h *hist) txn(v string, outcome string) *hist {
	seq, _ := parseValue(v)
	e := Event{Type: EvTxn, Process: "t0", Value: v, Seq: seq, Outcome: outcome, Queue: -1, Offset: -1}
	if outcome == OK {
		e.Queue = 1
	}
	h.evs = append(h.evs, e)
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

// TestCheckTxnMisplaced: a committed transaction must be stored in the
// queue its half message's answer named.
func TestCheckTxnMisplaced(t *testing.T) {
	h := healthy()
	h.txn("t0-1", OK)
	h.recv("t0-1", 2, 0).read(2, []string{"t0-1"}, three...)
	r := Check(h.evs, CheckInput{Nodes: three})
	if r.Valid() || r.Txn.Misplaced != 1 || r.Txn.Lost != 0 || !strings.Contains(r.Summary(), "txn-misplaced=1") {
		t.Fatalf("a transaction committed into another queue: %s", r.Summary())
	}
}

// TestCheckGroupsTxn: transactions in a run of two groups. Each is its
// half message's group's (t0-1 broker-a, t0-5 broker-b, both committed
// there; t0-3's half send unknown, never run): per-group figures and a
// passing verdict. A committed transaction stored in the other group
// than its half message is misplaced, in the topic and in that group (and
// lost in the group that stored its half message); a
// transaction never run but stored in broker-b is that group's
// rolled-back-delivered.
func TestCheckGroupsTxn(t *testing.T) {
	groups := map[string][]string{"broker-a": {"n0", "n1"}, "broker-b": {"b0", "b1"}}
	in := CheckInput{Nodes: []string{"n0", "n1", "b0", "b1"}, Groups: groups}
	txn := func(v, g, outcome string) Event {
		seq, _ := parseValue(v)
		e := Event{Type: EvTxn, Process: "t0", Value: v, Seq: seq, Outcome: outcome, Queue: -1, Offset: -1}
		if outcome == OK {
			e.Group, e.Queue = g, 0
		}
		return e
	}
	stored := func(v, g string, off int64) []Event {
		nodes := groups[g]
		return []Event{{Type: EvRead, Node: nodes[0], Value: v, Queue: 0, Offset: off, Group: g},
			{Type: EvRead, Node: nodes[1], Value: v, Queue: 0, Offset: off, Group: g},
			{Type: EvRecv, Value: v, Queue: 0, Offset: off, Group: g}}
	}
	base := []Event{
		{Type: EvSend, Process: "p0", Value: "p0-1", Outcome: OK, Group: "broker-a", Node: "n0", Queue: 0, Offset: 0, Attempts: 1},
		{Type: EvSend, Process: "p0", Value: "p0-2", Outcome: OK, Group: "broker-b", Node: "b0", Queue: 0, Offset: 0, Attempts: 1},
		txn("t0-1", "broker-a", OK), txn("t0-5", "broker-b", OK), txn("t0-3", "", Unknown),
		{Type: EvTxnCheck, Value: "t0-3", Seq: 3, Outcome: "rollback", Group: "broker-a", Queue: -1, Offset: -1},
	}
	base = slices.Concat(base, stored("p0-1", "broker-a", 0), stored("p0-2", "broker-b", 0),
		stored("t0-1", "broker-a", 1), stored("t0-5", "broker-b", 1))
	r := CheckGroups(base, in, nil)
	if !r.Valid() || r.Txn.Committed != 2 || r.Txn.CheckBacks != 1 {
		t.Fatalf("transactions in two groups: %s", r.Summary())
	}
	a, b := r.Groups[0], r.Groups[1]
	if a.Txn.HalfOK != 1 || a.Txn.Committed != 1 || a.Txn.CheckBacks != 1 || b.Txn.HalfOK != 1 || b.Txn.CheckBacks != 0 {
		t.Fatalf("per group: broker-a %+v, broker-b %+v", a.Txn, b.Txn)
	}
	if s := r.Summary(); !strings.Contains(s, "group    broker-b txn half-ok=1 committed=1 ") {
		t.Fatalf("summary lacks broker-b's transactions:\n%s", s)
	}

	// t0-6 (commit) ended on broker-a, stored in broker-b.
	misplaced := slices.Concat(base, []Event{txn("t0-6", "broker-a", OK)}, stored("t0-6", "broker-b", 2))
	r = CheckGroups(misplaced, in, nil)
	if r.Valid() || r.Txn.Misplaced != 1 || r.Txn.Lost != 0 || r.Groups[1].Txn.Misplaced != 1 || r.Groups[0].Txn.Lost != 1 {
		t.Fatalf("a transaction stored in the other group: %s", r.Summary())
	}
	// t0-3 never ran, yet broker-b holds it.
	stray := slices.Concat(base, stored("t0-3", "broker-b", 2))
	r = CheckGroups(stray, in, nil)
	if r.Valid() || r.Txn.RolledBackDelivered != 1 || r.Groups[1].Txn.RolledBackDelivered != 1 || r.Groups[0].Txn.RolledBackDelivered != 0 {
		t.Fatalf("a transaction never run, stored in broker-b: %s", r.Summary())
	}
}
