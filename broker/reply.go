package broker

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"strconv"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// Request-reply (RocketMQ 4.6+, Java's ReplyMessageProcessor). The
// consumer that handled a request sends its reply with SEND_REPLY_MESSAGE
// (324) or SEND_REPLY_MESSAGE_V2 (325) to "<cluster>_REPLY_TOPIC"; the
// leader pushes the reply to the requester with
// PUSH_REPLY_MESSAGE_TO_CLIENT (326) over the connection of the producer
// whose client id the reply's REPLY_TO_CLIENT property names (the clients
// whose heartbeats this node holds: the standard clients heartbeat to
// every node of the route), then stores it in the reply topic through
// raft, as Java stores it with storeReplyMessageEnable on.
//
// The answer, as Java's: SUCCESS with the stored message's id, queue and
// offset when the push and the store succeeded; SYSTEM_ERROR naming the
// requester when the push failed (the reply is stored all the same); the
// store's error when the store failed (the push may have happened: the
// remark says so).

// replyPushTimeout bounds the push of one reply to its requester.
const replyPushTimeout = 3 * time.Second

// replyTopic is this broker's reply topic.
func (b *Broker) replyTopic() string { return protocol.ReplyTopic(b.cfg.ClusterName) }

// replyTopicConfig is the reply topic as Java's TopicConfigManager creates
// it at start: one read and one write queue, readable and writable.
func (b *Broker) replyTopicConfig() metadata.TopicConfig {
	return metadata.TopicConfig{TopicName: b.replyTopic(), ReadQueueNums: 1, WriteQueueNums: 1,
		Perm: metadata.PermRead | metadata.PermWrite, TopicFilterType: protocol.FilterSingleTag}
}

// ensureReplyTopic proposes the reply topic when this leader's metadata
// lacks it (on the registration loop, as ensureTemplate).
func (b *Broker) ensureReplyTopic() {
	if _, ok := b.group.Metadata().Topic(b.replyTopic()); ok {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, metaProposeTimeout)
	defer cancel()
	tc := b.replyTopicConfig()
	if err := b.group.ProposeMetadata(ctx, metadata.Op{Kind: metadata.OpPutTopic, Topic: &tc}); err != nil {
		b.log.Warn("cannot create the reply topic", "topic", tc.TopicName, "error", err)
	}
}

// serveReply serves SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2
// (325) on the leader; another node forwards the request to it.
func (b *Broker) serveReply(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	if !b.group.IsLeader() {
		return b.forwardLeader(ctx, conn, req)
	}
	resp, err := b.reply(ctx, conn, req)
	if err != nil {
		b.log.Debug("reply refused", "peer", remoteString(conn), "code", req.Code, "error", err)
		return errorResponse(req, err)
	}
	return resp
}

// reply checks, pushes and stores one reply (see the file comment).
func (b *Broker) reply(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	start := time.Now()
	h, props, err := b.readSendRequest(req)
	if err != nil {
		return nil, err
	}
	tc, err := b.topicForSend(ctx, &h)
	if err != nil {
		return nil, err
	}
	queueID, err := chooseQueue(tc, h.QueueID)
	if err != nil {
		return nil, err
	}
	born := bornHost(conn, req)

	pushErr := b.pushReply(ctx, &h, born, props, req.Body)

	msg := b.newExt(&h, h.Topic, queueID, born, h.Flag, req.Body, maps.Clone(props))
	pctx, cancel := context.WithTimeout(ctx, proposeTimeout)
	defer cancel()
	results, err := b.group.Propose(pctx, []*message.Ext{msg})
	if err != nil {
		pushed := "pushed to the requester"
		if pushErr != nil {
			pushed = "not pushed either"
		}
		return nil, fmt.Errorf("storing the reply (%s): %w", pushed, err)
	}
	if len(results) != 1 {
		return nil, fmt.Errorf("broker: %d results for one reply", len(results))
	}
	b.prod.putTotal.Add(1)
	b.obs.Stored(h.Topic, 1, len(req.Body), time.Since(start))
	b.stats.stored(b.cfg.ClusterName, h.Topic, 1, len(req.Body))

	code, remark := remoting.Success, ""
	if pushErr != nil {
		code, remark = remoting.SystemError, pushErr.Error()
	}
	resp := remoting.NewResponse(req, code, remark)
	rh := protocol.SendMessageResponseHeader{MsgID: results[0].MsgID, QueueID: queueID,
		QueueOffset: results[0].QueueOffset, Region: defaultRegion, TraceOn: true}
	resp.ExtFields = rh.Encode()
	return resp, nil
}

// pushReply sends the reply to the requester named by REPLY_TO_CLIENT, as
// Java's pushReplyMessage: the send header, where the reply was received
// and stored, the properties with PUSH_REPLY_TIME added, and the body.
// The error is the remark Java answers with.
func (b *Broker) pushReply(ctx context.Context, h *sendHeader, born netip.AddrPort, props map[string]string, body []byte) error {
	sender := props[message.PropertyReplyToClient]
	if sender == "" {
		return fmt.Errorf("reply message properties[%s] is null", message.PropertyReplyToClient)
	}
	conn := b.consumers.producerConnOf(sender)
	if conn == nil {
		return fmt.Errorf("push reply message fail, channel of <%s> not found", sender)
	}
	pushed := maps.Clone(props)
	now := b.cfg.Clock()
	pushed[protocol.PropertyPushReplyTime] = strconv.FormatInt(now.UnixMilli(), 10)
	ph := protocol.ReplyMessageRequestHeader{
		ProducerGroup: h.ProducerGroup, Topic: h.Topic, DefaultTopic: h.DefaultTopic,
		DefaultTopicQueueNums: h.DefaultTopicQueueNums, QueueID: h.QueueID, SysFlag: h.SysFlag,
		BornTimestamp: h.BornTimestamp, Flag: h.Flag, Properties: string(message.EncodeProperties(pushed)),
		ReconsumeTimes: h.ReconsumeTimes, UnitMode: h.UnitMode,
		BornHost: "/" + born.String(), StoreHost: "/" + b.cfg.StoreHost.String(), StoreTimestamp: now.UnixMilli(),
	}
	cctx, cancel := context.WithTimeout(ctx, replyPushTimeout)
	defer cancel()
	resp, err := conn.Request(cctx, ph.Request(body))
	if err != nil {
		b.log.Warn("push reply message failed", "client", sender, "error", err)
		return fmt.Errorf("push reply message to %s fail: %w", sender, err)
	}
	if resp.Code != remoting.Success {
		b.log.Warn("push reply message refused", "client", sender, "code", resp.Code, "remark", resp.Remark)
		return fmt.Errorf("push reply message to %s fail: %s", sender, resp.Remark)
	}
	return nil
}

// producerConnOf returns the live connection of the producer client id
// heartbeats on (any of its groups; the newest heartbeat wins), or else
// the one its request messages came over (requesters.go), or nil (Java's
// ProducerManager.findChannel, which knows heartbeats only).
func (m *consumerManager) producerConnOf(clientID string) *remoting.Conn {
	m.mu.Lock()
	defer m.mu.Unlock()
	var best *clientConn
	for _, p := range m.producers {
		c := p[clientID]
		if c == nil || c.conn == nil || c.conn.Closed() {
			continue
		}
		if best == nil || c.lastSeen.After(best.lastSeen) {
			best = c
		}
	}
	if best == nil {
		if c := m.requesters[clientID]; c != nil && c.conn != nil && !c.conn.Closed() {
			best = c
		}
	}
	if best == nil {
		return nil
	}
	return best.conn
}
