package jepsen

import (
	"slices"
	"strings"
	"testing"
)

// popHist extends a healthy queue history with the POP workload's
// events.
func popHist() *hist {
	h := healthy()
	h.evs = append(h.evs, Event{Type: EvPop, Kind: PopStart, Process: "s0"})
	return h
}

// popRecv is a delivery of v at (q, off) by a receive invoked at invoke
// and answered at t.
func (h *hist) popRecv(v string, q int32, off int64, attempt int, invoke, t float64) *hist {
	h.evs = append(h.evs, Event{Type: EvPop, Kind: PopRecv, Process: "s0", Value: v, Queue: q, Offset: off,
		Attempts: attempt, Invoke: invoke, T: t, Outcome: OK, Receipt: "h"})
	return h
}

// popAck is an ack of the delivery of v at (q, off), invoked at invoke
// and answered at t with outcome.
func (h *hist) popAck(v string, q int32, off int64, attempt int, invoke, t float64, outcome string) *hist {
	h.evs = append(h.evs, Event{Type: EvPop, Kind: PopAck, Process: "s0", Value: v, Queue: q, Offset: off,
		Attempts: attempt, Invoke: invoke, T: t, Outcome: outcome, Receipt: "h"})
	return h
}

// popAll receives every value of healthy() once and acks it, but those
// of unacked.
func popAll(h *hist, unacked ...string) *hist {
	for i, v := range []string{"p0-1", "p0-2", "p0-3", "p0-4"} {
		at := float64(100 + 10*i)
		h.popRecv(v, 0, int64(i), 1, at, at+1)
		if !slices.Contains(unacked, v) {
			h.popAck(v, 0, int64(i), 1, at+2, at+3, OK)
		}
	}
	return h
}

func TestCheckPopHealthyPasses(t *testing.T) {
	h := popAll(popHist(), "p0-2")
	// A message left un-acked comes back with attempt 2, acked then.
	h.popRecv("p0-2", 0, 1, 2, 200, 201).popAck("p0-2", 0, 1, 2, 202, 203, OK)
	r := Check(h.evs, CheckInput{Nodes: three})
	if !r.Valid() || !r.Pop.Ran || r.Pop.Received != 4 || r.Pop.Redelivered != 1 || r.Pop.Acked != 4 {
		t.Fatalf("healthy POP history: %s", r.Summary())
	}
	if !strings.Contains(r.VerdictLine(), " pop(received=4 redelivered=1 ack-lost=0 never-received=0)") {
		t.Fatalf("verdict line %q", r.VerdictLine())
	}
	// Without the workload, nothing is judged or printed.
	r = Check(healthy().evs, CheckInput{Nodes: three})
	if r.Pop.Ran || strings.Contains(r.VerdictLine(), "pop(") || strings.Contains(r.Summary(), "pop ") {
		t.Fatalf("no POP workload: %s", r.Summary())
	}
}

// TestCheckPopNeverReceived: an acknowledged send the POP group never got
// fails the run, even though the push group got it.
func TestCheckPopNeverReceived(t *testing.T) {
	h := popHist()
	for i, v := range []string{"p0-1", "p0-2", "p0-4"} {
		h.popRecv(v, 0, int64(i), 1, 100, 101)
	}
	r := Check(h.evs, CheckInput{Nodes: three})
	if r.Valid() || r.Pop.NeverReceived != 1 || !strings.Contains(strings.Join(r.Pop.Values, " "), "never-received p0-3") {
		t.Fatalf("a message lost to POP: %s", r.Summary())
	}
	// A POP workload that never got anything fails too.
	r = Check(popHist().evs, CheckInput{Nodes: three})
	if r.Valid() || r.Pop.NeverReceived != 4 {
		t.Fatalf("nothing received: %s", r.Summary())
	}
}

// TestCheckPopAckResurrected: a message delivered by a receive that began
// after its ack was answered OK is an ack the broker lost.
func TestCheckPopAckResurrected(t *testing.T) {
	h := popAll(popHist())
	// p0-1 was acked at 103; a receive invoked at 500 gets it again.
	h.popRecv("p0-1", 0, 0, 2, 500, 510)
	r := Check(h.evs, CheckInput{Nodes: three})
	if r.Valid() || r.Pop.AckLost != 1 || !strings.Contains(strings.Join(r.Problems, "; "), "pop-ack-lost") {
		t.Fatalf("an acked message delivered again: %s", r.Summary())
	}
	if !strings.Contains(r.VerdictLine(), "verdict: FAIL ") || !strings.Contains(r.VerdictLine(), " ack-lost=1 ") {
		t.Fatalf("verdict line %q", r.VerdictLine())
	}
}

// TestCheckPopAllowedRedeliveries: what may come back after an ack.
func TestCheckPopAllowedRedeliveries(t *testing.T) {
	h := popAll(popHist(), "p0-2", "p0-3")
	// A redelivery whose receive began before the ack was answered (at
	// 103): the two raced.
	h.popRecv("p0-1", 0, 0, 2, 102.5, 104)
	// An ack that failed (the handle was stale) or whose outcome is
	// unknown: the message may come back.
	h.popRecv("p0-2", 0, 1, 2, 300, 301).popAck("p0-2", 0, 1, 2, 302, 303, Failed).popRecv("p0-2", 0, 1, 3, 400, 401)
	h.popRecv("p0-3", 0, 2, 2, 300, 301).popAck("p0-3", 0, 2, 2, 302, 303, Unknown)
	// The same value stored at a second offset (a retried send) is
	// another message: acked at offset 3, delivered at offset 4.
	h.popRecv("p0-4", 0, 4, 1, 600, 601)
	r := Check(h.evs, CheckInput{Nodes: three})
	if r.Pop.AckLost != 0 || r.Pop.AttemptRegressions != 0 || r.Pop.AckFailed != 1 || r.Pop.AckUnknown != 1 {
		t.Fatalf("allowed redeliveries judged: %s", r.Summary())
	}
	if p := strings.Join(r.Problems, "; "); strings.Contains(p, "pop") {
		t.Fatalf("POP problems in an allowed history: %s", p)
	}
}

// TestCheckPopAttemptRegression: a later delivery with a lower attempt
// fails; one that overlapped the earlier delivery is not ordered.
func TestCheckPopAttemptRegression(t *testing.T) {
	h := popHist()
	for i, v := range []string{"p0-1", "p0-2", "p0-3", "p0-4"} {
		h.popRecv(v, 0, int64(i), 1, 100, 101)
	}
	h.popRecv("p0-1", 0, 0, 3, 200, 201).popRecv("p0-1", 0, 0, 2, 300, 301)
	h.popRecv("p0-2", 0, 1, 3, 200, 250).popRecv("p0-2", 0, 1, 2, 240, 260) // overlapping
	h.popRecv("p0-3", 0, 2, 1, 300, 301)                                    // the same attempt again: reported
	r := Check(h.evs, CheckInput{Nodes: three})
	if r.Valid() || r.Pop.AttemptRegressions != 1 || r.Pop.AttemptRepeats != 1 {
		t.Fatalf("attempt regression: %s", r.Summary())
	}
}

// TestCheckPopPerGroup: with two groups, queue 0 offset 0 of each is
// its own message, and a group's POP findings are its own, prefixed with
// its name.
func TestCheckPopPerGroup(t *testing.T) {
	groups := map[string][]string{"broker-a": {"n0", "n1"}, "broker-b": {"b0", "b1"}}
	in := CheckInput{Nodes: []string{"n0", "n1", "b0", "b1"}, Groups: groups}
	evs := []Event{{Type: EvPop, Kind: PopStart, Process: "s0"}}
	for i, g := range []string{"broker-a", "broker-b"} {
		v := []string{"p0-1", "p0-2"}[i]
		evs = append(evs,
			Event{Type: EvSend, Process: "p0", Value: v, Invoke: 10, T: 11, Outcome: OK, Group: g, Node: groups[g][0], Queue: 0, Offset: 0, Attempts: 1},
			Event{Type: EvRead, Node: groups[g][0], Value: v, Queue: 0, Offset: 0, Group: g},
			Event{Type: EvRead, Node: groups[g][1], Value: v, Queue: 0, Offset: 0, Group: g},
			Event{Type: EvRecv, Value: v, Queue: 0, Offset: 0, Group: g},
			Event{Type: EvPop, Kind: PopRecv, Value: v, Group: g, Queue: 0, Offset: 0, Attempts: 1, Invoke: 100, T: 101, Outcome: OK},
			Event{Type: EvPop, Kind: PopAck, Value: v, Group: g, Queue: 0, Offset: 0, Attempts: 1, Invoke: 102, T: 103, Outcome: OK})
	}
	r := CheckGroups(evs, in, nil)
	if !r.Valid() || r.Pop.Received != 2 || len(r.Groups) != 2 || r.Groups[0].Pop.Received != 1 || r.Groups[1].Pop.Received != 1 {
		t.Fatalf("two groups' POP: %s", r.Summary())
	}
	evs = append(evs, Event{Type: EvPop, Kind: PopRecv, Value: "p0-2", Group: "broker-b", Queue: 0, Offset: 0, Attempts: 2, Invoke: 900, T: 901, Outcome: OK})
	r = CheckGroups(evs, in, nil)
	if r.Valid() || r.Pop.AckLost != 1 || r.Groups[0].Pop.AckLost != 0 || r.Groups[1].Pop.AckLost != 1 ||
		!strings.Contains(strings.Join(r.Problems, "; "), "broker-b: 1 POP deliveries") || !strings.Contains(r.Summary(), "pop      broker-b ") {
		t.Fatalf("an ack lost in broker-b: %v\n%s", r.Problems, r.Summary())
	}
}
