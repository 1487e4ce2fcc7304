package broker

// The admin reads and the offset reset that RocketMQ's mqadmin and
// client.Admin use for topicStatus, consumerProgress, consumerConnection
// and resetOffsetByTime, with Java's codes, headers and body layouts
// (protocol/admin.go has the codec):
//
//	code  request                        node       answer
//	----  -----------------------------  ---------  ------------------------------------
//	202   GET_TOPIC_STATS_INFO           any        TopicStatsTable; 17 unknown topic
//	203   GET_CONSUMER_CONNECTION_LIST   any        ConsumerConnection; 206 not online
//	208   GET_CONSUME_STATS              any        ConsumeStats (empty: unknown group)
//	300   QUERY_TOPIC_CONSUME_BY_WHO     any        GroupList: subscribed or with offsets
//	303   QUERY_CONSUME_TIME_SPAN        any        QueryConsumeTimeSpanBody; 17 unknown topic
//	314   CLONE_GROUP_OFFSET             leader     none; offsets committed through raft
//	222   INVOKE_BROKER_TO_RESET_OFFSET  leader     ResetOffsetBody; 17, 26
//
// Reads come from the answering node's replica (offsets and queues are
// replicated, so every node answers alike up to replication lag); the
// connection list is the answering node's own clients, as on Java, which
// is why client.Admin asks every member.
//
// 222 resets on the server side, as Java 5's useServerSideResetOffset: the
// new offsets are committed through raft before the answer (so the reset
// holds whether or not a consumer is online), the pending commit table is
// overwritten so an older client commit waiting in it cannot undo the
// reset, and online clients of the group get RESET_CONSUMER_CLIENT_OFFSET
// (220) so they drop their in-memory offsets. A consumer that commits an
// older offset after that (one that missed the 220) can still move the
// group back; that is Java's behaviour too.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// queueMax is a queue's max offset, 0 for unknown topics and empty queues.
func (b *Broker) queueMax(topic string, qid int32) int64 {
	if !b.knownTopic(topic) {
		return 0
	}
	v, err := b.group.Store().MaxOffset(topic, qid)
	if err != nil {
		return 0
	}
	return v
}

// storeTimeAt is the store time of the message at a queue offset, 0 when
// there is none.
func (b *Broker) storeTimeAt(topic string, qid int32, offset int64) int64 {
	if offset < 0 {
		return 0
	}
	res, err := b.group.Store().Get(topic, qid, offset, 1, nil)
	if err != nil {
		return 0
	}
	defer res.Release()
	if len(res.Records) == 0 || res.Records[0].QueueOffset != offset {
		return 0
	}
	v, err := message.ParseView(res.Records[0].Bytes)
	if err != nil {
		return 0
	}
	return v.StoreTimestamp()
}

// getTopicStatsInfo serves GET_TOPIC_STATS_INFO (202): ext topic; per
// write queue its min and max offset and its newest message's store time.
func (b *Broker) getTopicStatsInfo(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.TopicStatsInfoRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return errorResponse(req, err)
	}
	topic := h.Topic
	tc, ok := b.group.Metadata().Topic(topic)
	if !ok {
		return errorResponse(req, fmt.Errorf("%w: topic[%s] not exist", ErrTopicNotExist, topic))
	}
	t := protocol.TopicStatsTable{OffsetTable: map[protocol.MessageQueue]protocol.TopicOffset{}}
	for i := int32(0); i < tc.WriteQueueNums; i++ {
		o := protocol.TopicOffset{MinOffset: b.queueMin(topic, i), MaxOffset: b.queueMax(topic, i)}
		if o.MaxOffset > 0 {
			o.LastUpdateTimestamp = b.storeTimeAt(topic, i, o.MaxOffset-1)
		}
		t.OffsetTable[protocol.MessageQueue{Topic: topic, BrokerName: b.cfg.BrokerName, QueueID: i}] = o
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = t.Encode()
	return resp
}

// groupTopics are the topics a group has committed offsets on or
// subscribes to (Java whichTopicByConsumer plus the heartbeat's), sorted.
func (b *Broker) groupTopics(group string) []string {
	md := b.group.Metadata()
	seen := map[string]bool{}
	var out []string
	for _, tc := range md.Topics() {
		for i := int32(0); i < max(tc.ReadQueueNums, tc.WriteQueueNums); i++ {
			if _, ok := md.Offset(group, tc.TopicName, i); ok {
				seen[tc.TopicName] = true
				out = append(out, tc.TopicName)
				break
			}
		}
	}
	b.consumers.mu.Lock()
	if g := b.consumers.groups[group]; g != nil {
		for topic := range g.subs {
			if !seen[topic] {
				out = append(out, topic)
			}
		}
	}
	b.consumers.mu.Unlock()
	slices.Sort(out)
	return out
}

// getConsumeStats serves GET_CONSUME_STATS (208): ext consumerGroup, topic
// (optional: every topic of the group). Per read queue: the queue's max
// offset, the group's committed offset (0 when none) and the store time of
// the last message consumed.
func (b *Broker) getConsumeStats(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.ConsumeStatsRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return errorResponse(req, err)
	}
	topics := b.groupTopics(h.ConsumerGroup)
	if h.Topic != "" {
		topics = []string{h.Topic}
	}
	s := protocol.ConsumeStats{OffsetTable: map[protocol.MessageQueue]protocol.OffsetWrapper{}}
	for _, topic := range topics {
		b.addConsumeStats(s.OffsetTable, h.ConsumerGroup, topic)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = s.Encode()
	return resp
}

// addConsumeStats adds the lines of group's consumption of topic to table,
// one per read queue: the queue's max offset, the group's committed offset
// (0 when none) and the store time of the last message consumed. A topic
// this node does not know adds nothing.
func (b *Broker) addConsumeStats(table map[protocol.MessageQueue]protocol.OffsetWrapper, group, topic string) {
	tc, ok := b.group.Metadata().Topic(topic)
	if !ok {
		return
	}
	for i := int32(0); i < tc.ReadQueueNums; i++ {
		w := protocol.OffsetWrapper{BrokerOffset: b.queueMax(topic, i)}
		if off, ok := b.offsets.lookup(group, topic, i); ok && off > 0 {
			w.ConsumerOffset = off
		}
		w.PullOffset = w.ConsumerOffset
		w.LastTimestamp = b.storeTimeAt(topic, i, w.ConsumerOffset-1)
		table[protocol.MessageQueue{Topic: topic, BrokerName: b.cfg.BrokerName, QueueID: i}] = w
	}
}

// getBrokerConsumeStats serves GET_BROKER_CONSUME_STATS (317): ext isOrder.
// As Java's broker: for every subscription group, one ConsumeStats per
// topic the group has offsets on or subscribes to (only ordered topics when
// isOrder; a topic an online group does not subscribe to is left out), and
// the sum of every queue's lag.
func (b *Broker) getBrokerConsumeStats(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.BrokerConsumeStatsRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return errorResponse(req, err)
	}
	md := b.group.Metadata()
	list := protocol.ConsumeStatsList{BrokerAddr: b.cfg.AdvertiseAddr}
	for _, g := range md.Groups() {
		online := b.groupSubscriptions(g.GroupName)
		gs := protocol.GroupConsumeStats{Group: g.GroupName, Stats: []protocol.ConsumeStats{}}
		for _, topic := range b.groupTopics(g.GroupName) {
			tc, ok := md.Topic(topic)
			if !ok || (h.IsOrder && !tc.Order) || (len(online) > 0 && !online[topic]) {
				continue
			}
			s := protocol.ConsumeStats{OffsetTable: map[protocol.MessageQueue]protocol.OffsetWrapper{}}
			b.addConsumeStats(s.OffsetTable, g.GroupName, topic)
			for _, w := range s.OffsetTable {
				list.TotalDiff += w.BrokerOffset - w.ConsumerOffset
			}
			gs.Stats = append(gs.Stats, s)
		}
		list.Groups = append(list.Groups, gs)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = list.Encode()
	return resp
}

// groupSubscriptions is the topics group's online consumers subscribe to
// (empty when none is online).
func (b *Broker) groupSubscriptions(group string) map[string]bool {
	out := map[string]bool{}
	b.consumers.mu.Lock()
	defer b.consumers.mu.Unlock()
	if g := b.consumers.groups[group]; g != nil && len(g.clients) > 0 {
		for topic := range g.subs {
			out[topic] = true
		}
	}
	return out
}

// getConsumerConnectionList serves GET_CONSUMER_CONNECTION_LIST (203): ext
// consumerGroup; the clients heartbeating this node and their
// subscriptions, or CONSUMER_NOT_ONLINE (206); each connection with the
// language and version of the client's last heartbeat.
func (b *Broker) getConsumerConnectionList(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.ConsumerConnectionListRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return errorResponse(req, err)
	}
	group := h.ConsumerGroup
	m := b.consumers
	m.mu.Lock()
	g := m.groups[group]
	if g == nil || len(g.clients) == 0 {
		m.mu.Unlock()
		return remoting.NewResponse(req, remoting.ConsumerNotOnline, fmt.Sprintf("the consumer group[%s] not online", group))
	}
	cc := protocol.ConsumerConnection{
		SubscriptionTable: map[string]protocol.SubscriptionData{},
		ConsumeType:       g.consumeType, MessageModel: g.messageModel, ConsumeFromWhere: g.consumeFromWhere,
	}
	for id, c := range g.clients {
		addr := ""
		if c.conn != nil {
			addr = c.conn.RemoteAddr().String()
		}
		cc.ConnectionSet = append(cc.ConnectionSet, connectionOf(id, addr, c))
	}
	for topic, s := range g.subs {
		cc.SubscriptionTable[topic] = subscriptionDataOf(topic, s)
	}
	m.mu.Unlock()
	slices.SortFunc(cc.ConnectionSet, func(a, b protocol.Connection) int { return strings.Compare(a.ClientID, b.ClientID) })
	return bodyResponse(req, cc.Encode)
}

// subscriptionDataOf is a subscription as Java's SubscriptionData shows
// it: a tag expression's tags and their hash codes.
func subscriptionDataOf(topic string, s subscription) protocol.SubscriptionData {
	sd := protocol.SubscriptionData{Topic: topic, SubString: s.expr, SubVersion: s.version, ExpressionType: s.exprType,
		TagsSet: []string{}, CodeSet: []int32{}}
	if s.exprType == "" || s.exprType == expressionTypeTag {
		for _, tag := range strings.Split(s.expr, "||") {
			if tag = strings.TrimSpace(tag); tag != "" && tag != "*" {
				sd.TagsSet = append(sd.TagsSet, tag)
				sd.CodeSet = append(sd.CodeSet, message.JavaStringHash(tag))
			}
		}
	}
	return sd
}

// resetOffset serves INVOKE_BROKER_TO_RESET_OFFSET (222) on the leader
// (see the file comment). Unknown topic: 17; a group that has neither a
// subscription group config nor an offset on the topic: 26.
func (b *Broker) resetOffset(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	h, err := protocol.DecodeResetOffsetHeader(req.ExtFields)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	md := b.group.Metadata()
	tc, ok := md.Topic(h.Topic)
	if !ok {
		return nil, fmt.Errorf("%w: [reset-offset] no topic %s in this broker", ErrTopicNotExist, h.Topic)
	}
	queues := max(tc.ReadQueueNums, tc.WriteQueueNums)
	_, known := md.Group(h.Group)
	for i := int32(0); i < queues && !known; i++ {
		_, known = b.offsets.lookup(h.Group, h.Topic, i)
	}
	if !known {
		return remoting.NewResponse(req, remoting.SubscriptionGroupNotExist,
			fmt.Sprintf("the consumer group <%s> does not exist", h.Group)), nil
	}
	if h.QueueID >= queues {
		return nil, fmt.Errorf("%w: queueId %d of topic %s with %d queues", ErrInvalidParameter, h.QueueID, h.Topic, queues)
	}
	body := protocol.ResetOffsetBody{OffsetTable: map[protocol.MessageQueue]int64{}}
	op := metadata.Op{Kind: metadata.OpCommitOffsets}
	st := b.group.Store()
	for i := int32(0); i < queues; i++ {
		if h.QueueID >= 0 && i != h.QueueID {
			continue
		}
		cur, _ := b.offsets.lookup(h.Group, h.Topic, i)
		var target int64
		switch {
		case h.QueueID >= 0 && h.Offset >= 0:
			target = min(max(h.Offset, b.queueMin(h.Topic, i)), b.queueMax(h.Topic, i))
		case h.Timestamp < 0:
			target = b.queueMax(h.Topic, i)
		default:
			if target, err = st.OffsetByTime(h.Topic, i, h.Timestamp); err != nil {
				target = 0 // a queue never written: its start
			}
		}
		if !h.IsForce && target >= cur {
			target = cur
		}
		body.OffsetTable[protocol.MessageQueue{Topic: h.Topic, BrokerName: b.cfg.BrokerName, QueueID: i}] = target
		op.Offsets = append(op.Offsets, metadata.OffsetCommit{Group: h.Group, Topic: h.Topic, QueueID: i, Offset: target})
	}
	if err := b.setOffsets(ctx, op); err != nil {
		return nil, err
	}
	b.log.Warn("consumer offsets reset by an admin request", "group", h.Group, "topic", h.Topic, "timestamp", h.Timestamp, "queues", len(op.Offsets))
	b.notifyReset(h, body)
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = body.Encode()
	return resp, nil
}

// notifyReset sends RESET_CONSUMER_CLIENT_OFFSET (220) one-way to the
// group's clients connected to this node.
func (b *Broker) notifyReset(h protocol.ResetOffsetHeader, body protocol.ResetOffsetBody) {
	m := b.consumers
	var conns []*remoting.Conn
	m.mu.Lock()
	if g := m.groups[h.Group]; g != nil {
		for _, c := range g.clients {
			if c.conn != nil {
				conns = append(conns, c.conn)
			}
		}
	}
	m.mu.Unlock()
	if len(conns) == 0 {
		return
	}
	rh := protocol.ResetConsumerClientOffsetRequestHeader{Topic: h.Topic, Group: h.Group, Timestamp: h.Timestamp, IsForce: h.IsForce}
	cmd := rh.Request(body.Encode())
	for _, c := range conns {
		if c.Closed() {
			continue
		}
		if err := c.Oneway(cmd); err != nil {
			b.log.Debug("reset-offset notification failed", "group", h.Group, "peer", c.RemoteAddr(), "error", err)
		}
	}
}

// connectionOf is a client's Connection as admin tools see it.
func connectionOf(id, addr string, c *clientConn) protocol.Connection {
	lang := c.language
	if lang == "" {
		lang = remoting.LanguageOther
	}
	return protocol.Connection{ClientID: id, ClientAddr: addr, Language: lang, Version: int32(c.version)}
}

// getProducerConnectionList serves GET_PRODUCER_CONNECTION_LIST (204): ext
// producerGroup; the clients of the group heartbeating this node (Java
// ProducerConnection), or SYSTEM_ERROR when none is, as Java answers.
func (b *Broker) getProducerConnectionList(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.ProducerConnectionListRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return errorResponse(req, err)
	}
	group := h.ProducerGroup
	clients := b.consumers.producerClients(group)
	if len(clients) == 0 {
		return remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("the producer group[%s] not exist", group))
	}
	pc := protocol.ProducerConnection{ConnectionSet: make([]protocol.Connection, 0, len(clients))}
	for i := range clients {
		pc.ConnectionSet = append(pc.ConnectionSet, connectionOf(clients[i].id, remoteString(clients[i].conn), &clients[i]))
	}
	return bodyResponse(req, pc.Encode)
}

// queryTopicConsumeByWho answers QUERY_TOPIC_CONSUME_BY_WHO (300): the
// consumer groups of a topic, as Java's broker gives them: the groups
// whose online consumers subscribe to it, and those that have committed
// an offset of one of its queues (replicated, so every node answers the
// same for those).
func (b *Broker) queryTopicConsumeByWho(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.QueryTopicConsumeByWhoRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return errorResponse(req, err)
	}
	groups := b.group.Metadata().OffsetGroups(h.Topic)
	m := b.consumers
	m.mu.Lock()
	for name, g := range m.groups {
		if _, ok := g.subs[h.Topic]; ok {
			groups = append(groups, name)
		}
	}
	m.mu.Unlock()
	slices.Sort(groups)
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = protocol.GroupList{GroupList: slices.Compact(groups)}.Encode()
	return resp
}

// queryConsumeTimeSpan answers QUERY_CONSUME_TIME_SPAN (303): per write
// queue of the topic, as Java's broker gives it, the store times of the
// oldest and newest messages, of the group's last consumed one (the
// oldest when it consumed none) and how long ago the next one to consume
// was stored (0 when the group is caught up). An unknown topic is
// TOPIC_NOT_EXIST.
func (b *Broker) queryConsumeTimeSpan(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.QueryConsumeTimeSpanRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return errorResponse(req, err)
	}
	tc, ok := b.group.Metadata().Topic(h.Topic)
	if !ok {
		return errorResponse(req, fmt.Errorf("%w: topic[%s] not exist", ErrTopicNotExist, h.Topic))
	}
	st := b.group.Store()
	now := b.cfg.Clock().UnixMilli()
	var body protocol.QueryConsumeTimeSpanBody
	for i := int32(0); i < tc.WriteQueueNums; i++ {
		span := protocol.QueueTimeSpan{MessageQueue: protocol.MessageQueue{Topic: h.Topic, BrokerName: b.cfg.BrokerName, QueueID: i}}
		span.MinTimeStamp, _ = st.EarliestMessageTime(h.Topic, i)
		maxOff := b.queueMax(h.Topic, i)
		span.MaxTimeStamp = b.storeTimeAt(h.Topic, i, maxOff-1)
		consumed, _ := b.offsets.lookup(h.Group, h.Topic, i)
		span.ConsumeTimeStamp = span.MinTimeStamp
		if consumed > 0 {
			span.ConsumeTimeStamp = b.storeTimeAt(h.Topic, i, consumed-1)
		}
		if consumed < maxOff {
			if next := b.storeTimeAt(h.Topic, i, max(consumed, 0)); next > 0 {
				span.DelayTime = now - next
			}
		}
		body.ConsumeTimeSpanSet = append(body.ConsumeTimeSpanSet, span)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = body.Encode()
	return resp
}

// cloneGroupOffset serves CLONE_GROUP_OFFSET (314) on the leader, as
// Java's broker does: the source group's committed offsets of the topic
// (or of every topic it has offsets of) become the destination group's,
// committed through raft. Unless offline, a topic the source group's
// online consumers do not subscribe to (when they subscribe to any) is
// left out; so is a topic this broker does not have.
func (b *Broker) cloneGroupOffset(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.CloneGroupOffsetRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return nil, err
	}
	topics := []string{h.Topic}
	if h.Topic == "" {
		topics = b.group.Metadata().OffsetTopics(h.SrcGroup)
	}
	md := b.group.Metadata()
	op := metadata.Op{Kind: metadata.OpCommitOffsets}
	for _, topic := range topics {
		tc, ok := md.Topic(topic)
		if !ok {
			continue
		}
		if !h.Offline && b.consumers.subscribesElsewhere(h.SrcGroup, topic) {
			continue
		}
		for i := int32(0); i < max(tc.ReadQueueNums, tc.WriteQueueNums); i++ {
			if off, ok := md.Offset(h.SrcGroup, topic, i); ok {
				op.Offsets = append(op.Offsets, metadata.OffsetCommit{Group: h.DestGroup, Topic: topic, QueueID: i, Offset: off})
			}
		}
	}
	if len(op.Offsets) > 0 {
		if err := b.setOffsets(ctx, op); err != nil {
			return nil, err
		}
	}
	b.log.Info("consumer offsets cloned by an admin request", "from", h.SrcGroup, "to", h.DestGroup, "topic", h.Topic, "queues", len(op.Offsets))
	return remoting.NewResponse(req, remoting.Success, ""), nil
}

// setOffsets commits an admin request's offsets (an OpCommitOffsets op)
// through raft and overwrites the pending commit table with them, so an
// older client commit waiting there cannot undo them.
func (b *Broker) setOffsets(ctx context.Context, op metadata.Op) error {
	pctx, cancel := context.WithTimeout(ctx, metaProposeTimeout)
	defer cancel()
	if err := b.group.ProposeMetadata(pctx, op); err != nil {
		return err
	}
	for _, c := range op.Offsets {
		b.offsets.commit(c.Group, c.Topic, c.QueueID, c.Offset, "")
	}
	return nil
}
