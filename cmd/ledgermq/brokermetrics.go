package main

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/dledger"
)

// brokerMetrics are a broker node's measured series, under RocketMQ 5's
// exporter names where the meaning matches (dashboards and alert rules
// written for RocketMQ keep working) and ledgermq_ names otherwise:
//
//	rocketmq_messages_in_total{topic}                   counter    messages stored (leader)
//	rocketmq_throughput_in_total{topic}                 counter    body bytes stored
//	rocketmq_message_size                               histogram  body bytes of each message stored
//	rocketmq_messages_out_total{topic,consumer_group}   counter    messages served to pulls
//	rocketmq_throughput_out_total{topic,consumer_group} counter    record bytes served
//	rocketmq_consumer_lag_messages{topic,consumer_group} gauge     stored beyond the committed offsets
//	rocketmq_topic_number, rocketmq_consumer_group_number gauges
//	rocketmq_producer_connections, rocketmq_consumer_connections gauges
//	ledgermq_pop_inflight_messages{topic,consumer_group} gauge     POP messages handed out, not acknowledged
//	ledgermq_pop_due_messages{topic,consumer_group}     gauge      of those, invisible time over (redelivery or DLQ next)
//	ledgermq_pop_oldest_invisible_until_seconds{topic,consumer_group} gauge  earliest invisible-until (Unix s)
//	ledgermq_held_pulls                                 gauge      pulls long polling holds now (remoting and gRPC)
//	ledgermq_send_latency_seconds                       histogram  a send's arrival to its answer (leader)
//	ledgermq_pull_latency_seconds                       histogram  a pull's arrival to its answer with messages
//	ledgermq_raft_log_append_seconds                    histogram  one raft log write, fsync included
//	ledgermq_raft_log_append_bytes                      histogram  bytes of one raft log write
//	ledgermq_raft_leader_changes_total                  counter    leaders or terms this node has seen
//	ledgermq_grpc_calls_total, ledgermq_grpc_call_seconds         the gRPC port's calls (grpcmetrics.go)
//
// Every series carries the node's constant labels (cluster, group, node).
type brokerMetrics struct {
	inMsgs, inBytes, outMsgs, outBytes *prometheus.CounterVec
	msgSize, sendLat, pullLat          prometheus.Histogram
	appendLat, appendBytes             prometheus.Histogram
	leaderChanges                      prometheus.Counter
	// grpcMetrics count the node's gRPC calls (its Call is the gRPC
	// port's observer).
	*grpcMetrics
	lastLeader string
	lastTerm   uint64
	// in holds each topic's children of inMsgs and inBytes (topic →
	// *inCounters): a send adds to them without the vectors' label
	// hashing and lookups. The vectors keep every child they made anyway,
	// so the cache holds nothing they do not.
	in sync.Map
	// lastIn is the topic of the last send and its counters: a run of
	// sends to one topic finds them without hashing its name.
	lastIn atomic.Pointer[topicIn]
}

// topicIn is a topic's counters, as lastIn holds them.
type topicIn struct {
	topic string
	c     *inCounters
}

// inCounters are one topic's children of inMsgs and inBytes.
type inCounters struct{ msgs, bytes prometheus.Counter }

// latencyBuckets run from 100 µs to about 13 s.
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 2, 18)

func newBrokerMetrics(reg prometheus.Registerer, labels prometheus.Labels) *brokerMetrics {
	counter := func(name, help string, vars ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels}, vars)
	}
	hist := func(name, help string, buckets []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, ConstLabels: labels, Buckets: buckets})
	}
	m := &brokerMetrics{
		inMsgs:   counter("rocketmq_messages_in_total", "Messages stored by this leader.", "topic"),
		inBytes:  counter("rocketmq_throughput_in_total", "Message body bytes stored by this leader.", "topic"),
		outMsgs:  counter("rocketmq_messages_out_total", "Messages served to pulls by this node.", "topic", "consumer_group"),
		outBytes: counter("rocketmq_throughput_out_total", "Record bytes served to pulls by this node.", "topic", "consumer_group"),
		msgSize:  hist("rocketmq_message_size", "Body bytes of each message stored.", prometheus.ExponentialBuckets(64, 4, 9)),
		sendLat:  hist("ledgermq_send_latency_seconds", "From a send's arrival on the leader to its answer.", latencyBuckets),
		pullLat:  hist("ledgermq_pull_latency_seconds", "From a pull's arrival to its answer with messages (long polls included).", latencyBuckets),
		appendLat: hist("ledgermq_raft_log_append_seconds", "One write to this node's raft log, fsync included.",
			latencyBuckets),
		appendBytes: hist("ledgermq_raft_log_append_bytes", "Bytes of one write to this node's raft log.", prometheus.ExponentialBuckets(256, 4, 9)),
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{Name: "ledgermq_raft_leader_changes_total",
			Help: "Changes of the group's leader or term seen by this node.", ConstLabels: labels}),
		grpcMetrics: newGRPCMetrics(reg, labels),
	}
	reg.MustRegister(m.inMsgs, m.inBytes, m.outMsgs, m.outBytes, m.msgSize, m.sendLat, m.pullLat, m.appendLat, m.appendBytes, m.leaderChanges)
	return m
}

// Stored implements broker.Observer.
func (m *brokerMetrics) Stored(topic string, msgs, bytes int, took time.Duration) {
	c := m.inFor(topic)
	c.msgs.Add(float64(msgs))
	c.bytes.Add(float64(bytes))
	if msgs > 0 {
		per := float64(bytes) / float64(msgs)
		for i := 0; i < msgs; i++ {
			m.msgSize.Observe(per)
		}
	}
	m.sendLat.Observe(took.Seconds())
}

// inFor returns topic's children of inMsgs and inBytes.
func (m *brokerMetrics) inFor(topic string) *inCounters {
	if l := m.lastIn.Load(); l != nil && l.topic == topic {
		return l.c
	}
	c, ok := m.in.Load(topic)
	if !ok {
		c, _ = m.in.LoadOrStore(topic, &inCounters{msgs: m.inMsgs.WithLabelValues(topic), bytes: m.inBytes.WithLabelValues(topic)})
	}
	m.lastIn.Store(&topicIn{topic: topic, c: c.(*inCounters)})
	return c.(*inCounters)
}

// Served implements broker.Observer.
func (m *brokerMetrics) Served(topic, group string, msgs, bytes int, took time.Duration) {
	m.outMsgs.WithLabelValues(topic, group).Add(float64(msgs))
	m.outBytes.WithLabelValues(topic, group).Add(float64(bytes))
	m.pullLat.Observe(took.Seconds())
}

// LogStored implements dledger.LogObserver.
func (m *brokerMetrics) LogStored(_, bytes int, took time.Duration) {
	m.appendLat.Observe(took.Seconds())
	m.appendBytes.Observe(float64(bytes))
}

// roleChanged counts a new leader or term (called from the group's role
// goroutine only).
func (m *brokerMetrics) roleChanged(ev dledger.RoleEvent) {
	if ev.LeaderID != "" && (ev.LeaderID != m.lastLeader || ev.Term != m.lastTerm) {
		m.leaderChanges.Inc()
		m.lastLeader, m.lastTerm = ev.LeaderID, ev.Term
	}
}

// brokerCollector exports what is read at each scrape: lags and counts.
type brokerCollector struct {
	b                                     *broker.Broker
	lag, topics, groups, prods, consumers *prometheus.Desc
	popInflight, popDue, popOldest        *prometheus.Desc
	heldPulls                             *prometheus.Desc
}

func newBrokerCollector(b *broker.Broker, labels prometheus.Labels) *brokerCollector {
	d := func(name, help string, vars ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, vars, labels)
	}
	return &brokerCollector{
		b:         b,
		lag:       d("rocketmq_consumer_lag_messages", "Messages stored beyond a consumer group's committed offsets, per topic.", "topic", "consumer_group"),
		topics:    d("rocketmq_topic_number", "Topics of this broker group."),
		groups:    d("rocketmq_consumer_group_number", "Subscription groups of this broker group."),
		prods:     d("rocketmq_producer_connections", "Producer clients heard from by this node."),
		consumers: d("rocketmq_consumer_connections", "Consumer clients heard from by this node."),
		popInflight: d("ledgermq_pop_inflight_messages", "POP messages handed out to a consumer group and not acknowledged, per topic.",
			"topic", "consumer_group"),
		popDue: d("ledgermq_pop_due_messages", "POP messages in flight whose invisible time is over (to be delivered again, or to the DLQ), per topic.",
			"topic", "consumer_group"),
		popOldest: d("ledgermq_pop_oldest_invisible_until_seconds", "The earliest invisible-until (Unix seconds) of a consumer group's POP messages in flight, per topic.",
			"topic", "consumer_group"),
		heldPulls: d("ledgermq_held_pulls", "Pulls long polling holds on this node now (remoting consumers' and the gRPC port's PullMessage)."),
	}
}

// Describe implements prometheus.Collector.
func (c *brokerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.lag, c.topics, c.groups, c.prods, c.consumers, c.popInflight, c.popDue, c.popOldest, c.heldPulls} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *brokerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, l := range c.b.Lags() {
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(l.Lag), l.Topic, l.Group)
	}
	for _, p := range c.b.PopState() {
		ch <- prometheus.MustNewConstMetric(c.popInflight, prometheus.GaugeValue, float64(p.Inflight), p.Topic, p.Group)
		ch <- prometheus.MustNewConstMetric(c.popDue, prometheus.GaugeValue, float64(p.Due), p.Topic, p.Group)
		if !p.OldestUntil.IsZero() {
			ch <- prometheus.MustNewConstMetric(c.popOldest, prometheus.GaugeValue, float64(p.OldestUntil.UnixMilli())/1000, p.Topic, p.Group)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.heldPulls, prometheus.GaugeValue, float64(c.b.HeldPulls()))
	n := c.b.Counts()
	for d, v := range map[*prometheus.Desc]int{c.topics: n.Topics, c.groups: n.Groups, c.prods: n.Producers, c.consumers: n.Consumers} {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
}
