package client

// Message traces as RocketMQ's clients write them (mqadmin
// queryMsgTraceById): a client with tracing on sends, to a trace topic
// (RMQ_SYS_TRACE_TOPIC unless configured otherwise), messages whose KEYS
// hold the traced message's id and whose body is a list of events, each
// ended by \x02, its fields separated by \x01 (Java TraceDataEncoder):
//
//	Pub            type time region group topic msgId tags keys storeHost
//	               bodyLength costMs msgType [offsetMsgId] success [clientHost]
//	SubBefore      type time region group requestId msgId retryTimes keys
//	SubAfter       type requestId msgId costMs success keys [contextCode
//	               [time group]]
//	EndTransaction type time region group topic msgId tags keys storeHost
//	               msgType transactionId transactionState fromCheck
//
// ledgermq's client writes them with WithTrace (trace.go); the look-up
// reads any client's, through the KEYS index (QUERY_MESSAGE, 12).

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DefaultTraceTopic is the topic RocketMQ's clients write traces to.
const DefaultTraceTopic = "RMQ_SYS_TRACE_TOPIC"

// TraceEvent is one event of a message's trace.
type TraceEvent struct {
	// Type is Pub (sent), SubBefore (delivered to a consumer), SubAfter
	// (its outcome) or EndTransaction.
	Type string `json:"type"`
	// Group is the producer or consumer group.
	Group string `json:"group"`
	// ClientHost is the host of the client that wrote the event.
	ClientHost string    `json:"clientHost"`
	Time       time.Time `json:"time,omitzero"`
	CostMs     int64     `json:"costMs"`
	// Status is success or failed (Pub, SubAfter).
	Status      string `json:"status,omitempty"`
	Topic       string `json:"topic,omitempty"`
	Tags        string `json:"tags,omitempty"`
	Keys        string `json:"keys,omitempty"`
	StoreHost   string `json:"storeHost,omitempty"`
	OffsetMsgID string `json:"offsetMsgId,omitempty"`
	RetryTimes  int64  `json:"retryTimes,omitempty"`
}

// MessageTrace returns the trace events of message msgID found in
// traceTopic (DefaultTraceTopic when empty), oldest first.
// ErrNoSuchTopic when there is no trace topic; ErrNoSuchMessage when it
// holds no event of the message.
func (a *Admin) MessageTrace(ctx context.Context, traceTopic, msgID string) ([]TraceEvent, error) {
	if traceTopic == "" {
		traceTopic = DefaultTraceTopic
	}
	msgs, err := a.queryIndex(ctx, traceTopic, msgID, DefaultQueryMax, time.Time{}, time.Time{}, false)
	if err != nil {
		return nil, err
	}
	var out []TraceEvent
	for _, m := range msgs {
		for _, ev := range decodeTraceData(string(m.Body), msgID) {
			if m.BornHost.IsValid() {
				ev.ClientHost = m.BornHost.Addr().String()
			}
			out = append(out, ev)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s has no trace of %s", ErrNoSuchMessage, traceTopic, msgID)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

// decodeTraceData returns the events of data about msgID (all when msgID
// is ""); an event it cannot read is left out.
func decodeTraceData(data, msgID string) []TraceEvent {
	var out []TraceEvent
	for _, rec := range strings.Split(data, "\x02") {
		f := strings.Split(rec, "\x01")
		ev, id, ok := decodeTraceEvent(f)
		if ok && (msgID == "" || id == msgID) {
			out = append(out, ev)
		}
	}
	return out
}

// decodeTraceEvent reads one event's fields; it returns the event, the
// id of the message it is about, and whether it could.
func decodeTraceEvent(f []string) (TraceEvent, string, bool) {
	num := func(i int) (int64, bool) {
		v, err := strconv.ParseInt(f[i], 10, 64)
		return v, err == nil
	}
	status := func(s string) string {
		if b, _ := strconv.ParseBool(s); b {
			return "success"
		}
		return "failed"
	}
	ev := TraceEvent{Type: f[0]}
	switch {
	case f[0] == "Pub" && len(f) >= 13:
		ts, ok1 := num(1)
		cost, ok2 := num(10)
		if !ok1 || !ok2 {
			return ev, "", false
		}
		ev.Time, ev.Group, ev.Topic, ev.Tags, ev.Keys, ev.StoreHost, ev.CostMs = fromMS(ts), f[3], f[4], f[6], f[7], f[8], cost
		if len(f) == 13 {
			ev.Status = status(f[12])
		} else {
			ev.OffsetMsgID, ev.Status = f[12], status(f[13])
		}
		return ev, f[5], true
	case f[0] == "SubBefore" && len(f) >= 8:
		ts, ok1 := num(1)
		retries, ok2 := num(6)
		if !ok1 || !ok2 {
			return ev, "", false
		}
		ev.Time, ev.Group, ev.RetryTimes, ev.Keys = fromMS(ts), f[3], retries, f[7]
		return ev, f[5], true
	case f[0] == "SubAfter" && len(f) >= 6:
		cost, ok := num(3)
		if !ok {
			return ev, "", false
		}
		ev.CostMs, ev.Status, ev.Keys = cost, status(f[4]), f[5]
		if len(f) >= 9 {
			if ts, ok := num(7); ok {
				ev.Time = fromMS(ts)
			}
			ev.Group = f[8]
		}
		return ev, f[2], true
	case f[0] == "EndTransaction" && len(f) >= 13:
		ts, ok := num(1)
		if !ok {
			return ev, "", false
		}
		ev.Time, ev.Group, ev.Topic, ev.Tags, ev.Keys, ev.StoreHost, ev.Status = fromMS(ts), f[3], f[4], f[6], f[7], f[8], f[11]
		return ev, f[5], true
	}
	return ev, "", false
}
