package client

// Subscription groups (200, 207, 201), consumer progress (208), consumer
// connections (203) and offset resets by time (dry run from 208, 352 and
// 29; execution by 222).

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// GroupConfig is a subscription group's config (Java
// SubscriptionGroupConfig, protocol's codec); DefaultGroupConfig has
// RocketMQ's defaults.
type GroupConfig = protocol.SubscriptionGroupConfig

// DefaultGroupConfig is name's config with RocketMQ's defaults.
func DefaultGroupConfig(name string) GroupConfig {
	return protocol.DefaultSubscriptionGroupConfig(name)
}

// CreateGroup creates or updates the subscription group on every broker
// group t names (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, 200) and returns them.
func (a *Admin) CreateGroup(ctx context.Context, cfg GroupConfig, t Target) ([]string, error) {
	if err := protocol.ValidateGroup(cfg.GroupName); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	groups, err := a.resolve(ctx, t)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, g := range groups {
		req, err := cfg.Request() // one per call: a request carries its opaque
		if err != nil {
			return done, fmt.Errorf("client: %w", err)
		}
		if _, err := a.call(ctx, g.addr, req, 0); err != nil {
			return done, fmt.Errorf("client: create group %s on %s: %w", cfg.GroupName, g.name, err)
		}
		done = append(done, g.name)
	}
	return done, nil
}

// BrokerGroupConfig is one broker group's copy of a subscription group.
type BrokerGroupConfig struct {
	BrokerName string `json:"brokerName"`
	GroupConfig
}

// ListGroups returns the subscription groups of every broker group t
// names (GET_ALL_SUBSCRIPTIONGROUP_CONFIG, 201), sorted by group then broker.
func (a *Admin) ListGroups(ctx context.Context, t Target) ([]BrokerGroupConfig, error) {
	groups, err := a.resolve(ctx, t)
	if err != nil {
		return nil, err
	}
	var out []BrokerGroupConfig
	for _, g := range groups {
		resp, err := a.call(ctx, g.addr, protocol.AllSubscriptionGroupsRequest(), 0)
		if err != nil {
			return nil, fmt.Errorf("client: groups of %s: %w", g.name, err)
		}
		w, err := protocol.DecodeSubscriptionGroupWrapper(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("client: groups from %s: %w", g.addr, err)
		}
		for _, c := range w.SubscriptionGroupTable {
			out = append(out, BrokerGroupConfig{BrokerName: g.name, GroupConfig: c})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GroupName != out[j].GroupName {
			return out[i].GroupName < out[j].GroupName
		}
		return out[i].BrokerName < out[j].BrokerName
	})
	return out, nil
}

// DeleteGroup removes the subscription group, and its offsets, from every
// broker group t names that has it (DELETE_SUBSCRIPTIONGROUP, 207).
// ErrNoSuchGroup when none has it.
func (a *Admin) DeleteGroup(ctx context.Context, group string, t Target) error {
	all, err := a.ListGroups(ctx, t)
	if err != nil {
		return err
	}
	groups, err := a.resolve(ctx, t)
	if err != nil {
		return err
	}
	found := false
	for _, g := range groups {
		has := false
		for _, c := range all {
			has = has || c.BrokerName == g.name && c.GroupName == group
		}
		if !has {
			continue
		}
		found = true
		req := (&protocol.DeleteSubscriptionGroupRequestHeader{GroupName: group, CleanOffset: true}).Request()
		if _, err := a.call(ctx, g.addr, req, 0); err != nil {
			return fmt.Errorf("client: delete group %s on %s: %w", group, g.name, err)
		}
	}
	if !found {
		return fmt.Errorf("%w: %s on %s", ErrNoSuchGroup, group, t)
	}
	return nil
}

// QueueProgress is one queue's line of ConsumerProgress.
type QueueProgress struct {
	Topic          string `json:"topic"`
	BrokerName     string `json:"brokerName"`
	QueueID        int32  `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"`
	Lag            int64  `json:"lag"`
	// LastConsumed is the store time of the last message consumed; zero
	// (and left out of JSON) when the group has consumed none.
	LastConsumed time.Time `json:"lastConsumed,omitzero"`
}

// Progress is a consumer group's progress on every queue it consumes.
type Progress struct {
	Group      string          `json:"group"`
	Queues     []QueueProgress `json:"queues"`
	TotalLag   int64           `json:"totalLag"`
	ConsumeTPS float64         `json:"consumeTps"`
}

// ConsumerProgress asks every broker group for the group's offsets
// (GET_CONSUME_STATS, 208): per queue the broker's max offset, the
// group's committed offset and the lag between them. topic "" means every
// topic the group consumes, its %RETRY% topic included. ErrNoSuchGroup
// when no broker has a queue for the group.
func (a *Admin) ConsumerProgress(ctx context.Context, group, topic string) (*Progress, error) {
	groups, err := a.resolve(ctx, Target{})
	if err != nil {
		return nil, err
	}
	p := &Progress{Group: group, Queues: []QueueProgress{}}
	for _, g := range groups {
		cs, err := a.consumeStats(ctx, g, group, topic)
		if err != nil {
			return nil, err
		}
		p.ConsumeTPS += cs.ConsumeTps
		for mq, w := range cs.OffsetTable {
			qp := queueProgressOf(mq, w)
			p.Queues = append(p.Queues, qp)
			p.TotalLag += qp.Lag
		}
	}
	if len(p.Queues) == 0 {
		return nil, fmt.Errorf("%w: %s has no offsets on any broker group (it has consumed nothing, or does not exist)", ErrNoSuchGroup, group)
	}
	sort.Slice(p.Queues, func(i, j int) bool {
		x, y := p.Queues[i], p.Queues[j]
		if x.Topic != y.Topic {
			return x.Topic < y.Topic
		}
		if x.BrokerName != y.BrokerName {
			return x.BrokerName < y.BrokerName
		}
		return x.QueueID < y.QueueID
	})
	return p, nil
}

func (a *Admin) consumeStats(ctx context.Context, g brokerGroup, group, topic string) (protocol.ConsumeStats, error) {
	req := (&protocol.ConsumeStatsRequestHeader{ConsumerGroup: group, Topic: topic}).Request()
	resp, err := a.call(ctx, g.addr, req, 0)
	if err != nil {
		return protocol.ConsumeStats{}, fmt.Errorf("client: consume stats of %s on %s: %w", group, g.name, err)
	}
	cs, err := protocol.DecodeConsumeStats(resp.Body)
	if err != nil {
		return protocol.ConsumeStats{}, fmt.Errorf("client: consume stats from %s: %w", g.addr, err)
	}
	return cs, nil
}

// ConsumerClient is one online client of a consumer group.
type ConsumerClient struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int32  `json:"version"`
	// Brokers are the broker nodes the client heartbeats to.
	Brokers []string `json:"brokers"`
}

// ConsumerConnections is a group's online clients and subscriptions.
type ConsumerConnections struct {
	Group            string                      `json:"group"`
	ConsumeType      string                      `json:"consumeType"`
	MessageModel     string                      `json:"messageModel"`
	ConsumeFromWhere string                      `json:"consumeFromWhere"`
	Clients          []ConsumerClient            `json:"clients"`
	Subscriptions    []protocol.SubscriptionData `json:"subscriptions"`
}

// ConsumerConnections asks every member of every broker group for the
// group's clients (GET_CONSUMER_CONNECTION_LIST, 203: each node knows the
// clients that heartbeat to it) and merges them by client id.
// ErrNoSuchGroup when no client is online anywhere.
func (a *Admin) ConsumerConnections(ctx context.Context, group string) (*ConsumerConnections, error) {
	groups, err := a.resolve(ctx, Target{})
	if err != nil {
		return nil, err
	}
	out := &ConsumerConnections{Group: group}
	clients := map[string]*ConsumerClient{}
	subs := map[string]protocol.SubscriptionData{}
	var errs []error
	for _, g := range groups {
		for _, addr := range g.data.BrokerAddrs {
			req := (&protocol.ConsumerConnectionListRequestHeader{ConsumerGroup: group}).Request()
			resp, err := a.call(ctx, addr, req, 0, remoting.Success, remoting.ConsumerNotOnline)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if resp.Code == remoting.ConsumerNotOnline {
				continue
			}
			cc, err := protocol.DecodeConsumerConnection(resp.Body)
			if err != nil {
				errs = append(errs, fmt.Errorf("client: consumer connections from %s: %w", addr, err))
				continue
			}
			out.ConsumeType, out.MessageModel, out.ConsumeFromWhere = cc.ConsumeType, cc.MessageModel, cc.ConsumeFromWhere
			for _, c := range cc.ConnectionSet {
				cl := clients[c.ClientID]
				if cl == nil {
					cl = &ConsumerClient{ClientID: c.ClientID, ClientAddr: c.ClientAddr, Language: c.Language, Version: c.Version}
					clients[c.ClientID] = cl
				}
				cl.Brokers = append(cl.Brokers, addr)
			}
			for topic, s := range cc.SubscriptionTable {
				subs[topic] = s
			}
		}
	}
	if len(clients) == 0 {
		if len(errs) > 0 {
			return nil, fmt.Errorf("%w: %s is not online on any reachable broker: %w", ErrNoSuchGroup, group, errors.Join(errs...))
		}
		return nil, fmt.Errorf("%w: %s: no client online", ErrNoSuchGroup, group)
	}
	for _, c := range clients {
		sort.Strings(c.Brokers)
		out.Clients = append(out.Clients, *c)
	}
	sort.Slice(out.Clients, func(i, j int) bool { return out.Clients[i].ClientID < out.Clients[j].ClientID })
	for _, s := range subs {
		out.Subscriptions = append(out.Subscriptions, s)
	}
	sort.Slice(out.Subscriptions, func(i, j int) bool { return out.Subscriptions[i].Topic < out.Subscriptions[j].Topic })
	return out, nil
}

// ResetRequest is an offset reset by time.
type ResetRequest struct {
	Group, Topic string
	// Timestamp is where to move to: the first message stored at or
	// after it (ms); -1 moves to the end of every queue.
	Timestamp int64
	// Execute performs the reset; without it ResetOffsetByTime only
	// computes the new offsets (a dry run, Kafka's default).
	Execute bool
	// OnlyBackward keeps a queue's offset when the new one would be
	// ahead of it (mqadmin -f false); by default offsets move both ways.
	OnlyBackward bool
}

// OffsetReset is one queue's old and new offset.
type OffsetReset struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Old        int64  `json:"old"`
	New        int64  `json:"new"`
}

// ResetOffsetByTime moves the group's offsets of the topic to the time,
// on every broker group serving the topic, or (without r.Execute) only
// says where they would move. Executing sends
// INVOKE_BROKER_TO_RESET_OFFSET (222) to each group's leader, which
// commits the offsets through raft and tells online consumers
// (RESET_CONSUMER_CLIENT_OFFSET); the dry run reads the offsets (208) and
// searches by time (29). Unknown topic: ErrNoSuchTopic; a group no broker
// knows: ErrNoSuchGroup.
func (a *Admin) ResetOffsetByTime(ctx context.Context, r ResetRequest) ([]OffsetReset, error) {
	_, groups, err := a.routeGroups(ctx, r.Topic)
	if err != nil {
		return nil, err
	}
	var out []OffsetReset
	for _, g := range groups {
		cs, err := a.consumeStats(ctx, g, r.Group, r.Topic)
		if err != nil {
			return nil, err
		}
		old := map[int32]int64{}
		for mq, w := range cs.OffsetTable {
			old[mq.QueueID] = w.ConsumerOffset
		}
		if !r.Execute {
			if err := a.groupKnown(ctx, g, r.Group, r.Topic); err != nil {
				return nil, err
			}
			for mq, w := range cs.OffsetTable {
				target := w.BrokerOffset
				if r.Timestamp >= 0 {
					if target, err = a.queueOffset(ctx, g.addr, remoting.SearchOffsetByTimestamp, r.Topic, mq.QueueID, r.Timestamp); err != nil {
						return nil, err
					}
				}
				if r.OnlyBackward && target >= w.ConsumerOffset {
					target = w.ConsumerOffset
				}
				out = append(out, OffsetReset{BrokerName: g.name, QueueID: mq.QueueID, Old: w.ConsumerOffset, New: target})
			}
			continue
		}
		h := protocol.ResetOffsetHeader{Topic: r.Topic, Group: r.Group, Timestamp: r.Timestamp, IsForce: !r.OnlyBackward, QueueID: -1, Offset: -1}
		resp, err := a.call(ctx, g.addr, h.Request(), 0)
		if err != nil {
			var be *BrokerError
			if errors.As(err, &be) && be.Code == remoting.SubscriptionGroupNotExist {
				return out, fmt.Errorf("%w: %s on %s: %w", ErrNoSuchGroup, r.Group, g.name, err)
			}
			return out, fmt.Errorf("client: reset %s/%s on %s: %w", r.Group, r.Topic, g.name, topicErr(err))
		}
		body, err := protocol.DecodeResetOffsetBody(resp.Body)
		if err != nil {
			return out, fmt.Errorf("client: reset answer from %s: %w", g.addr, err)
		}
		for mq, off := range body.OffsetTable {
			out = append(out, OffsetReset{BrokerName: g.name, QueueID: mq.QueueID, Old: old[mq.QueueID], New: off})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].BrokerName != out[j].BrokerName {
			return out[i].BrokerName < out[j].BrokerName
		}
		return out[i].QueueID < out[j].QueueID
	})
	return out, nil
}

// groupKnown applies the broker's rule for 222 to a dry run: the group
// has a config (GET_SUBSCRIPTIONGROUP_CONFIG, 352) or an offset on topic.
func (a *Admin) groupKnown(ctx context.Context, g brokerGroup, group, topic string) error {
	req := (&protocol.GetSubscriptionGroupConfigRequestHeader{Group: group}).Request()
	resp, err := a.call(ctx, g.addr, req, 0, remoting.Success, remoting.SubscriptionGroupNotExist)
	if err != nil {
		return err
	}
	if resp.Code == remoting.Success {
		return nil
	}
	cs, err := a.consumeStats(ctx, g, group, "")
	if err != nil {
		return err
	}
	for mq := range cs.OffsetTable {
		if mq.Topic == topic {
			return nil
		}
	}
	return fmt.Errorf("%w: %s on %s", ErrNoSuchGroup, group, g.name)
}

// OffsetClone is one queue's offset copied by CloneGroupOffset.
type OffsetClone struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Offset     int64  `json:"offset"`
}

// CloneGroupOffset gives dest the committed offsets src has on topic, on
// every broker group serving it: src's offsets are read (GET_CONSUME_STATS,
// 208) and committed for dest (UPDATE_CONSUMER_OFFSET, 15, which the
// group's leader proposes through raft; it is applied within the broker's
// commit interval). mqadmin's cloneGroupOffset. ErrNoSuchGroup when src has
// no offset on topic.
func (a *Admin) CloneGroupOffset(ctx context.Context, src, dest, topic string) ([]OffsetClone, error) {
	if err := protocol.ValidateGroup(dest); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	_, groups, err := a.routeGroups(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []OffsetClone
	for _, g := range groups {
		cs, err := a.consumeStats(ctx, g, src, topic)
		if err != nil {
			return out, err
		}
		for mq, w := range cs.OffsetTable {
			if w.ConsumerOffset <= 0 {
				continue // nothing committed on this queue
			}
			h := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: dest, Topic: topic, QueueID: mq.QueueID, CommitOffset: w.ConsumerOffset}
			if _, err := a.call(ctx, g.addr, h.Request(), 0); err != nil {
				return out, fmt.Errorf("client: commit %s's offset of %s/%d on %s: %w", dest, topic, mq.QueueID, g.name, err)
			}
			out = append(out, OffsetClone{BrokerName: g.name, QueueID: mq.QueueID, Offset: w.ConsumerOffset})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s has no committed offset on %s", ErrNoSuchGroup, src, topic)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].BrokerName != out[j].BrokerName {
			return out[i].BrokerName < out[j].BrokerName
		}
		return out[i].QueueID < out[j].QueueID
	})
	return out, nil
}
