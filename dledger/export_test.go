package dledger

// Test-only access for the external tests (package dledger_test), which
// drive real groups through dledger/dledgertest and so cannot be internal
// tests: dledgertest imports this package.

import (
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/message"
)

var testBorn = netip.MustParseAddrPort("127.0.0.1:50000")

func testMsg(topic string, q int32, body string) *message.Ext {
	m := &message.Ext{
		Message:       message.Message{Topic: topic, Body: []byte(body)},
		QueueID:       q,
		BornTimestamp: 1_700_000_000_000,
		BornHost:      testBorn,
	}
	m.SetProperty(message.PropertyTags, "TagA")
	m.SetProperty(message.PropertyKeys, body)
	return m
}

// Unexported names the external tests use.
var (
	TestBorn              = testBorn
	NewTestMsg            = testMsg
	EncodeCheckpointEntry = encodeCheckpointEntry
	DecodeNodeInfo        = decodeNodeInfo
)

const (
	EntryVersion     = entryVersion
	FormatVersionMax = formatVersionMax
)

// NodeInfo is what a node reports of itself to its peers.
type NodeInfo = nodeInfo

// WALForTest is the node's raft log.
func (g *Group) WALForTest() raft.LogStore { return g.logs }

// DelayLevelsForTest is the delay levels the node runs with.
func (g *Group) DelayLevelsForTest() string { return g.cfg.DelayLevels }

// SetAfterApplyForTest makes the FSM call hook after each entry it applies.
func (g *Group) SetAfterApplyForTest(hook *func(index uint64)) { g.fsm.afterApply.Store(hook) }

// VersionChecksForTest counts the leader's checks of its members' versions.
func (g *Group) VersionChecksForTest() *atomic.Uint64 { return &g.versionChecks }

// LeaderGoneForTest returns how often this node found its leader gone and
// how often it then campaigned early (leadergone.go).
func (g *Group) LeaderGoneForTest() (seen, early uint64) {
	return g.leaderGoneSeen.Load(), g.earlyCampaigns.Load()
}

// ProposerStatsForTest is how many entries and messages the batcher proposed.
func (g *Group) ProposerStatsForTest() (entries, messages *atomic.Uint64) {
	return &g.prop.entries, &g.prop.messages
}

// AskNodeInfoForTest asks the node at addr, over this node's transport,
// which format versions it supports.
func (g *Group) AskNodeInfoForTest(addr string, timeout time.Duration) (NodeInfo, error) {
	return g.mux.askNodeInfo(addr, timeout)
}

// SetBeforeObserveForTest makes a node started with cfg call hook between
// raft's start and the registration of its role observer.
func SetBeforeObserveForTest(cfg *Config, hook func(nodeID string, r *raft.Raft)) {
	cfg.beforeObserve = hook
}

// ConvertStep and its values name the steps of a conversion to one log.
type ConvertStep = convertStep

const (
	ConvertSnapshot = convertSnapshot
	ConvertDone     = convertDone
)

// SetConvertStopForTest makes a conversion to one log stop (as a crash
// would) after each step stop returns true for.
func SetConvertStopForTest(cfg *Config, stop func(ConvertStep) bool) { cfg.convertStop = stop }

// DoubtForTest makes (topic, key) a doubted key, as an entry of unknown
// outcome leaves it; ClearDoubtsForTest settles the doubts as a node
// that becomes leader does.
func (g *Group) DoubtForTest(topic, key string) {
	ids := []dupID{{topic, key}}
	g.prop.pending.add(ids)
	g.prop.pending.doubt(ids)
}

func (g *Group) ClearDoubtsForTest() { g.prop.pending.clearDoubts() }
