package client

// Who produces and how far every group is: producer connections (204),
// one broker's consume stats for all its groups (201, 208) and the
// cluster-wide table of topics and their consumer groups (206, 202, 201,
// 208). RocketMQ's mqadmin names these producerConnection,
// brokerConsumeStats and statsAll.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// ProducerClient is one online client of a producer group.
type ProducerClient struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int32  `json:"version"`
	// Brokers are the broker nodes the client heartbeats to.
	Brokers []string `json:"brokers"`
}

// ProducerConnections asks every member of the broker groups serving
// topic (every group when topic is "") for the producer group's clients
// (GET_PRODUCER_CONNECTION_LIST, 204: each node knows the clients that
// heartbeat to it) and merges them by client id. ErrNoSuchGroup when no
// client of the group is online anywhere.
func (a *Admin) ProducerConnections(ctx context.Context, group, topic string) ([]ProducerClient, error) {
	var groups []brokerGroup
	var err error
	if topic == "" {
		groups, err = a.resolve(ctx, Target{})
	} else {
		_, groups, err = a.routeGroups(ctx, topic)
	}
	if err != nil {
		return nil, err
	}
	clients := map[string]*ProducerClient{}
	var errs []error
	for _, g := range groups {
		for _, addr := range g.data.BrokerAddrs {
			req := (&protocol.ProducerConnectionListRequestHeader{ProducerGroup: group}).Request()
			// A node none of the group's clients heartbeats answers
			// SYSTEM_ERROR, as Java's broker does.
			resp, err := a.call(ctx, addr, req, 0, remoting.Success, remoting.SystemError)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if resp.Code != remoting.Success {
				continue
			}
			pc, err := protocol.DecodeProducerConnection(resp.Body)
			if err != nil {
				errs = append(errs, fmt.Errorf("client: producer connections from %s: %w", addr, err))
				continue
			}
			for _, c := range pc.ConnectionSet {
				cl := clients[c.ClientID]
				if cl == nil {
					cl = &ProducerClient{ClientID: c.ClientID, ClientAddr: c.ClientAddr, Language: c.Language, Version: c.Version}
					clients[c.ClientID] = cl
				}
				cl.Brokers = append(cl.Brokers, addr)
			}
		}
	}
	if len(clients) == 0 {
		if len(errs) > 0 {
			return nil, fmt.Errorf("%w: producer group %s is not online on any reachable broker: %w", ErrNoSuchGroup, group, errors.Join(errs...))
		}
		return nil, fmt.Errorf("%w: producer group %s: no client online", ErrNoSuchGroup, group)
	}
	out := make([]ProducerClient, 0, len(clients))
	for _, c := range clients {
		sort.Strings(c.Brokers)
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ClientID < out[j].ClientID })
	return out, nil
}

// GroupQueueProgress is one queue of one consumer group.
type GroupQueueProgress struct {
	Group string `json:"group"`
	QueueProgress
}

// BrokerConsumeStats returns every subscription group's progress on every
// queue it consumes at the broker node at addr (GET_BROKER_CONSUME_STATS,
// 317; from a node that does not serve it, group by group with
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG, 201, and GET_CONSUME_STATS, 208),
// sorted by topic, group and queue: mqadmin's brokerConsumeStats.
func (a *Admin) BrokerConsumeStats(ctx context.Context, addr string) ([]GroupQueueProgress, error) {
	groups, err := a.resolve(ctx, Target{BrokerAddr: addr})
	if err != nil {
		return nil, err
	}
	g := groups[0]
	out := []GroupQueueProgress{}
	h := protocol.BrokerConsumeStatsRequestHeader{}
	resp, err := a.call(ctx, g.addr, h.Request(), 0, remoting.Success, remoting.RequestCodeNotSupported)
	if err != nil {
		return nil, err
	}
	if resp.Code == remoting.Success {
		list, err := protocol.DecodeConsumeStatsList(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("client: broker consume stats of %s: %w", g.addr, err)
		}
		for _, gs := range list.Groups {
			for _, cs := range gs.Stats {
				for mq, w := range cs.OffsetTable {
					out = append(out, GroupQueueProgress{Group: gs.Group, QueueProgress: queueProgressOf(mq, w)})
				}
			}
		}
	} else {
		configs, err := a.ListGroups(ctx, Target{BrokerAddr: addr})
		if err != nil {
			return nil, err
		}
		for _, c := range configs {
			cs, err := a.consumeStats(ctx, g, c.GroupName, "")
			if err != nil {
				return nil, err
			}
			for mq, w := range cs.OffsetTable {
				out = append(out, GroupQueueProgress{Group: c.GroupName, QueueProgress: queueProgressOf(mq, w)})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.Topic != y.Topic {
			return x.Topic < y.Topic
		}
		if x.Group != y.Group {
			return x.Group < y.Group
		}
		return x.QueueID < y.QueueID
	})
	return out, nil
}

// queueProgressOf is one line of GET_CONSUME_STATS's answer.
func queueProgressOf(mq protocol.MessageQueue, w protocol.OffsetWrapper) QueueProgress {
	return QueueProgress{Topic: mq.Topic, BrokerName: mq.BrokerName, QueueID: mq.QueueID, BrokerOffset: w.BrokerOffset,
		ConsumerOffset: w.ConsumerOffset, Lag: max(w.BrokerOffset-w.ConsumerOffset, 0), LastConsumed: fromMS(w.LastTimestamp)}
}

// TopicStats is one topic's line of StatsAll.
type TopicStats struct {
	Topic string `json:"topic"`
	// Written is every message the topic's queues ever took (the sum of
	// their max offsets); Stored those retention still keeps.
	Written int64 `json:"written"`
	Stored  int64 `json:"stored"`
	// Groups are the consumer groups with offsets on the topic.
	Groups []GroupStats `json:"groups"`
}

// GroupStats is one consumer group's progress on one topic.
type GroupStats struct {
	Group string `json:"group"`
	// Consumed is the sum of the group's committed offsets; Lag what is
	// stored beyond them (mqadmin's accumulation).
	Consumed int64 `json:"consumed"`
	Lag      int64 `json:"lag"`
}

// StatsAll returns every topic the name servers know (only topic, when
// set), its message counts (GET_TOPIC_STATS_INFO, 202) and the progress of
// each consumer group with offsets on it (every broker group's
// subscription groups, 201, and their consume stats, 208), sorted by
// topic. Retry and dead-letter topics are left out, as mqadmin's statsAll
// does. Rates are not kept by the brokers: the nodes' /metrics have them
// (rocketmq_messages_in_total, rocketmq_messages_out_total).
func (a *Admin) StatsAll(ctx context.Context, topic string) ([]TopicStats, error) {
	topics := []string{topic}
	if topic == "" {
		all, err := a.ListTopics(ctx)
		if err != nil {
			return nil, err
		}
		topics = topics[:0]
		for _, t := range all {
			if !strings.HasPrefix(t, protocol.RetryTopicPrefix) && !strings.HasPrefix(t, protocol.DLQTopicPrefix) {
				topics = append(topics, t)
			}
		}
	}
	// Each group's offsets, per topic, from every broker group.
	groups, err := a.resolve(ctx, Target{})
	if err != nil {
		return nil, err
	}
	progress := map[string]map[string]*GroupStats{} // topic → group → stats
	for _, g := range groups {
		configs, err := a.ListGroups(ctx, Target{BrokerName: g.name})
		if err != nil {
			return nil, err
		}
		for _, c := range configs {
			cs, err := a.consumeStats(ctx, g, c.GroupName, "")
			if err != nil {
				return nil, err
			}
			for mq, w := range cs.OffsetTable {
				byGroup := progress[mq.Topic]
				if byGroup == nil {
					byGroup = map[string]*GroupStats{}
					progress[mq.Topic] = byGroup
				}
				gs := byGroup[c.GroupName]
				if gs == nil {
					gs = &GroupStats{Group: c.GroupName}
					byGroup[c.GroupName] = gs
				}
				gs.Consumed += w.ConsumerOffset
				gs.Lag += max(w.BrokerOffset-w.ConsumerOffset, 0)
			}
		}
	}
	out := make([]TopicStats, 0, len(topics))
	for _, t := range topics {
		qs, err := a.TopicStatus(ctx, t)
		if errors.Is(err, ErrNoSuchTopic) && topic == "" {
			continue // deleted since the list was read
		}
		if err != nil {
			return nil, err
		}
		ts := TopicStats{Topic: t, Groups: []GroupStats{}}
		for _, q := range qs {
			ts.Written += q.MaxOffset
			ts.Stored += q.MaxOffset - q.MinOffset
		}
		for _, gs := range progress[t] {
			ts.Groups = append(ts.Groups, *gs)
		}
		sort.Slice(ts.Groups, func(i, j int) bool { return ts.Groups[i].Group < ts.Groups[j].Group })
		out = append(out, ts)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out, nil
}
