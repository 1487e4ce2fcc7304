package dledger

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// planLog opens a raft log holding entries 1..10: terms 1 (1..5) and 2
// (6..10).
func planLog(t *testing.T) *raftLog {
	t.Helper()
	l, err := openRaftLog(t.TempDir(), hclog.NewNullLogger(), 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	var logs []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		term := uint64(1)
		if i > 5 {
			term = 2
		}
		logs = append(logs, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: []byte{byte(i)}})
	}
	if err := l.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	return l
}

func bounds(t *testing.T, l *raftLog) (uint64, uint64) {
	t.Helper()
	first, err := l.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	last, err := l.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	return first, last
}

// After a snapshot install, raft deletes the whole log (DeleteRange from
// 0). When the log continues the snapshot, the entries after it stay, so
// raft's in-memory last index still names entries the log holds.
func TestSnapshotInstallKeepsTheLogThatContinuesIt(t *testing.T) {
	l := planLog(t)
	if term, ok := l.termAt(7); !ok || term != 2 {
		t.Fatalf("termAt(7) = %d, %v", term, ok)
	}
	l.plan.Store(&installPlan{index: 7, retain: true})
	if err := l.DeleteRange(0, 10); err != nil {
		t.Fatal(err)
	}
	if first, last := bounds(t, l); first != 8 || last != 10 {
		t.Fatalf("log is %d..%d, want 8..10", first, last)
	}
	for i := uint64(8); i <= 10; i++ {
		var e raft.Log
		if err := l.GetLog(i, &e); err != nil || e.Data[0] != byte(i) {
			t.Fatalf("entry %d: %v %v", i, e, err)
		}
	}
	// The plan is used once: raft's next full deletion deletes all.
	if err := l.DeleteRange(0, 10); err != nil {
		t.Fatal(err)
	}
	if _, last := bounds(t, l); last != 0 {
		t.Fatalf("last index %d after a full deletion", last)
	}
}

// When the log does not continue the snapshot, it is deleted whole and the
// plan's afterFull runs (the node then restarts to let raft read the
// emptied log). Other deletions are raft-wal's own.
func TestSnapshotInstallDeletesALogThatDoesNotContinueIt(t *testing.T) {
	l := planLog(t)
	ran := false
	l.plan.Store(&installPlan{index: 7, afterFull: func() { ran = true }})
	if err := l.DeleteRange(0, 10); err != nil {
		t.Fatal(err)
	}
	if _, last := bounds(t, l); last != 0 || !ran {
		t.Fatalf("last index %d, afterFull ran %v", last, ran)
	}
	// An emptied log takes the next entries at any index (after the
	// snapshot), as raft appends them after a restart.
	if err := l.StoreLogs([]*raft.Log{{Index: 8, Term: 3, Type: raft.LogCommand}}); err != nil {
		t.Fatal(err)
	}
	if first, last := bounds(t, l); first != 8 || last != 8 {
		t.Fatalf("log is %d..%d after the append, want 8..8", first, last)
	}

	l2 := planLog(t)
	if err := l2.DeleteRange(9, 10); err != nil { // a conflicting suffix
		t.Fatal(err)
	}
	if err := l2.DeleteRange(1, 3); err != nil { // compaction
		t.Fatal(err)
	}
	if first, last := bounds(t, l2); first != 4 || last != 8 {
		t.Fatalf("log is %d..%d, want 4..8", first, last)
	}
}
