package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/routing"
)

const (
	// registerTimeout bounds one REGISTER_BROKER or UNREGISTER_BROKER call.
	registerTimeout = 3 * time.Second
	// registerWait bounds how long a topic change waits for the
	// registration that publishes it.
	registerWait = 3 * time.Second
	// metaProposeTimeout bounds one metadata proposal.
	metaProposeTimeout = 5 * time.Second
)

// producerState is the producer and admin side's state on the Broker (the
// field b.prod). Its mutex guards the registration bookkeeping; the
// counters are atomics.
type producerState struct {
	mu sync.Mutex
	// waiters are closed after the next registration round completes.
	waiters []chan struct{}
	// stopped is set when the registration loop has exited: later
	// requests for a registration complete at once.
	stopped bool
	// registered is the broker id this node last registered with (-1:
	// none), so a node that stops being leader or follower unregisters.
	registered int64
	// dataVersion versions the topic table; fingerprint detects changes.
	dataVersion protocol.DataVersion
	fingerprint uint64
	// tps sampling of putTotal, taken on every registration round.
	lastSampleAt  time.Time
	lastSampleSum int64
	putTPS        float64

	// wake asks the registration loop for a round now.
	wake chan struct{}
	// createMu serialises topic creation so concurrent first sends to one
	// topic propose it once.
	createMu sync.Mutex

	putTotal atomic.Int64 // messages stored through this node since start
	bootTime time.Time
}

func newProducerState(now time.Time) *producerState {
	return &producerState{
		registered:   -1,
		wake:         make(chan struct{}, 1),
		bootTime:     now,
		lastSampleAt: now,
	}
}

// requestRegister asks the registration loop for a round at once and
// returns a channel closed when a round that started after the call has
// finished (or the loop has stopped). Safe from any goroutine.
func (b *Broker) requestRegister() <-chan struct{} {
	ch := make(chan struct{})
	p := b.prod
	p.mu.Lock()
	if p.stopped {
		close(ch)
	} else {
		p.waiters = append(p.waiters, ch)
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return ch
}

// registerLoop is the registration goroutine (started by Start, stopped
// by b.ctx; Close waits for it through b.wg). It registers with every name
// server at start, at once on every role change (b.roleCh) or topic change
// (requestRegister), and every RegisterInterval.
func (b *Broker) registerLoop() {
	defer b.wg.Done()
	defer b.stopRegistering()
	ticker := time.NewTicker(b.cfg.RegisterInterval)
	defer ticker.Stop()
	for {
		b.registerRound()
		select {
		case <-b.ctx.Done():
			return
		case <-b.roleCh:
		case <-b.prod.wake:
		case <-ticker.C:
		}
	}
}

// stopRegistering releases every waiter when the loop exits.
func (b *Broker) stopRegistering() {
	p := b.prod
	p.mu.Lock()
	p.stopped = true
	ws := p.waiters
	p.waiters = nil
	p.mu.Unlock()
	for _, w := range ws {
		close(w)
	}
}

// registerRound runs one registration on the loop goroutine: a leader
// first makes sure the TBW102 template, the reply topic (reply.go) and the
// trace topic when enabled (trace.go) are in the replicated metadata, then
// the node registers with every name server, as brokerId 0 once it leads
// and takes writes, else under its own follower id (a candidate too, as
// RocketMQ's DLedger mode keeps it a slave: a node stays listed under its
// id through elections), or unregisters once shut down.
func (b *Broker) registerRound() {
	p := b.prod
	p.mu.Lock()
	ws := p.waiters
	p.waiters = nil
	p.mu.Unlock()
	defer func() {
		for _, w := range ws {
			close(w)
		}
	}()
	b.sampleTPS()

	role := b.group.Role()
	switch role.Role {
	case dledger.RoleLeader:
		b.ensureTemplate()
		b.ensureReplyTopic()
		b.ensureTraceTopic()
		b.registerAll(role)
	case dledger.RoleFollower, dledger.RoleCandidate:
		b.registerAll(role)
	default:
		p.mu.Lock()
		id := p.registered
		p.registered = -1
		p.mu.Unlock()
		if id >= 0 {
			ctx, cancel := context.WithTimeout(b.ctx, registerTimeout)
			b.unregister(ctx, id)
			cancel()
		}
	}
}

// ensureTemplate proposes TBW102 (perm 7, DefaultTopicQueueNums queues)
// when this leader auto-creates topics and the metadata lacks it.
func (b *Broker) ensureTemplate() {
	if !b.cfg.AutoCreateTopic {
		return
	}
	if _, ok := b.group.Metadata().Topic(autoCreateTopic); ok {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, metaProposeTimeout)
	defer cancel()
	tmpl := b.templateConfig()
	// Proposed directly: this runs on the registration loop, which
	// registers the result right after (ensureTopic would wait for it).
	if err := b.group.ProposeMetadata(ctx, metadata.Op{Kind: metadata.OpPutTopic, Topic: &tmpl}); err != nil {
		b.log.Warn("cannot create the auto-create template topic", "topic", autoCreateTopic, "error", err)
	}
}

// templateConfig is TBW102 as this node's configuration defines it.
func (b *Broker) templateConfig() metadata.TopicConfig {
	n := b.cfg.DefaultTopicQueueNums
	return metadata.TopicConfig{TopicName: autoCreateTopic, ReadQueueNums: n, WriteQueueNums: n,
		Perm: metadata.PermRead | metadata.PermWrite | metadata.PermInherit, TopicFilterType: protocol.FilterSingleTag}
}

// topicConfig returns a topic's config as this broker serves it: the
// replicated metadata, with TBW102 supplied from the configuration while
// AutoCreateTopic is on and stripped of PERM_INHERIT while it is off.
func (b *Broker) topicConfig(name string) (metadata.TopicConfig, bool) {
	tc, ok := b.group.Metadata().Topic(name)
	if name == autoCreateTopic {
		switch {
		case b.cfg.AutoCreateTopic && !ok:
			return b.templateConfig(), true
		case !b.cfg.AutoCreateTopic && ok:
			tc.Perm &^= metadata.PermInherit
		}
	}
	return tc, ok
}

// ensureTopic makes sure the topic exists, proposing want when it does not
// (leader only), then waits (bounded) until the name servers have been told.
// It returns the config in force. Safe from any goroutine.
func (b *Broker) ensureTopic(ctx context.Context, want metadata.TopicConfig) (metadata.TopicConfig, error) {
	if tc, ok := b.group.Metadata().Topic(want.TopicName); ok {
		return tc, nil
	}
	if mustNotWait(ctx) {
		return metadata.TopicConfig{}, errWouldWait
	}
	b.prod.createMu.Lock()
	tc, ok := b.group.Metadata().Topic(want.TopicName)
	if !ok {
		if err := b.group.ProposeMetadata(ctx, metadata.Op{Kind: metadata.OpPutTopic, Topic: &want}); err != nil {
			b.prod.createMu.Unlock()
			return metadata.TopicConfig{}, fmt.Errorf("creating topic %s: %w", want.TopicName, err)
		}
		// Logged once: the requests that raced this one find it created.
		b.log.Info("topic created", "topic", want.TopicName, "queues", want.WriteQueueNums)
		tc = want
	}
	b.prod.createMu.Unlock()
	if !ok {
		b.awaitRegister(ctx)
	}
	return tc, nil
}

// awaitRegister asks for a registration round and waits for it, at most
// registerWait or until ctx ends.
func (b *Broker) awaitRegister(ctx context.Context) {
	done := b.requestRegister()
	t := time.NewTimer(registerWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
}

// topicTable is the topic table this node registers and serves to
// GET_ALL_TOPIC_CONFIG: the replicated metadata's topics plus TBW102
// while AutoCreateTopic is on, with its version (Timestamp and Counter
// move whenever the table's content changes; StateVersion is the term).
func (b *Broker) topicTable() ([]protocol.TopicConfig, protocol.DataVersion) {
	meta := b.group.Metadata().Topics()
	out := make([]protocol.TopicConfig, 0, len(meta)+1)
	seenTemplate := false
	for _, t := range meta {
		if t.TopicName == autoCreateTopic {
			seenTemplate = true
			t, _ = b.topicConfig(autoCreateTopic)
		}
		out = append(out, toRouting(t))
	}
	if !seenTemplate && b.cfg.AutoCreateTopic {
		out = append(out, toRouting(b.templateConfig()))
	}
	fp := fingerprint(out)
	p := b.prod
	p.mu.Lock()
	defer p.mu.Unlock()
	if fp != p.fingerprint || p.dataVersion.Timestamp == 0 {
		p.fingerprint = fp
		p.dataVersion.Counter++
		p.dataVersion.Timestamp = b.cfg.Clock().UnixMilli()
	}
	dv := p.dataVersion
	dv.StateVersion = int64(b.group.Role().Term)
	return out, dv
}

func toRouting(t metadata.TopicConfig) protocol.TopicConfig {
	filter := t.TopicFilterType
	if filter == "" {
		filter = protocol.FilterSingleTag
	}
	return protocol.TopicConfig{TopicName: t.TopicName, ReadQueueNums: t.ReadQueueNums, WriteQueueNums: t.WriteQueueNums,
		Perm: t.Perm, TopicFilterType: filter, TopicSysFlag: t.TopicSysFlag, Order: t.Order, Attributes: t.Attributes}
}

// fingerprint hashes a topic table (sorted by name, as metadata returns
// it) to detect changes.
func fingerprint(ts []protocol.TopicConfig) uint64 {
	h := fnv.New64a()
	enc := json.NewEncoder(h)
	for _, t := range ts {
		_ = enc.Encode(t)
	}
	return h.Sum64()
}

// registerAll registers this node with every name server, concurrently,
// and waits for all of them.
func (b *Broker) registerAll(role dledger.RoleEvent) {
	id := b.brokerID(role)
	topics, dv := b.topicTable()
	req := routing.RegisterRequest{
		ClusterName:  b.cfg.ClusterName,
		BrokerName:   b.cfg.BrokerName,
		BrokerAddr:   b.cfg.AdvertiseAddr,
		HAServerAddr: b.cfg.AdvertiseAddr,
		BrokerID:     id,
		Term:         int64(role.Term),
		DataVersion:  dv,
		Topics:       topics,
		Secret:       b.cfg.ClusterSecret,
		Credentials:  b.cfg.NamesrvCredentials,
	}
	var wg sync.WaitGroup
	for _, addr := range b.cfg.NamesrvAddrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(b.ctx, registerTimeout)
			defer cancel()
			if err := routing.RegisterBroker(ctx, b.client, addr, req); err != nil {
				b.log.Warn("registration with name server failed", "namesrv", addr, "brokerId", id, "term", role.Term, "error", err)
			}
		}()
	}
	wg.Wait()
	b.prod.mu.Lock()
	b.prod.registered = id
	b.prod.mu.Unlock()
}

// unregister tells every name server this node (last registered as id)
// is leaving.
func (b *Broker) unregister(ctx context.Context, id int64) {
	req := routing.UnregisterRequest{ClusterName: b.cfg.ClusterName, BrokerName: b.cfg.BrokerName,
		BrokerAddr: b.cfg.AdvertiseAddr, BrokerID: id, Secret: b.cfg.ClusterSecret,
		Credentials: b.cfg.NamesrvCredentials}
	var wg sync.WaitGroup
	for _, addr := range b.cfg.NamesrvAddrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := routing.UnregisterBroker(ctx, b.client, addr, req); err != nil {
				b.log.Warn("unregistration from name server failed", "namesrv", addr, "error", err)
			}
		}()
	}
	wg.Wait()
}

// unregisterAll is called by Close after the registration loop has
// stopped: the node leaves every name server it registered with.
func (b *Broker) unregisterAll(ctx context.Context) {
	p := b.prod
	p.mu.Lock()
	id := p.registered
	p.registered = -1
	p.mu.Unlock()
	if id < 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	b.unregister(ctx, id)
}

// sampleTPS updates the put rate from the counter, once per round.
func (b *Broker) sampleTPS() {
	p := b.prod
	now := b.cfg.Clock()
	sum := p.putTotal.Load()
	p.mu.Lock()
	defer p.mu.Unlock()
	if dt := now.Sub(p.lastSampleAt).Seconds(); dt >= 1 {
		p.putTPS = float64(sum-p.lastSampleSum) / dt
		p.lastSampleAt, p.lastSampleSum = now, sum
	}
}
