package jepsen

import (
	"fmt"
	"slices"
	"strings"
)

// Kinds of the POP workload's events (Type EvPop, workload_pop.go).
const (
	PopStart  = "start"  // a consumer started (the workload ran)
	PopRecv   = "recv"   // a receive: ok with a message, or failed|unknown without one
	PopAck    = "ack"    // an AckMessage entry: outcome ok|failed|unknown
	PopChange = "change" // a ChangeInvisibleDuration: outcome ok|failed|unknown
)

// PopResult is the POP checker's figures (all 0 without the workload).
type PopResult struct {
	Ran bool `json:"ran,omitempty"`
	// Received: distinct values delivered to the POP group; Deliveries
	// every delivery; Redelivered those with a delivery attempt above 1.
	Received, Deliveries, Redelivered int
	// Acks by outcome; Changes of the invisible duration answered OK.
	Acked, AckFailed, AckUnknown, Changes int
	// ReceiveFailures: receives answered with an error or not at all.
	ReceiveFailures int
	// AckLost: deliveries of a message (a queue offset) whose receive
	// began after an ack of it had been answered OK: the broker forgot an
	// acknowledged ack (a failover lost it).
	AckLost int
	// AttemptRegressions: a delivery whose receive began after another
	// delivery of the same message had been answered, with a lower
	// attempt; AttemptRepeats the same attempt (reported, not judged).
	AttemptRegressions, AttemptRepeats int
	// NeverReceived: acknowledged sends (and committed transactions)
	// the POP group never received.
	NeverReceived int
	Values        []string // the first few of each finding
}

// popDelivery is one delivery of a message to the POP group.
type popDelivery struct {
	invoke, t float64
	attempt   int
}

// checkPop checks the POP workload's events of evs: (1) every value of
// mustReceive (acknowledged sends, committed transactions) was received
// by the POP group; (2) no message is delivered by a receive that began
// after an ack of it was answered OK (a receive that began before, or
// after an ack that failed or whose outcome is unknown, may deliver it
// again); (3) a message's delivery attempts do not go down from one
// delivery to one that began after it was answered.
func checkPop(evs []Event, mustReceive []string) PopResult {
	var r PopResult
	received := map[string]bool{}
	deliveries := map[pos][]popDelivery{}
	ackedAt := map[pos]float64{} // the earliest answer of an ack answered OK
	note := func(what string, args ...any) {
		if len(r.Values) < 20 {
			r.Values = append(r.Values, fmt.Sprintf(what, args...))
		}
	}
	for _, e := range evs {
		if e.Type != EvPop {
			continue
		}
		r.Ran = true
		p := pos{e.Group, e.Queue, e.Offset}
		switch e.Kind {
		case PopRecv:
			if e.Outcome != OK || e.Value == "" {
				r.ReceiveFailures++
				continue
			}
			received[e.Value] = true
			r.Deliveries++
			if e.Attempts > 1 {
				r.Redelivered++
			}
			deliveries[p] = append(deliveries[p], popDelivery{invoke: e.Invoke, t: e.T, attempt: e.Attempts})
		case PopAck:
			switch e.Outcome {
			case OK:
				r.Acked++
				if at, ok := ackedAt[p]; !ok || e.T < at {
					ackedAt[p] = e.T
				}
			case Failed:
				r.AckFailed++
			default:
				r.AckUnknown++
			}
		case PopChange:
			if e.Outcome == OK {
				r.Changes++
			}
		}
	}
	if !r.Ran {
		return r
	}
	r.Received = len(received)
	for _, p := range slices.SortedFunc(mapKeys(deliveries), cmpPos) {
		ds := deliveries[p]
		at, acked := ackedAt[p]
		for _, d := range ds {
			if acked && d.invoke > at {
				r.AckLost++
				note("ack-lost %s attempt %d received at %.0fms, acked at %.0fms", posText(p), d.attempt, d.t, at)
			}
			for _, o := range ds {
				switch {
				case d.invoke <= o.t:
				case d.attempt < o.attempt:
					r.AttemptRegressions++
					note("attempt-regression %s attempt %d after %d", posText(p), d.attempt, o.attempt)
				case d.attempt == o.attempt:
					r.AttemptRepeats++
				}
			}
		}
	}
	for _, v := range mustReceive {
		if !received[v] {
			r.NeverReceived++
			note("never-received %s", v)
		}
	}
	return r
}

// posText names a queue offset.
func posText(p pos) string {
	if p.g != "" {
		return fmt.Sprintf("%s/%d/%d", p.g, p.q, p.off)
	}
	return fmt.Sprintf("%d/%d", p.q, p.off)
}

// popMustReceive lists the values the POP group must receive: every
// acknowledged send and committed transaction of evs.
func popMustReceive(evs []Event) []string {
	var out []string
	for _, e := range evs {
		if e.Type == EvSend && e.Outcome == OK {
			out = append(out, e.Value)
		}
	}
	return append(out, txnMustDeliver(evs)...)
}

// problems are the POP checker's reasons for a FAIL verdict.
func (p PopResult) problems(add func(int, string)) {
	add(p.NeverReceived, "acknowledged messages never received by the POP group (pop-never-received)")
	add(p.AckLost, "POP deliveries of a message after its ack was answered OK (pop-ack-lost)")
	add(p.AttemptRegressions, "POP deliveries with a lower attempt than an earlier one (pop-attempt-regressions)")
}

// verdict is the verdict line's part ("" without the workload).
func (p PopResult) verdict() string {
	if !p.Ran {
		return ""
	}
	return fmt.Sprintf(" pop(received=%d redelivered=%d ack-lost=%d never-received=%d)", p.Received, p.Redelivered, p.AckLost, p.NeverReceived)
}

// summary is the POP line of the summary ("" without the workload);
// name prefixes it (a group's line).
func (p PopResult) summary(name string) string {
	if !p.Ran {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "pop      %sreceived=%d deliveries=%d redelivered=%d acked=%d ack-failed=%d ack-unknown=%d changed=%d receive-failures=%d\n",
		name, p.Received, p.Deliveries, p.Redelivered, p.Acked, p.AckFailed, p.AckUnknown, p.Changes, p.ReceiveFailures)
	fmt.Fprintf(&b, "pop      %sack-lost=%d attempt-regressions=%d attempt-repeats=%d never-received=%d\n",
		name, p.AckLost, p.AttemptRegressions, p.AttemptRepeats, p.NeverReceived)
	return b.String()
}
