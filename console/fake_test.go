package console

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
)

// fakeAdmin answers from fields; it records the resets asked.
type fakeAdmin struct {
	members   []client.MemberStatus
	health    *client.HealthReport
	httpAddr  string // every node's http_addr
	topics    []string
	route     *protocol.TopicRouteData
	queues    []client.QueueStatus
	groups    []client.BrokerGroupConfig
	progress  *client.Progress
	conns     *client.ConsumerConnections
	msgs      []*message.Ext
	config    map[string]string                       // every node's settings besides http_addr
	runtime   map[string]string                       // every node's GET_BROKER_RUNTIME_INFO
	aclConfig protocol.ClusterACLConfig               // every node's GET_BROKER_CLUSTER_ACL_CONFIG
	timers    map[string]protocol.PendingTimers       // by group
	trans     map[string]protocol.PendingTransactions // by group
	pop       map[string]protocol.PopState            // by group
	raft      map[string]protocol.RaftStatus          // by client address
	traces    map[string][]client.TraceEvent          // by message id; nil: no trace topic
	configErr error                                   // BrokerConfig's answer when set (an account refused)
	putStats  *protocol.BrokerStatsData               // every leader's TOPIC_PUT_NUMS; nil: none counted
	closed    bool                                    // Close was called

	mu     sync.Mutex
	resets []client.ResetRequest
}

func (f *fakeAdmin) ClusterList(context.Context) ([]client.MemberStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]client.MemberStatus(nil), f.members...), nil
}

// Close records that the console let the client go (a session ended).
func (f *fakeAdmin) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeAdmin) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

func (f *fakeAdmin) Health(context.Context, uint64) (*client.HealthReport, error) {
	return f.health, nil
}

func (f *fakeAdmin) BrokerConfig(_ context.Context, addr string) (map[string]string, error) {
	if f.configErr != nil {
		return nil, f.configErr
	}
	out := map[string]string{"http_addr": f.httpAddr}
	for k, v := range f.config {
		out[k] = v
	}
	return out, nil
}

func (f *fakeAdmin) RaftStatus(_ context.Context, addr string) (protocol.RaftStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.raft[addr]
	if !ok {
		return protocol.RaftStatus{}, fmt.Errorf("%w: %s", client.ErrLeaderNotFound, addr)
	}
	return st, nil
}

// setMembers replaces the members ClusterList answers.
func (f *fakeAdmin) setMembers(m []client.MemberStatus) {
	f.mu.Lock()
	f.members = m
	f.mu.Unlock()
}

func (f *fakeAdmin) BrokerRuntime(context.Context, string) (map[string]string, error) {
	return f.runtime, nil
}

func (f *fakeAdmin) BrokerStats(_ context.Context, _, name, key string) (protocol.BrokerStatsData, error) {
	if name != "TOPIC_PUT_NUMS" || f.putStats == nil {
		return protocol.BrokerStatsData{}, fmt.Errorf("The stats <%s> <%s> not exist", name, key)
	}
	return *f.putStats, nil
}

func (f *fakeAdmin) ClusterACLConfig(context.Context, string) (protocol.ClusterACLConfig, error) {
	return f.aclConfig, nil
}

func (f *fakeAdmin) PendingTimers(_ context.Context, group string, _ int) (protocol.PendingTimers, error) {
	t, ok := f.timers[group]
	if !ok {
		return t, fmt.Errorf("%w: group %s", client.ErrLeaderNotFound, group)
	}
	return t, nil
}

func (f *fakeAdmin) PendingTransactions(_ context.Context, group string, _ int) (protocol.PendingTransactions, error) {
	t, ok := f.trans[group]
	if !ok {
		return t, fmt.Errorf("%w: group %s", client.ErrLeaderNotFound, group)
	}
	return t, nil
}

func (f *fakeAdmin) PopState(_ context.Context, group string, _ protocol.PopStateHeader) (protocol.PopState, error) {
	p, ok := f.pop[group]
	if !ok {
		return p, fmt.Errorf("%w: group %s", client.ErrLeaderNotFound, group)
	}
	return p, nil
}

func (f *fakeAdmin) MessageTrace(_ context.Context, _, id string) ([]client.TraceEvent, error) {
	if f.traces == nil {
		return nil, fmt.Errorf("%w: %s", client.ErrNoSuchTopic, client.DefaultTraceTopic)
	}
	ev, ok := f.traces[id]
	if !ok {
		return nil, fmt.Errorf("%w: no trace of %s", client.ErrNoSuchMessage, id)
	}
	return ev, nil
}

func (f *fakeAdmin) ListTopics(context.Context) ([]string, error) { return f.topics, nil }

func (f *fakeAdmin) TopicRoute(_ context.Context, topic string) (*protocol.TopicRouteData, error) {
	if f.route == nil {
		return nil, fmt.Errorf("%w: %s", client.ErrNoSuchTopic, topic)
	}
	return f.route, nil
}

func (f *fakeAdmin) TopicStatus(context.Context, string) ([]client.QueueStatus, error) {
	return f.queues, nil
}

func (f *fakeAdmin) ListGroups(context.Context, client.Target) ([]client.BrokerGroupConfig, error) {
	return f.groups, nil
}

func (f *fakeAdmin) ConsumerProgress(_ context.Context, group, _ string) (*client.Progress, error) {
	if f.progress == nil {
		return nil, fmt.Errorf("%w: %s", client.ErrNoSuchGroup, group)
	}
	return f.progress, nil
}

func (f *fakeAdmin) ConsumerConnections(_ context.Context, group string) (*client.ConsumerConnections, error) {
	if f.conns == nil {
		return nil, fmt.Errorf("%w: %s", client.ErrNoSuchGroup, group)
	}
	return f.conns, nil
}

func (f *fakeAdmin) ResetOffsetByTime(_ context.Context, r client.ResetRequest) ([]client.OffsetReset, error) {
	f.mu.Lock()
	f.resets = append(f.resets, r)
	f.mu.Unlock()
	return []client.OffsetReset{{BrokerName: "broker-a", QueueID: 0, Old: 10, New: 3}, {BrokerName: "broker-a", QueueID: 1, Old: 5, New: 5}}, nil
}

func (f *fakeAdmin) resetsAsked() []client.ResetRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]client.ResetRequest(nil), f.resets...)
}

func (f *fakeAdmin) MessageByID(_ context.Context, _, id string) (*message.Ext, error) {
	for _, m := range f.msgs {
		if m.MsgID() == id || m.OffsetMsgID() == id {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%w: %s", client.ErrNoSuchMessage, id)
}

func (f *fakeAdmin) MessagesByKey(_ context.Context, topic, key string, _ int, _, _ time.Time) ([]*message.Ext, error) {
	var out []*message.Ext
	for _, m := range f.msgs {
		for _, k := range m.Keys() {
			if k == key {
				out = append(out, m)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no message of %s with key %s", client.ErrNoSuchMessage, topic, key)
	}
	return out, nil
}

func (f *fakeAdmin) MessageAtOffset(_ context.Context, _, _ string, q int32, off int64) (*message.Ext, error) {
	for _, m := range f.msgs {
		if m.QueueID == q && m.QueueOffset == off {
			return m, nil
		}
	}
	return nil, client.ErrNoSuchMessage
}

func (f *fakeAdmin) MessagesByTime(context.Context, string, time.Time, time.Time, int) ([]*message.Ext, error) {
	return f.msgs, nil
}
