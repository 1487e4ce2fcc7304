package metadata

import (
	"testing"
)

// TestPopChangesApplyConditionally: a move applies only from the position
// the leader saw, a new receipt only at an offset its change moved past, a
// replacement only over the epoch before it, a delete only of its epoch;
// the state survives a snapshot round trip and goes with its topic.
func TestPopChangesApplyConditionally(t *testing.T) {
	s := New()
	idx := uint64(0)
	apply := func(cs ...PopChange) {
		t.Helper()
		idx++
		op := Op{Kind: OpPop, Pop: cs}
		b, err := EncodeOp(op)
		if err != nil {
			t.Fatal(err)
		}
		op, err = DecodeOp(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Apply(idx, op); err != nil {
			t.Fatal(err)
		}
	}
	g, tp := "G", "T"
	apply(PopChange{Group: g, Topic: tp, QueueID: 1, Move: true, From: 0, To: 3,
		Put: []PopReceipt{{Offset: 0, Until: 100, Attempt: 1, Epoch: 1}, {Offset: 2, Until: 100, Attempt: 1, Epoch: 1}, {Offset: 5, Until: 1, Attempt: 1, Epoch: 1}}})
	if pos, ok := s.PopPosition(g, tp, 1); !ok || pos != 3 || s.PopInflight(g, tp, 1) != 2 {
		t.Fatalf("position %d %v, %d in flight", pos, ok, s.PopInflight(g, tp, 1))
	}
	// A move from a stale position is skipped, with its receipts.
	apply(PopChange{Group: g, Topic: tp, QueueID: 1, Move: true, From: 0, To: 4, Put: []PopReceipt{{Offset: 3, Until: 1, Attempt: 1, Epoch: 1}}})
	if pos, _ := s.PopPosition(g, tp, 1); pos != 3 || s.PopInflight(g, tp, 1) != 2 {
		t.Fatalf("a stale move applied: position %d", pos)
	}
	// Redelivery of 0 (epoch 2), a stale one (epoch 2 again) skipped; a
	// stale delete skipped, the current one applied.
	apply(PopChange{Group: g, Topic: tp, QueueID: 1, Put: []PopReceipt{{Offset: 0, Until: 200, Attempt: 2, Epoch: 2}}})
	apply(PopChange{Group: g, Topic: tp, QueueID: 1, Put: []PopReceipt{{Offset: 0, Until: 300, Attempt: 1, Epoch: 2}}},
		PopChange{Group: g, Topic: tp, QueueID: 1, Del: []PopDel{{Offset: 2, Epoch: 7}}})
	if r, _ := s.PopReceipt(g, tp, 1, 0); r.Until != 200 || r.Attempt != 2 {
		t.Fatalf("receipt %+v", r)
	}
	exp, next := s.PopExpired(g, tp, 1, 150, 10)
	if len(exp) != 1 || exp[0].Offset != 2 || next != 200 {
		t.Fatalf("expired %+v next %d", exp, next)
	}
	if st := s.PopStats(150, nil); len(st) != 1 || st[0].Inflight != 2 || st[0].Due != 1 || st[0].OldestUntil != 100 || st[0].Position != 3 {
		t.Fatalf("stats %+v", st)
	}
	if st := s.PopStats(150, func(group, _ string) bool { return group != g }); len(st) != 0 {
		t.Fatalf("stats of other groups %+v", st)
	}
	if due := s.PopDue(g, tp, 1, 150, 1, 10); len(due) != 1 || due[0].Offset != 2 {
		t.Fatalf("due %+v", due)
	}
	if due := s.PopDue(g, tp, 1, 250, 2, 10); len(due) != 1 || due[0].Offset != 0 {
		t.Fatalf("due at attempt 2 %+v", due)
	}
	if due := s.PopDue(g, tp, 1, 250, 1, 1); len(due) != 1 || due[0].Offset != 0 {
		t.Fatalf("due, one at most %+v", due)
	}
	apply(PopChange{Group: g, Topic: tp, QueueID: 1, Del: []PopDel{{Offset: 2, Epoch: 1}}})
	if _, ok := s.PopReceipt(g, tp, 1, 2); ok {
		t.Fatal("acked receipt kept")
	}
	raw, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again := New()
	if err := again.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	if r, ok := again.PopReceipt(g, tp, 1, 0); !ok || r.Epoch != 2 {
		t.Fatalf("after a round trip: %+v %v", r, ok)
	}
	if pos, _ := again.PopPosition(g, tp, 1); pos != 3 {
		t.Fatalf("position after a round trip %d", pos)
	}
	idx++
	if _, err := again.Apply(idx+10, Op{Kind: OpDeleteTopic, Name: tp}); err != nil {
		t.Fatal(err)
	}
	if _, ok := again.PopPosition(g, tp, 1); ok {
		t.Fatal("pop state outlived its topic")
	}
	if _, err := EncodeOp(Op{Kind: OpPop}); err == nil {
		t.Fatal("an empty pop op encoded")
	}
}
