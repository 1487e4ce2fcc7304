package client

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// The push consumer's group requests: HEART_BEAT (34), which tells every
// broker the group's members and subscriptions; GET_CONSUMER_LIST_BY_GROUP
// (38), the members a rebalance shares the queues among; UNREGISTER_CLIENT
// (35), so the others rebalance at once when one closes; and
// CONSUMER_SEND_MSG_BACK (36), the way a failed message comes back.

// heartbeatBody encodes the consumer's HEART_BEAT body.
func (c *PushConsumer) heartbeatBody() []byte {
	cd := protocol.ConsumerData{
		GroupName:        c.opts.group,
		ConsumeType:      protocol.ConsumePassively,
		MessageModel:     c.opts.consumer.model.String(),
		ConsumeFromWhere: c.opts.consumer.fromWhere.String(),
	}
	for _, s := range c.subscriptions() {
		tags := s.sel.tags()
		codes := make(protocol.TagCodes, 0, len(tags))
		for _, t := range tags {
			codes = append(codes, message.JavaStringHash(t))
		}
		cd.SubscriptionDataSet = append(cd.SubscriptionDataSet, protocol.SubscriptionData{
			Topic: s.topic, SubString: s.sel.expression(), TagsSet: append([]string{}, tags...), CodeSet: codes,
			SubVersion: c.subVersion, ExpressionType: s.sel.Type.String(),
		})
	}
	hb := protocol.HeartbeatData{ClientID: c.clientID, ConsumerDataSet: []protocol.ConsumerData{cd}}
	body, _ := hb.Encode() // strings, numbers and bools only: cannot fail
	return body
}

// brokerAddrs lists every address of every group serving a subscribed
// topic, from the cached routes.
func (c *PushConsumer) brokerAddrs(ctx context.Context) []string {
	var out []string
	for _, s := range c.subscriptions() {
		if r, err := c.route(ctx, s.topic); err == nil {
			out = append(out, r.allAddrs()...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// heartbeat sends HEART_BEAT to every broker (leaders and followers, so a
// new leader already knows the group) and returns how many accepted it.
func (c *PushConsumer) heartbeat(ctx context.Context) int {
	body := c.heartbeatBody()
	addrs := c.brokerAddrs(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for _, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
			defer cancel()
			resp, err := c.core.rc.Invoke(hctx, addr, remoting.NewRequest(remoting.HeartBeat, nil, body))
			if err != nil || resp.Code != remoting.Success {
				c.opts.logger.Debug("heartbeat failed", "addr", addr, "error", err, "resp", resp)
				return
			}
			mu.Lock()
			ok++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return ok
}

// unregister sends UNREGISTER_CLIENT to every broker, best effort, so
// the group's other members rebalance now rather than when the
// connection's loss is noticed.
func (c *PushConsumer) unregister(ctx context.Context) {
	h := protocol.UnregisterClientRequestHeader{ClientID: c.clientID, ConsumerGroup: c.opts.group}
	var wg sync.WaitGroup
	for _, addr := range c.brokerAddrs(ctx) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			uctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
			defer cancel()
			_, _ = c.core.rc.Invoke(uctx, addr, h.Request())
		}()
	}
	wg.Wait()
}

// consumerList asks a broker of r's first group (its leader, else any
// node) for the group's members, sorted. An error answer is an error,
// not an empty list: the caller keeps its queues rather than drop them.
func (c *PushConsumer) consumerList(ctx context.Context, r *topicRoute) ([]string, error) {
	if len(r.queues) == 0 {
		return nil, fmt.Errorf("%w: topic %s has no readable queue", ErrNoRoute, r.topic)
	}
	ctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
	defer cancel()
	resp, addr, err := c.call(ctx, r.queues[0], true, func() *remoting.Command {
		h := protocol.GetConsumerListByGroupRequestHeader{ConsumerGroup: c.opts.group}
		return h.Request()
	})
	if err != nil {
		return nil, fmt.Errorf("client: consumer list of %s: %w", c.opts.group, err)
	}
	if resp.Code != remoting.Success {
		return nil, fmt.Errorf("client: consumer list of %s: %w", c.opts.group, &BrokerError{Code: resp.Code, Remark: resp.Remark, Addr: addr})
	}
	body, err := protocol.DecodeConsumerListBody(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: consumer list of %s from %s: %w", c.opts.group, addr, err)
	}
	slices.Sort(body.ConsumerIDList)
	return slices.Compact(body.ConsumerIDList), nil
}

// sendBack is CONSUMER_SEND_MSG_BACK for m to its group's leader: the
// broker stores a copy in %RETRY%<group>, delayed by the level, or in
// %DLQ%<group> once m has failed maxReconsumeTimes times.
func (c *PushConsumer) sendBack(ctx context.Context, m *MessageExt) error {
	return c.sendBackLevel(ctx, m, c.opts.consumer.retryDelayLevel)
}

// sendBackLevel is sendBack with delay level level; -1 sends m to the
// dead-letter topic at once.
func (c *PushConsumer) sendBackLevel(ctx context.Context, m *MessageExt, level int) error {
	ctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
	defer cancel()
	resp, addr, err := c.call(ctx, m.Queue, false, func() *remoting.Command {
		h := protocol.ConsumerSendMsgBackRequestHeader{
			Group:             c.opts.group,
			Offset:            m.PhysicalOffset,
			DelayLevel:        int32(level),
			OriginMsgID:       m.MsgID,
			OriginTopic:       m.Topic,
			MaxReconsumeTimes: int32(c.opts.consumer.maxReconsume),
			BrokerName:        m.Queue.BrokerName,
		}
		return h.Request()
	})
	if err != nil {
		return fmt.Errorf("client: send back %s: %w", m.MsgID, err)
	}
	if resp.Code != remoting.Success {
		return fmt.Errorf("client: send back %s: %w", m.MsgID, &BrokerError{Code: resp.Code, Remark: resp.Remark, Addr: addr})
	}
	return nil
}
