package broker

// Test-only access for the external tests (package broker_test), which
// drive real broker groups through broker/brokertest and so cannot be
// internal tests: brokertest imports this package. The helpers below are
// shared by the internal and the external tests.

import (
	"context"
	"encoding/binary"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/testwait"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// encodeBatchItem encodes one item exactly as rocketmq-client-go's
// encodeMessage does: size, magic 0, body CRC 0, flag, body, properties.
func encodeBatchItem(flag int32, body []byte, props map[string]string) []byte {
	p := message.EncodeProperties(props)
	out := make([]byte, 0, batchItemMin+len(body)+len(p))
	out = binary.BigEndian.AppendUint32(out, uint32(batchItemMin+len(body)+len(p)))
	out = binary.BigEndian.AppendUint32(out, 0)
	out = binary.BigEndian.AppendUint32(out, 0)
	out = binary.BigEndian.AppendUint32(out, uint32(flag))
	out = binary.BigEndian.AppendUint32(out, uint32(len(body)))
	out = append(out, body...)
	out = binary.BigEndian.AppendUint16(out, uint16(len(p)))
	return append(out, p...)
}

// capturedBatch is the shape of the captured Go client batch: two items
// of 39 bytes, batch-1/TagA and batch-2/TagC.
func capturedBatch() []byte {
	return append(encodeBatchItem(0, []byte("batch-1"), map[string]string{"TAGS": "TagA"}),
		encodeBatchItem(0, []byte("batch-2"), map[string]string{"TAGS": "TagC"})...)
}

const testWait = 20 * time.Second

// waitFor polls cond until it holds or testWait passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitUntil(t, testWait, what, cond)
}

// waitUntil polls cond until it holds or the timeout passes.
func waitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, timeout, what, cond)
}

// sendRequest is a SEND_MESSAGE exactly as rocketmq-client-go builds it.
func sendRequest(topic string, queueID int, props map[string]string, body string) *remoting.Command {
	ext := map[string]string{
		"producerGroup":         "pg1",
		"topic":                 topic,
		"queueId":               strconv.Itoa(queueID),
		"sysFlag":               "0",
		"bornTimestamp":         strconv.FormatInt(time.Now().UnixMilli(), 10),
		"flag":                  "0",
		"reconsumeTimes":        "0",
		"unitMode":              "false",
		"maxReconsumeTimes":     "0",
		"defaultTopic":          "TBW102",
		"defaultTopicQueueNums": "4",
		"batch":                 "false",
		"properties":            string(message.EncodeProperties(props)),
		"bname":                 "broker-a",
	}
	return remoting.NewRequest(remoting.SendMessage, ext, []byte(body))
}

// batchRequest is a SEND_BATCH_MESSAGE with the short header, as the Go
// client sends it.
func batchRequest(topic string, queueID int, body []byte) *remoting.Command {
	ext := map[string]string{
		"a": "pg1", "b": topic, "c": "TBW102", "d": "4", "e": strconv.Itoa(queueID), "f": "0",
		"g": strconv.FormatInt(time.Now().UnixMilli(), 10), "h": "0", "i": "", "j": "0",
		"k": "false", "l": "0", "m": "true", "n": "broker-a",
	}
	return remoting.NewRequest(remoting.SendBatchMessage, ext, body)
}

// The shared helpers, as the external tests reach them.
var (
	WaitUntil       = waitUntil
	WaitFor         = waitFor
	SendRequest     = sendRequest
	BatchRequest    = batchRequest
	EncodeBatchItem = encodeBatchItem
	CapturedBatch   = capturedBatch
)

// TestWait is how long the tests wait for a condition.
const TestWait = testWait

// Unexported names the external tests use: wire shapes, flags and the
// steps of Close.
type (
	CloseStep                = closeStep
	ConsumerData             = consumerData
	ConsumerListBody         = protocol.ConsumerListBody
	HeartbeatData            = heartbeatData
	KVTable                  = protocol.KVTable
	LockBatchBody            = protocol.LockBatchBody
	LockBatchResult          = protocol.LockBatchResult
	MQJSON                   = mqJSON
	PullHeader               = pullHeader
	SubscriptionData         = subscriptionData
	SubscriptionGroupWrapper = protocol.SubscriptionGroupWrapper
)

const (
	CloseDrained         = closeDrained
	CloseUnregistered    = closeUnregistered
	ExtForwardedFrom     = extForwardedFrom
	ExtForwardHops       = extForwardHops
	MaxForwardHops       = maxForwardHops
	MaxLockGroupLen      = maxLockGroupLen
	PullFlagCommitOffset = pullFlagCommitOffset
	PullFlagSubscription = pullFlagSubscription
	PullFlagSuspend      = pullFlagSuspend
	ScheduleGroup        = scheduleGroup
	ScheduleTopic        = scheduleTopic
)

var DefaultSubscriptionGroup = defaultSubscriptionGroup

// GroupForTest is the raft group the broker serves.
func (b *Broker) GroupForTest() Replica { return b.group }

// SetCloseHookForTest makes Close call hook after each of its steps. Set
// it before Close starts.
func (b *Broker) SetCloseHookForTest(hook func(closeStep)) { b.closeHook = hook }

// CommitOffsetForTest hands an offset update to the committer, as an
// UPDATE_CONSUMER_OFFSET request does.
func (b *Broker) CommitOffsetForTest(group, topic string, queueID int32, offset int64, forwardedBy string) {
	b.offsets.commit(group, topic, queueID, offset, forwardedBy)
}

// ProducerConnsForTest is the connections of a producer group's clients.
func (b *Broker) ProducerConnsForTest(group string) []*remoting.Conn {
	return b.consumers.producerConns(group)
}

// ExpireConsumersForTest forgets the clients silent at now and returns
// the consumer groups that changed.
func (b *Broker) ExpireConsumersForTest(now time.Time) []string { return b.consumers.expire(now) }

// ConsumerClientIDsForTest is a consumer group's client ids.
func (b *Broker) ConsumerClientIDsForTest(group string) []string {
	return b.consumers.clientIDs(group)
}

// NotifyGroupsForTest tells the groups' clients, except one, that the
// group changed.
func (b *Broker) NotifyGroupsForTest(groups []string, except string) {
	b.consumers.notifyGroups(groups, except)
}

// LockTableSizeForTest is the queue leases held and the groups holding them.
func (b *Broker) LockTableSizeForTest() (leases, groups int) { return b.locks.size() }

// HeldPullsForTest is how many pulls long polling holds now.
func (b *Broker) HeldPullsForTest() int64 { return b.pulls.held.Load() }

// HeldPullOffsetsForTest is where each pull held for a queue reads next.
func (b *Broker) HeldPullOffsetsForTest(topic string, queueID int32) []int64 {
	b.pulls.mu.Lock()
	defer b.pulls.mu.Unlock()
	var out []int64
	for p := range b.pulls.byQueue[pullKey{topic, queueID}] {
		out = append(out, p.offset)
	}
	slices.Sort(out)
	return out
}

// ReloadACLForTest runs one round of the ACL reload loop now.
func (b *Broker) ReloadACLForTest() { b.reloadACL() }

// ACLPendingForTest reports whether a change of the ACL file waits to be
// proposed, and how many the group accepted.
func (b *Broker) ACLPendingForTest() (bool, uint64) {
	b.acl.mu.Lock()
	defer b.acl.mu.Unlock()
	return b.acl.pending != nil, b.acl.proposed.Load()
}

// HandlerCodesForTest lists the request codes of the handler table.
func HandlerCodesForTest() []int32 {
	var codes []int32
	for _, r := range (&Broker{}).handlers() {
		codes = append(codes, r.code)
	}
	return codes
}

// PopWaitingForTest is the number of POP receives waiting now.
func (b *Broker) PopWaitingForTest() int64 { return b.pop.waiting.Load() }

// PopReviveRoundsForTest is the number of revive rounds this node ended
// as the leader.
func (b *Broker) PopReviveRoundsForTest() uint64 { return b.pop.reviveRounds.Load() }

// SetPopDeadLetterHookForTest has hook run after each POP dead letter is
// stored, before its receipt is deleted; when it answers true the leader
// stops there (as one that fails between the two raft entries).
func (b *Broker) SetPopDeadLetterHookForTest(hook func(ctx context.Context) bool) {
	b.pop.deadLetterHook.Store(&hook)
}
