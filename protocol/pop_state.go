package protocol

import (
	"encoding/json"
	"fmt"

	"github.com/ledgermq/ledgermq/remoting"
)

// The POP state of a broker group, for operators: ledgermq's own request
// 4014 (LEDGERMQ_LIST_POP_STATE), answered by the group's leader (a
// follower forwards it) like the pending listings (pending.go).
//
//	code  name                      header          body of the answer
//	----  ------------------------  --------------  ------------------
//	4014  LEDGERMQ_LIST_POP_STATE   PopStateHeader  PopState
//
// PopStateHeader's ext fields are all optional: group and topic keep the
// rows of that consumer group or topic only; limit is how many rows to
// list (1..MaxPendingList; absent: DefaultPendingList). The answer carries
// the count of matching rows and the first limit of them, sorted by group
// and topic.

// PopStateHeader is the header of 4014.
type PopStateHeader struct {
	Group, Topic string
	Limit        int
}

// Request builds the 4014 request.
func (h PopStateHeader) Request() *remoting.Command {
	req := PendingListHeader{Limit: h.Limit}.Request(remoting.ListPopState)
	if h.Group != "" {
		req.ExtFields["group"] = h.Group
	}
	if h.Topic != "" {
		req.ExtFields["topic"] = h.Topic
	}
	return req
}

// DecodePopStateHeader parses the header; a limit that is not an integer
// in 1..MaxPendingList is remoting.ErrBadHeader.
func DecodePopStateHeader(ext map[string]string) (PopStateHeader, error) {
	l, err := DecodePendingListHeader(ext)
	if err != nil {
		return PopStateHeader{}, err
	}
	return PopStateHeader{Group: ext["group"], Topic: ext["topic"], Limit: l.Limit}, nil
}

// PopStateRow is a consumer group's POP state in one topic, summed over
// the topic's queues.
type PopStateRow struct {
	Group string `json:"group"`
	Topic string `json:"topic"`
	// Inflight is how many messages are handed out and not acknowledged;
	// Due how many of them have their invisible time over.
	Inflight int64 `json:"inflight"`
	Due      int64 `json:"due"`
	// OldestInvisibleUntil is the earliest invisible-until of them (Unix
	// ms; 0 when none is in flight).
	OldestInvisibleUntil int64 `json:"oldestInvisibleUntil"`
}

// PopState is the body of a 4014 answer.
type PopState struct {
	// Count is how many (group, topic) rows match; Rows the first limit.
	Count int64         `json:"count"`
	Rows  []PopStateRow `json:"rows"`
}

// Encode is the 4014 answer's body.
func (p PopState) Encode() ([]byte, error) { return json.Marshal(p) }

// DecodePopState parses a 4014 body; JSON of another shape, more than
// MaxPendingList rows, more rows than the count or negative numbers are
// remoting.ErrBadHeader.
func DecodePopState(body []byte) (PopState, error) {
	var p PopState
	if err := json.Unmarshal(body, &p); err != nil {
		return PopState{}, fmt.Errorf("%w: pop state body: %w", remoting.ErrBadHeader, err)
	}
	if len(p.Rows) > MaxPendingList || p.Count < int64(len(p.Rows)) {
		return PopState{}, fmt.Errorf("%w: pop state: %d rows, count %d", remoting.ErrBadHeader, len(p.Rows), p.Count)
	}
	for _, r := range p.Rows {
		if r.Inflight < 0 || r.Due < 0 || r.Due > r.Inflight || r.OldestInvisibleUntil < 0 {
			return PopState{}, fmt.Errorf("%w: pop state of %s in %s: %d in flight, %d due, oldest %d",
				remoting.ErrBadHeader, r.Group, r.Topic, r.Inflight, r.Due, r.OldestInvisibleUntil)
		}
	}
	return p, nil
}
