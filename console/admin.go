package console

import (
	"context"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
)

// Admin is the part of the admin API (*client.Admin) the console uses.
// Handler tests that need no cluster give the server a fake.
type Admin interface {
	ClusterList(ctx context.Context) ([]client.MemberStatus, error)
	Health(ctx context.Context, maxLag uint64) (*client.HealthReport, error)
	// BrokerConfig is read for a node's http_addr (its /status and /metrics).
	BrokerConfig(ctx context.Context, addr string) (map[string]string, error)
	// RaftStatus is one node's raft view: its group's format version and
	// its replica verifier's findings.
	RaftStatus(ctx context.Context, addr string) (protocol.RaftStatus, error)
	// BrokerRuntime is read for the ACL in force on a node (aclHash,
	// aclIndex, aclFrom, aclFileHash).
	BrokerRuntime(ctx context.Context, addr string) (map[string]string, error)
	// BrokerStats is read for a topic's put rate (its groups' leaders'
	// TOPIC_PUT_NUMS).
	BrokerStats(ctx context.Context, addr, name, key string) (protocol.BrokerStatsData, error)
	// ClusterACLConfig is read for a group's accounts (the ACL page).
	ClusterACLConfig(ctx context.Context, addr string) (protocol.ClusterACLConfig, error)

	PendingTimers(ctx context.Context, group string, limit int) (protocol.PendingTimers, error)
	PendingTransactions(ctx context.Context, group string, limit int) (protocol.PendingTransactions, error)
	// PopState is a broker group's POP state per consumer group and topic
	// (the pending page).
	PopState(ctx context.Context, brokerGroup string, h protocol.PopStateHeader) (protocol.PopState, error)

	ListTopics(ctx context.Context) ([]string, error)
	TopicRoute(ctx context.Context, topic string) (*protocol.TopicRouteData, error)
	TopicStatus(ctx context.Context, topic string) ([]client.QueueStatus, error)

	ListGroups(ctx context.Context, t client.Target) ([]client.BrokerGroupConfig, error)
	ConsumerProgress(ctx context.Context, group, topic string) (*client.Progress, error)
	ConsumerConnections(ctx context.Context, group string) (*client.ConsumerConnections, error)
	ResetOffsetByTime(ctx context.Context, r client.ResetRequest) ([]client.OffsetReset, error)

	MessageByID(ctx context.Context, topic, id string) (*message.Ext, error)
	MessagesByKey(ctx context.Context, topic, key string, maxNum int, begin, end time.Time) ([]*message.Ext, error)
	MessageAtOffset(ctx context.Context, topic, brokerName string, queueID int32, offset int64) (*message.Ext, error)
	MessagesByTime(ctx context.Context, topic string, begin, end time.Time, maxNum int) ([]*message.Ext, error)
	MessageTrace(ctx context.Context, traceTopic, msgID string) ([]client.TraceEvent, error)
}

// *client.Admin is the console's Admin.
var _ Admin = (*client.Admin)(nil)
