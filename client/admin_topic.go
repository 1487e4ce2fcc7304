package client

// Topic administration: create/update on broker groups (17), delete from
// the groups then the name servers (215, 216), list (206), route (105)
// and per-queue status (202, or 30/31 from brokers that lack 202).

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// TopicConfig is what CreateTopic sets. Zero queue counts and perm take
// mqadmin's defaults (8, 8, 6).
type TopicConfig struct {
	Topic       string
	ReadQueues  int32
	WriteQueues int32
	// Perm is 2 (write), 4 (read) or 6 (both).
	Perm  int32
	Order bool
	// Attributes changes the topic's attributes as RocketMQ 5's mqadmin
	// -a does: "+key=value" sets, "-key" removes, comma-separated (e.g.
	// "+dedup.window=0" turns the duplicate window off for the topic).
	Attributes string
}

// CreateTopic creates or updates the topic on every broker group t names
// (UPDATE_AND_CREATE_TOPIC, 17) and returns the groups it was created on.
// The broker registers it with the name servers before answering.
func (a *Admin) CreateTopic(ctx context.Context, tc TopicConfig, t Target) ([]string, error) {
	if err := validateTopic(tc.Topic); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if tc.ReadQueues == 0 {
		tc.ReadQueues = 8
	}
	if tc.WriteQueues == 0 {
		tc.WriteQueues = 8
	}
	if tc.Perm == 0 {
		tc.Perm = protocol.PermRead | protocol.PermWrite
	}
	groups, err := a.resolve(ctx, t)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, g := range groups {
		h := protocol.CreateTopicRequestHeader{Topic: tc.Topic, DefaultTopic: protocol.DefaultTopic,
			ReadQueueNums: tc.ReadQueues, WriteQueueNums: tc.WriteQueues, Perm: tc.Perm,
			TopicFilterType: protocol.FilterSingleTag, Order: tc.Order, Attributes: tc.Attributes}
		req := h.Request()
		if _, err := a.call(ctx, g.addr, req, 0); err != nil {
			return done, fmt.Errorf("client: create topic %s on %s: %w", tc.Topic, g.name, err)
		}
		done = append(done, g.name)
	}
	return done, nil
}

// DeleteTopic removes the topic from every broker group t names that
// serves it (DELETE_TOPIC_IN_BROKER, 215), then from every name server
// (DELETE_TOPIC_IN_NAMESRV, 216; for one cluster when t.Cluster is set).
// A topic the name servers do not know is ErrNoSuchTopic.
func (a *Admin) DeleteTopic(ctx context.Context, topic string, t Target) error {
	rd, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return err
	}
	groups, err := a.resolve(ctx, t)
	if err != nil {
		return err
	}
	for _, g := range groups {
		if _, ok := rd.Broker(g.name); !ok {
			continue
		}
		req := (&protocol.DeleteTopicRequestHeader{Topic: topic}).Request()
		if _, err := a.call(ctx, g.addr, req, 0); err != nil {
			return fmt.Errorf("client: delete topic %s on %s: %w", topic, g.name, err)
		}
	}
	nsReq := protocol.DeleteTopicFromNamesrvRequestHeader{Topic: topic, ClusterName: t.Cluster}
	var errs []error
	for _, ns := range a.opts.nameServers {
		if _, err := a.call(ctx, ns, nsReq.Request(), 0); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("client: delete topic %s from the name servers: %w", topic, errors.Join(errs...))
	}
	return nil
}

// ListTopics returns every topic the name servers know, sorted
// (GET_ALL_TOPIC_LIST_FROM_NAMESERVER, 206).
func (a *Admin) ListTopics(ctx context.Context) ([]string, error) {
	resp, ns, err := a.askNameServers(ctx, protocol.AllTopicListRequest)
	if err != nil {
		return nil, err
	}
	tl, err := protocol.DecodeTopicList(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: topic list from %s: %w", ns, err)
	}
	sort.Strings(tl.TopicList)
	return tl.TopicList, nil
}

// TopicRoute returns the topic's route as clients get it
// (GET_ROUTEINFO_BY_TOPIC, 105); ErrNoSuchTopic when no name server knows it.
func (a *Admin) TopicRoute(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	resp, ns, err := a.askNameServers(ctx, func() *remoting.Command {
		return (&protocol.GetRouteInfoRequestHeader{Topic: topic}).Request()
	}, remoting.Success, remoting.TopicNotExist)
	if err != nil {
		return nil, err
	}
	if resp.Code == remoting.TopicNotExist {
		return nil, fmt.Errorf("%w: %s (name server %s: %s)", ErrNoSuchTopic, topic, ns, resp.Remark)
	}
	rd, err := protocol.DecodeTopicRouteData(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: route of %s from %s: %w", topic, ns, err)
	}
	return rd, nil
}

// QueueStatus is one queue's line of TopicStatus.
type QueueStatus struct {
	BrokerName string    `json:"brokerName"`
	QueueID    int32     `json:"queueId"`
	MinOffset  int64     `json:"minOffset"`
	MaxOffset  int64     `json:"maxOffset"`
	LastUpdate time.Time `json:"lastUpdate,omitzero"` // store time of the newest message; zero (and left out of JSON) when empty
}

// TopicStatus returns every queue's min and max offset and last update
// time, sorted by broker group and queue (GET_TOPIC_STATS_INFO, 202, on
// each group serving the topic; GET_MIN_OFFSET/GET_MAX_OFFSET, 31/30, for
// a broker answering REQUEST_CODE_NOT_SUPPORTED).
func (a *Admin) TopicStatus(ctx context.Context, topic string) ([]QueueStatus, error) {
	rd, groups, err := a.routeGroups(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []QueueStatus
	for _, g := range groups {
		req := (&protocol.TopicStatsInfoRequestHeader{Topic: topic}).Request()
		resp, err := a.call(ctx, g.addr, req, 0, remoting.Success, remoting.RequestCodeNotSupported)
		if err != nil {
			return nil, fmt.Errorf("client: status of %s on %s: %w", topic, g.name, topicErr(err))
		}
		if resp.Code == remoting.RequestCodeNotSupported {
			qs, err := a.queueOffsets(ctx, rd, g, topic)
			if err != nil {
				return nil, err
			}
			out = append(out, qs...)
			continue
		}
		st, err := protocol.DecodeTopicStatsTable(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("client: status of %s from %s: %w", topic, g.addr, err)
		}
		for mq, o := range st.OffsetTable {
			out = append(out, QueueStatus{BrokerName: mq.BrokerName, QueueID: mq.QueueID, MinOffset: o.MinOffset,
				MaxOffset: o.MaxOffset, LastUpdate: fromMS(o.LastUpdateTimestamp)})
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

// topicErr marks a broker's TOPIC_NOT_EXIST as ErrNoSuchTopic.
func topicErr(err error) error {
	var be *BrokerError
	if errors.As(err, &be) && be.Code == remoting.TopicNotExist {
		return fmt.Errorf("%w: %w", ErrNoSuchTopic, err)
	}
	return err
}

// queueOffsets is TopicStatus for one group by 30/31, queue by queue.
func (a *Admin) queueOffsets(ctx context.Context, rd *protocol.TopicRouteData, g brokerGroup, topic string) ([]QueueStatus, error) {
	var n int32
	for _, q := range rd.QueueDatas {
		if q.BrokerName == g.name {
			n = q.WriteQueueNums
		}
	}
	var out []QueueStatus
	for i := int32(0); i < n; i++ {
		qs := QueueStatus{BrokerName: g.name, QueueID: i}
		var err error
		if qs.MinOffset, err = a.queueOffset(ctx, g.addr, remoting.GetMinOffset, topic, i, 0); err != nil {
			return nil, err
		}
		if qs.MaxOffset, err = a.queueOffset(ctx, g.addr, remoting.GetMaxOffset, topic, i, 0); err != nil {
			return nil, err
		}
		out = append(out, qs)
	}
	return out, nil
}

// queueOffset asks addr for one of a queue's offsets: 30 GET_MAX_OFFSET,
// 31 GET_MIN_OFFSET or 29 SEARCH_OFFSET_BY_TIMESTAMP (of ts, ms); the
// answer's ext offset.
func (a *Admin) queueOffset(ctx context.Context, addr string, code int32, topic string, qid int32, ts int64) (int64, error) {
	resp, err := a.call(ctx, addr, queueOffsetRequest(code, topic, qid, "", ts), 0)
	if err != nil {
		return 0, fmt.Errorf("client: %s/%d: %w", topic, qid, err)
	}
	var ans protocol.OffsetResponseHeader
	if err := ans.Decode(resp.ExtFields); err != nil {
		return 0, fmt.Errorf("client: %s of %s/%d from %s: %w", remoting.RequestCodeName(code), topic, qid, addr, err)
	}
	return ans.Offset, nil
}
