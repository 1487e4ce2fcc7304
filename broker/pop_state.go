package broker

import (
	"time"
)

// PopTopicState is a consumer group's POP state in one topic, summed over
// the topic's queues (the operator's view: metrics, admin).
type PopTopicState struct {
	Group, Topic string
	// Inflight is how many messages are handed out and not acknowledged;
	// Due how many of them have their invisible time over (waiting for a
	// receive to deliver them again, or for the DLQ).
	Inflight, Due int
	// OldestUntil is the earliest invisible-until of them all (zero when
	// none is in flight).
	OldestUntil time.Time
}

// PopState is every group's POP state per topic in this node's replica,
// sorted by group and topic.
func (b *Broker) PopState() []PopTopicState {
	var out []PopTopicState
	for _, q := range b.group.Metadata().PopStats(b.nowMs(), nil) {
		if n := len(out); n == 0 || out[n-1].Group != q.Group || out[n-1].Topic != q.Topic {
			out = append(out, PopTopicState{Group: q.Group, Topic: q.Topic})
		}
		s := &out[len(out)-1]
		s.Inflight += q.Inflight
		s.Due += q.Due
		if u := q.OldestUntil; u > 0 && (s.OldestUntil.IsZero() || u < s.OldestUntil.UnixMilli()) {
			s.OldestUntil = time.UnixMilli(u)
		}
	}
	return out
}
