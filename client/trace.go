package client

// Message traces written by this client (WithTrace), in the format
// RocketMQ's clients write and admin_trace.go reads: a producer writes a
// Pub event for each message it sent, a push consumer a SubBefore and a
// SubAfter for each message it handled. Events are batched (up to
// traceBatch of them, or traceFlushInterval) into messages of the trace
// topic whose KEYS are the traced messages' ids, sent by an inner producer
// of group traceGroup. Tracing never holds a send or a handler up: when
// traceQueue events wait already, more are dropped and counted.

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	traceGroup         = "_INNER_TRACE_PRODUCER"
	traceRegion        = "DefaultRegion"
	traceBatch         = 100
	traceFlushInterval = 200 * time.Millisecond
	traceQueue         = 4096
)

// WithTrace makes a producer or push consumer write message traces to
// topic (DefaultTraceTopic when ""), which the broker group must have
// (trace_topic_enable); `ledgermq admin msg trace` and Admin.MessageTrace
// read them.
func WithTrace(topic string) Option {
	return func(o *options) {
		if topic == "" {
			topic = DefaultTraceTopic
		}
		o.traceTopic = topic
	}
}

// traceEvent is one encoded event and the id of the message it is about.
type traceEvent struct {
	msgID, keys, record string
}

// tracer batches events and sends them. Its goroutine is stopped, after a
// last flush, by close.
type tracer struct {
	topic   string
	p       *Producer
	events  chan traceEvent
	dropped atomic.Int64
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// newTracer starts the tracer of a client with options o.
func newTracer(o options) (*tracer, error) {
	inner := o
	inner.traceTopic, inner.group, inner.onRequest, inner.selector = "", traceGroup, nil, nil
	p, err := NewProducer(func(po *options) { *po = inner })
	if err != nil {
		return nil, err
	}
	t := &tracer{topic: o.traceTopic, p: p, events: make(chan traceEvent, traceQueue), stop: make(chan struct{}), done: make(chan struct{})}
	go t.loop()
	return t, nil
}

// add queues an event, or drops it when the queue is full.
func (t *tracer) add(e traceEvent) {
	select {
	case t.events <- e:
	default:
		t.dropped.Add(1)
	}
}

func (t *tracer) loop() {
	defer close(t.done)
	tick := time.NewTicker(traceFlushInterval)
	defer tick.Stop()
	var batch []traceEvent
	for {
		select {
		case e := <-t.events:
			if batch = append(batch, e); len(batch) >= traceBatch {
				t.send(batch)
				batch = nil
			}
		case <-tick.C:
			t.send(batch)
			batch = nil
		case <-t.stop:
			for drained := false; !drained; {
				select {
				case e := <-t.events:
					batch = append(batch, e)
				default:
					drained = true
				}
			}
			t.send(batch)
			return
		}
	}
}

// send writes a batch as one trace message, best effort.
func (t *tracer) send(batch []traceEvent) {
	if len(batch) == 0 {
		return
	}
	var body strings.Builder
	var keys []string
	seen := map[string]bool{}
	for _, e := range batch {
		body.WriteString(e.record)
		for _, k := range append([]string{e.msgID}, strings.Fields(e.keys)...) {
			if k != "" && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*brokerCallTimeout)
	defer cancel()
	if _, err := t.p.Send(ctx, &Message{Topic: t.topic, Keys: keys, Body: []byte(body.String())}); err != nil {
		t.p.opts.logger.Debug("trace not written", "topic", t.topic, "events", len(batch), "error", err)
	}
}

// close flushes what is queued, stops the goroutine and the producer.
func (t *tracer) close() {
	t.once.Do(func() {
		close(t.stop)
		<-t.done
		_ = t.p.Close()
	})
}

// traceRecordOf joins fields as one event: \x01 between, \x02 at the end.
func traceRecordOf(fields ...string) string {
	return strings.Join(fields, "\x01") + "\x02"
}

// pubEvents are the Pub events of a send: one per message.
func pubEvents(group string, out *outgoing, res SendResult, err error, cost time.Duration, begin time.Time) []traceEvent {
	ok := err == nil
	events := make([]traceEvent, 0, len(out.ids))
	for i, id := range out.ids {
		offID := ""
		if i < len(res.OffsetMsgIDs) {
			offID = res.OffsetMsgIDs[i]
		}
		tags, keys := "", ""
		if out.msg != nil && !out.batch {
			tags, keys = out.msg.Tag, strings.Join(out.msg.Keys, " ")
		}
		events = append(events, traceEvent{msgID: id, keys: keys, record: traceRecordOf("Pub",
			strconv.FormatInt(begin.UnixMilli(), 10), traceRegion, group, out.topic, id, tags, keys, res.Addr,
			strconv.Itoa(len(out.body)), strconv.FormatInt(cost.Milliseconds(), 10), "0", offID, strconv.FormatBool(ok),
			localIP().String())})
	}
	return events
}

// subEvents are the SubBefore and SubAfter events of handling m.
func subEvents(group, requestID string, m *MessageExt, res ConsumeResult, begin time.Time, cost time.Duration) []traceEvent {
	keys := m.Properties["KEYS"]
	before := traceRecordOf("SubBefore", strconv.FormatInt(begin.UnixMilli(), 10), traceRegion, group, requestID, m.MsgID,
		strconv.Itoa(int(m.ReconsumeTimes)), keys, localIP().String())
	after := traceRecordOf("SubAfter", requestID, m.MsgID, strconv.FormatInt(cost.Milliseconds(), 10),
		strconv.FormatBool(res == ConsumeSuccess), keys, "0", strconv.FormatInt(begin.Add(cost).UnixMilli(), 10), group)
	return []traceEvent{{msgID: m.MsgID, keys: keys, record: before}, {msgID: m.MsgID, keys: keys, record: after}}
}
