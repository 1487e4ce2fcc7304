package broker

import (
	"context"

	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
)

// Message traces: RocketMQ's clients with tracing on send trace records
// (Pub, SubBefore, SubAfter, EndTransaction events; client/admin_trace.go
// reads them) to a trace topic, and they look its route up without the
// TBW102 fallback ordinary sends have: the topic must exist. Java's broker
// creates it at start when traceTopicEnable is set; the leader here
// proposes it on its registration loop, as the reply topic, when
// Config.TraceTopic is set. The records are ordinary messages: stored,
// replicated and indexed by KEYS (the traced message's ids) like any other.

// traceTopicConfig is the trace topic as Java creates it: one read and one
// write queue, readable and writable.
func (b *Broker) traceTopicConfig() metadata.TopicConfig {
	return metadata.TopicConfig{TopicName: b.cfg.TraceTopic, ReadQueueNums: 1, WriteQueueNums: 1,
		Perm: metadata.PermRead | metadata.PermWrite, TopicFilterType: protocol.FilterSingleTag}
}

// ensureTraceTopic proposes the trace topic when it is enabled and this
// leader's metadata lacks it (on the registration loop).
func (b *Broker) ensureTraceTopic() {
	if b.cfg.TraceTopic == "" {
		return
	}
	if _, ok := b.group.Metadata().Topic(b.cfg.TraceTopic); ok {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, metaProposeTimeout)
	defer cancel()
	tc := b.traceTopicConfig()
	if err := b.group.ProposeMetadata(ctx, metadata.Op{Kind: metadata.OpPutTopic, Topic: &tc}); err != nil {
		b.log.Warn("cannot create the trace topic", "topic", tc.TopicName, "error", err)
	}
}
