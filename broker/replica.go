package broker

import (
	"context"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/store"
)

// The broker reaches its raft group only through the interfaces below,
// each the part of *dledger.Group one concern uses, so that the parts can
// be built and tested over any group (brokertest.StartNode's single-node
// group, or a fake in a unit test) and never reach into raft itself.

// Proposer writes through the group: messages, messages together with a
// metadata op (one entry: a delivery and its progress), metadata alone.
// Each answers after the entry is applied on this node; ProposeAsync
// calls done then instead of waiting (on the group's goroutine that
// answers entries, so done must not block).
type Proposer interface {
	Propose(ctx context.Context, msgs []*message.Ext) ([]store.PutResult, error)
	ProposeAsync(msgs []*message.Ext, done func([]store.PutResult, error))
	// ProposeSend and ProposeSendAsync are Propose and ProposeAsync for a
	// producer's send: a message the group stored within window (its
	// topic and UNIQ_KEY) is answered with that store, not stored again
	// (store.PutResult.Duplicate); a window of 0 is off.
	ProposeSend(ctx context.Context, msgs []*message.Ext, window time.Duration) ([]store.PutResult, error)
	ProposeSendAsync(msgs []*message.Ext, window time.Duration, done func([]store.PutResult, error))
	ProposeWithOp(ctx context.Context, msgs []*message.Ext, op metadata.Op) ([]store.PutResult, error)
	ProposeMetadata(ctx context.Context, op metadata.Op) error
}

// Reader reads this node's replica: committed messages and the replicated
// metadata (topics, groups, offsets, scheduler progress).
type Reader interface {
	Store() MessageStore
	Metadata() *metadata.State
}

// MessageStore is what the broker reads of the committed messages: by
// queue offset, physical offset, key and time, the queues' and the
// CommitLog's bounds. *store.Store implements it (a group opened with
// dledger/messagestore's Opener holds one); writes go through the group
// (Proposer).
type MessageStore interface {
	Get(topic string, queueID int32, offset int64, max int, filter store.Filter) (*store.GetResult, error)
	MessageAt(phy int64) (*message.Ext, error)
	QueryByKey(topic, key string, max int, begin, end int64) ([]*message.Ext, error)
	MinOffset(topic string, queueID int32) (int64, error)
	MaxOffset(topic string, queueID int32) (int64, error)
	OffsetByTime(topic string, queueID int32, ts int64) (int64, error)
	EarliestMessageTime(topic string, queueID int32) (int64, error)
	MinPhysicalOffset() int64
	MaxPhysicalOffset() int64
	FileReservedTime() time.Duration
	// Dir is the store's directory; the timer wheel lives beside it.
	Dir() string
}

// OverGroup is a raft group as the broker uses it: everything of g, the
// store g replicates into as a MessageStore (nil when it is not one: New
// refuses such a replica).
func OverGroup(g *dledger.Group) Replica {
	ms, _ := g.Storage().(MessageStore)
	return groupReplica{Group: g, ms: ms}
}

type groupReplica struct {
	*dledger.Group
	ms MessageStore
}

func (g groupReplica) Store() MessageStore { return g.ms }

// Roles tells what this node is in its group. IsLeader is true only on
// the writable leader (its barrier passed, docs/invariants.md I6); Barrier waits
// until every earlier entry is applied here.
type Roles interface {
	Role() dledger.RoleEvent
	IsLeader() bool
	// RoleChanged is closed at the next role event (take it before reading
	// Role or IsLeader, then wait on it).
	RoleChanged() <-chan struct{}
	Barrier(ctx context.Context) error
}

// GroupAdmin is the membership and leadership side, used only by the raft
// admin requests (raftadmin.go), and the group's settings
// (UPDATE_BROKER_CONFIG, brokerconfig.go).
type GroupAdmin interface {
	ProposeSettings(ctx context.Context, s metadata.Settings) error
	Status() dledger.Status
	Members() ([]dledger.Member, error)
	AddVoter(ctx context.Context, id, addr string) error
	AddNonvoter(ctx context.Context, id, addr string) error
	RemoveNode(ctx context.Context, id string) error
	TransferLeadership(ctx context.Context, to string) error
	Drain(ctx context.Context) error
	Undrain() error
}

// Replica is everything the broker uses of its raft group.
type Replica interface {
	Proposer
	Reader
	Roles
	GroupAdmin
}

// groupView is what the long-running parts read of the group: the replica
// and who leads it.
type groupView interface {
	Reader
	Roles
}

var _ Replica = groupReplica{}
