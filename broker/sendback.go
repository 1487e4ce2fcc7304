package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// CONSUMER_SEND_MSG_BACK (36): a consumer hands back a message it failed to
// consume. ext group, offset (the message's commitlog offset), delayLevel
// (0: 3 + reconsumeTimes; n: level n; -1: straight to the DLQ),
// originMsgId, originTopic, maxReconsumeTimes. The leader reads the message
// at offset and stores a copy in %RETRY%<group>, delayed by the level
// (delay.go), with reconsumeTimes + 1, RETRY_TOPIC and ORIGIN_MESSAGE_ID
// set and UNIQ_KEY kept, so the consumer sees the same MsgId again; once
// reconsumeTimes reaches the maximum, or for delayLevel -1, the copy goes
// to %DLQ%<group> queue 0 instead. Followers forward it to the leader.
//
// Anything that would keep the copy from being stored and delivered is
// refused before the answer, never after: a group whose %RETRY% topic would
// pass 127 bytes (validateGroup: INVALID_PARAMETER, 29), a retry topic that
// cannot be created, a destination the scheduler could not deliver to
// (park). The client then falls back to its own send to %RETRY%<group>, and
// failing that keeps the message and retries it locally.
//
// The copy is proposed with its retry topic's duplicate window
// (duplicates.go): a send-back repeated for the same attempt (same
// UNIQ_KEY, same reconsume count, same group) is answered SUCCESS and
// stored once.

func (b *Broker) sendBack(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ConsumerSendMsgBackRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return nil, err
	}
	group, off, delayLevel, maxTimes := h.Group, h.Offset, h.DelayLevel, h.MaxReconsumeTimes
	if err := validateGroup(group); err != nil {
		return nil, err
	}
	if _, ok := b.group.Metadata().Group(group); !ok && !b.cfg.AutoCreateSubscriptionGroup {
		return remoting.NewResponse(req, remoting.SubscriptionGroupNotExist, "subscription group "+group+" does not exist"), nil
	}
	orig, err := b.group.Store().MessageAt(off)
	if err != nil {
		return nil, fmt.Errorf("%w: no message at offset %d: %v", ErrInvalidParameter, off, err)
	}

	m := &message.Ext{
		Message:        message.Message{Flag: orig.Flag, Body: orig.Body, Properties: make(map[string]string, len(orig.Properties)+3)},
		SysFlag:        orig.SysFlag,
		BornTimestamp:  orig.BornTimestamp,
		BornHost:       orig.BornHost,
		ReconsumeTimes: orig.ReconsumeTimes + 1,
	}
	for k, v := range orig.Properties {
		m.Properties[k] = v
	}
	delete(m.Properties, message.PropertyDelayLevel)
	if m.Properties[message.PropertyRetryTopic] == "" {
		m.Properties[message.PropertyRetryTopic] = orig.Topic
	}
	if m.Properties[message.PropertyOriginMessageID] == "" {
		id := h.OriginMsgID
		if id == "" {
			id = orig.MsgID()
		}
		m.Properties[message.PropertyOriginMessageID] = id
	}

	var window time.Duration
	if orig.ReconsumeTimes >= b.maxReconsumeTimes(group, maxTimes) || delayLevel < 0 {
		tc, err := b.createTopic(ctx, metadata.TopicConfig{TopicName: protocol.DLQTopic(group), ReadQueueNums: 1, WriteQueueNums: 1,
			Perm: metadata.PermRead | metadata.PermWrite})
		if err != nil {
			return nil, err
		}
		m.Topic, m.QueueID = tc.TopicName, 0
		window = b.sendWindow(tc)
	} else {
		retry := protocol.RetryTopic(group)
		tc, err := b.createTopic(ctx, metadata.TopicConfig{TopicName: retry, ReadQueueNums: 1, WriteQueueNums: 1,
			Perm: metadata.PermRead | metadata.PermWrite, TopicFilterType: "SINGLE_TAG"})
		if err != nil {
			return nil, err
		}
		window = b.sendWindow(tc)
		queueID, err := chooseQueue(tc, -1)
		if err != nil {
			return nil, err
		}
		level := int(delayLevel)
		if level == 0 {
			level = 3 + int(orig.ReconsumeTimes)
		}
		level = min(level, len(b.cfg.DelayLevels))
		if m.Topic, m.QueueID, err = b.park(ctx, level, retry, queueID, m.Properties); err != nil {
			return nil, err
		}
		m.Properties[message.PropertyDelayLevel] = fmt.Sprint(level)
	}
	pctx, cancel := context.WithTimeout(ctx, proposeTimeout)
	defer cancel()
	res, err := b.group.ProposeSend(pctx, []*message.Ext{m}, window)
	if err != nil {
		return nil, err
	}
	if res[0].Duplicate {
		b.log.Debug("repeated send-back answered with its first store", "group", group, "offset", off, "to", m.Topic,
			"reconsumeTimes", m.ReconsumeTimes, "stored", res[0].PhysicalOffset)
		return remoting.NewResponse(req, remoting.Success, ""), nil
	}
	b.stats.add(statsSendBackNums, m.Properties[message.PropertyRetryTopic]+"@"+group, 1, 1)
	b.log.Debug("message sent back", "group", group, "offset", off, "to", m.Topic, "reconsumeTimes", m.ReconsumeTimes)
	return remoting.NewResponse(req, remoting.Success, ""), nil
}
