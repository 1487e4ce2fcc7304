package jepsen

import "fmt"

// Event types of the transactions workload (workload_txn.go).
const (
	// EvTxn is one SendInTransaction: outcome of the half send (ok,
	// failed, unknown), kind the local transaction's outcome (commit,
	// rollback, unknown), queue the real queue, error the send's or the
	// END_TRANSACTION's failure.
	EvTxn = "txn"
	// EvTxnCheck is a check-back the listener answered: outcome commit or
	// rollback.
	EvTxnCheck = "txn-check"
)

// txnFinalCommit is the decision a transactional payload t<i>-<seq>
// names: by seq%5, 0 and 1 commit, 2 rolls back, 3 is unknown and then
// commit on check-back, 4 unknown and then rollback.
func txnFinalCommit(seq int64) bool {
	m := seq % 5
	return m == 0 || m == 1 || m == 3
}

// TxnResult is the transactions checker's figures (all 0 without the
// workload).
type TxnResult struct {
	Attempted, HalfOK int // transactions tried; half message stored and local transaction run
	Committed         int // of those, decided commit (the consumer group must get them)
	RolledBack        int // decided rollback, or local transaction never run
	CheckBacks        int // check-backs answered
	// Lost: committed and in no replica's final read.
	Lost int
	// RolledBackDelivered: not committed, yet delivered or stored.
	RolledBackDelivered int
	// Duplicates: a transactional value stored at more than one queue
	// offset; a transaction is committed at most once whatever the retries
	// of its half message, so every one is unjustified.
	Duplicates int
	// Misplaced: a committed transaction stored in another broker group
	// or queue than the one its half message's answer named (it must be
	// ended on the group that stored its half message, and every copy of
	// a half message names one queue).
	Misplaced  int
	LostValues []string // the first few lost or wrongly delivered
}

// checkTxn checks the transactions: every committed one's message stored
// (and so, by the gaps checker, delivered), no other one ever stored or
// delivered, none stored twice. final is the merged final log, delivered
// the values the consumer group got.
func checkTxn(evs []Event, final map[pos]string, delivered map[string]bool, haveFinal bool) TxnResult {
	var t TxnResult
	committed := map[string]bool{}
	txns := map[string]bool{}
	half := map[string]pos{} // the queue an acknowledged half message named
	for _, e := range evs {
		switch e.Type {
		case EvTxn:
			t.Attempted++
			txns[e.Value] = true
			if e.Outcome == OK {
				t.HalfOK++
				half[e.Value] = pos{g: e.Group, q: e.Queue}
				if txnFinalCommit(e.Seq) {
					committed[e.Value] = true
				}
			}
		case EvTxnCheck:
			t.CheckBacks++
		}
	}
	t.Committed = len(committed)
	t.RolledBack = t.Attempted - t.Committed
	stored := map[string]int{}
	misplaced := map[string]bool{}
	for p, v := range final {
		if txns[v] {
			stored[v]++
			if h, ok := half[v]; ok && (h.g != p.g || h.q != p.q) {
				misplaced[v] = true
			}
		}
	}
	note := func(what, v string) {
		if len(t.LostValues) < 20 {
			t.LostValues = append(t.LostValues, what+" "+v)
		}
	}
	for v := range txns {
		switch {
		case committed[v] && haveFinal && stored[v] == 0:
			t.Lost++
			note("lost", v)
		case !committed[v] && (stored[v] > 0 || delivered[v]):
			t.RolledBackDelivered++
			note("rolled-back-delivered", v)
		}
		if stored[v] > 1 {
			t.Duplicates++
		}
		if misplaced[v] {
			t.Misplaced++
			note("misplaced", v)
		}
	}
	return t
}

// txnSummary is the transactions' line of the summary ("" without them).
func (t TxnResult) summary() string {
	if t.Attempted == 0 {
		return ""
	}
	return fmt.Sprintf("txn      attempted=%d half-ok=%d committed=%d rolled-back=%d check-backs=%d txn-lost=%d txn-rolledback-delivered=%d txn-duplicates=%d txn-misplaced=%d\n",
		t.Attempted, t.HalfOK, t.Committed, t.RolledBack, t.CheckBacks, t.Lost, t.RolledBackDelivered, t.Duplicates, t.Misplaced)
}

// txnMustDeliver lists the transactional values the consumer group must
// get: the local transaction ran and the payload's decision is commit.
func txnMustDeliver(evs []Event) []string {
	var out []string
	for _, e := range evs {
		if e.Type == EvTxn && e.Outcome == OK && txnFinalCommit(e.Seq) {
			out = append(out, e.Value)
		}
	}
	return out
}
