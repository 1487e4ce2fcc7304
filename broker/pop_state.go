package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
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

// listPopState serves 4014 on the leader: PopState's rows of the consumer
// group and topic asked (either may be absent: all), the first limit of
// them, with the count of all that match.
func (b *Broker) listPopState(_ context.Context, req *remoting.Command) (*remoting.Command, error) {
	h, err := protocol.DecodePopStateHeader(req.ExtFields)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	out := protocol.PopState{Rows: []protocol.PopStateRow{}}
	for _, s := range b.PopState() {
		if (h.Group != "" && s.Group != h.Group) || (h.Topic != "" && s.Topic != h.Topic) {
			continue
		}
		if out.Count++; len(out.Rows) < h.Limit {
			r := protocol.PopStateRow{Group: s.Group, Topic: s.Topic, Inflight: int64(s.Inflight), Due: int64(s.Due)}
			if !s.OldestUntil.IsZero() {
				r.OldestInvisibleUntil = s.OldestUntil.UnixMilli()
			}
			out.Rows = append(out.Rows, r)
		}
	}
	return bodyAnswer(req, out.Encode)
}
