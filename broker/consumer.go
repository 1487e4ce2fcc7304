package broker

// The consumer side of the broker: HEART_BEAT (34), UNREGISTER_CLIENT (35)
// and GET_CONSUMER_LIST_BY_GROUP (38) here, PULL_MESSAGE (11) with long
// polling in pull.go, the offset requests (14, 15, 29–32) and the coalescing
// offset committer in offsets.go.
//
// Goroutines of the consumer side, each owned by its part (Start, Stop;
// parts.go), started by Broker.Start and stopped by Broker.Close, each at
// its step (broker.go):
//
//	goroutine              owner, stopped by          does
//	---------------------  -------------------------  ----------------------------
//	consumerManager.loop   consumerManager.Stop       NOTIFY_CONSUMER_IDS_CHANGED
//	                       (after the drain)          sends, client expiry (every
//	                                                  10 s), metadata auto-creation
//	                                                  (leader only)
//	pullHolder.loop        pullHolder.Stop (before    wakes held pulls (notify)
//	                       the server closes)         and times them out
//	pullHolder.worker ×4   pullHolder.Stop            re-runs woken pulls, answers
//	offsetCommitter.loop   offsetCommitter.Stop       every 100 ms: one
//	                       (last; flushes once more)  OpCommitOffsets entry (leader)
//	                                                  or a forward (follower)
//
// Handlers run on the remoting pools: 34 and 35 on "heartbeat"; 11, 14, 15,
// 29–32 and 38 on "pull" (none of them blocks: a pull with nothing to return
// is parked in the pullHolder and its handler returns nil).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

const (
	// clientExpiry drops a client not heard from for this long (Java
	// channelExpiredTimeout).
	clientExpiry = 120 * time.Second
	// clientScanInterval is how often expired clients are looked for.
	clientScanInterval = 10 * time.Second
	// notifyQueueSize bounds pending NOTIFY_CONSUMER_IDS_CHANGED sends;
	// beyond it a notification is dropped (clients rebalance every 20 s
	// anyway).
	notifyQueueSize = 1024
	// metadataTimeout bounds one auto-creation proposal.
	metadataTimeout = 5 * time.Second
)

// --- HEART_BEAT body --------------------------------------------------------

// The HEART_BEAT body is protocol's HeartbeatData, the one our client
// encodes. Its codeSet is not read: the broker derives the tag hashes
// from subString itself.
type (
	heartbeatData    = protocol.HeartbeatData
	consumerData     = protocol.ConsumerData
	subscriptionData = protocol.SubscriptionData
)

const (
	messageModelBroadcasting = "BROADCASTING"
	expressionTypeTag        = "TAG"
)

// decodeHeartbeat parses and checks a HEART_BEAT body (protocol's rules
// and bounds). Errors wrap ErrBadRequest; no input makes it panic. Group
// names are checked by dropInvalidGroups, group by group.
func decodeHeartbeat(body []byte) (*heartbeatData, error) {
	hb, err := protocol.DecodeHeartbeat(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return hb, nil
}

// dropInvalidGroups removes the consumer groups whose names validateGroup
// refuses and returns why (wrapping ErrInvalidParameter), or nil. One
// client process heartbeats all its consumers at once: a group that cannot
// hold retries is refused without keeping the others from registering.
func dropInvalidGroups(hb *heartbeatData) error {
	const named = 3 // the answer's remark names a few, and counts the rest
	var errs []error
	n := 0
	hb.ConsumerDataSet = slices.DeleteFunc(hb.ConsumerDataSet, func(c consumerData) bool {
		err := validateGroup(c.GroupName)
		if err != nil {
			if n++; n <= named {
				errs = append(errs, err)
			}
		}
		return err != nil
	})
	if n > named {
		errs = append(errs, fmt.Errorf("%w: %d more consumer groups refused", ErrInvalidParameter, n-named))
	}
	return errors.Join(errs...)
}

// --- the client table -------------------------------------------------------

// clientConn is one client instance (a clientID) of a group and the
// connection it last heartbeated on.
type clientConn struct {
	id       string
	conn     *remoting.Conn
	lastSeen time.Time
	// language and version are the heartbeat request's (remoting header),
	// what admin tools show of a connection.
	language string
	version  int16
}

// clientInfo is what a heartbeat says of the client beyond its body.
type clientInfo struct {
	language string
	version  int16
}

// seen refreshes c from a heartbeat.
func (c *clientConn) seen(conn *remoting.Conn, now time.Time, info clientInfo) {
	c.conn, c.lastSeen, c.language, c.version = conn, now, info.language, info.version
}

// subscription is a group's subscription to one topic, from the newest
// heartbeat; filter is built once from the expression.
type subscription struct {
	expr     string
	exprType string
	version  int64
	filter   msgFilter
	err      error // the expression does not compile: pulls answer with it
}

// consumerGroupInfo is what the broker knows of one consumer group (Java
// ConsumerGroupInfo).
type consumerGroupInfo struct {
	consumeType      string
	messageModel     string
	consumeFromWhere string
	clients          map[string]*clientConn
	subs             map[string]subscription
}

// notifyEvent asks the manager's goroutine to send NOTIFY_CONSUMER_IDS_CHANGED
// to every connection of group except the client except.
type notifyEvent struct {
	group  string
	except string
	conns  []*remoting.Conn
}

// consumerManager is the consumer and producer table fed by heartbeats.
// All methods are safe for concurrent use; loop is its one goroutine,
// started by Start and ended by Stop.
type consumerManager struct {
	lifecycle
	consumerDeps

	mu        sync.Mutex
	groups    map[string]*consumerGroupInfo
	producers map[string]map[string]*clientConn // group → clientID → conn
	// requesters: the connection each requester's request messages came
	// over (requesters.go), at most maxRequesters.
	requesters map[string]*clientConn

	notifyCh chan notifyEvent
	// ensure holds groups whose subscription group or retry topic may
	// need creating; ensureCh wakes run.
	ensureMu sync.Mutex
	ensure   map[string]struct{}
	ensureCh chan struct{}
}

// consumerGroup is what the manager uses of the raft group: the leader
// creates subscription groups and retry topics.
type consumerGroup interface {
	ProposeMetadata(ctx context.Context, op metadata.Op) error
	Metadata() *metadata.State
	IsLeader() bool
}

// consumerDeps are what the manager needs from the broker.
type consumerDeps struct {
	group consumerGroup
	log   hclog.Logger
	now   func() time.Time
	// sqlEnabled: SQL92 subscriptions are served (not
	// Config.DisablePropertyFilter); autoCreateGroup is
	// Config.AutoCreateSubscriptionGroup.
	sqlEnabled      bool
	autoCreateGroup bool
	// published asks the registration loop to publish new topics now
	// (retry topics it created); it must not block.
	published func()
}

func newConsumerManager(d consumerDeps) *consumerManager {
	return &consumerManager{
		consumerDeps: d,
		groups:       map[string]*consumerGroupInfo{},
		producers:    map[string]map[string]*clientConn{},
		requesters:   map[string]*clientConn{},
		notifyCh:     make(chan notifyEvent, notifyQueueSize),
		ensure:       map[string]struct{}{},
		ensureCh:     make(chan struct{}, 1),
	}
}

// register records one heartbeat from conn. It returns the groups whose
// membership changed (a new clientID joined).
func (m *consumerManager) register(conn *remoting.Conn, hb heartbeatData, info clientInfo) []string {
	now := m.now()
	var joined []string
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, cd := range hb.ConsumerDataSet {
		g := m.groups[cd.GroupName]
		if g == nil {
			g = &consumerGroupInfo{clients: map[string]*clientConn{}, subs: map[string]subscription{}}
			m.groups[cd.GroupName] = g
		}
		g.consumeType, g.messageModel, g.consumeFromWhere = cd.ConsumeType, cd.MessageModel, cd.ConsumeFromWhere
		if c := g.clients[hb.ClientID]; c != nil {
			c.seen(conn, now, info)
		} else {
			c = &clientConn{id: hb.ClientID}
			c.seen(conn, now, info)
			g.clients[hb.ClientID] = c
			joined = append(joined, cd.GroupName)
		}
		seen := make(map[string]bool, len(cd.SubscriptionDataSet))
		for _, sd := range cd.SubscriptionDataSet {
			seen[sd.Topic] = true
			if old, ok := g.subs[sd.Topic]; ok && old.version >= sd.SubVersion && old.expr == sd.SubString && old.exprType == sd.ExpressionType {
				continue
			}
			g.subs[sd.Topic] = m.newSubscription(sd)
		}
		for topic := range g.subs {
			if !seen[topic] {
				delete(g.subs, topic)
			}
		}
	}
	for _, pd := range hb.ProducerDataSet {
		p := m.producers[pd.GroupName]
		if p == nil {
			p = map[string]*clientConn{}
			m.producers[pd.GroupName] = p
		}
		c := p[hb.ClientID]
		if c == nil {
			c = &clientConn{id: hb.ClientID}
			p[hb.ClientID] = c
		}
		c.seen(conn, now, info)
	}
	return joined
}

func (m *consumerManager) newSubscription(sd subscriptionData) subscription {
	expr := sd.SubString
	if expr == "" && len(sd.TagsSet) > 0 {
		expr = joinTags(sd.TagsSet)
	}
	f, err := newMsgFilter(expr, sd.ExpressionType, m.sqlEnabled)
	return subscription{expr: expr, exprType: sd.ExpressionType, version: sd.SubVersion, filter: f, err: err}
}

func joinTags(tags []string) string { return strings.Join(tags, " || ") }

// unregister removes clientID from the named groups (UNREGISTER_CLIENT)
// and returns the consumer groups it left.
func (m *consumerManager) unregister(clientID, consumerGroup, producerGroup string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.producers[producerGroup]; p != nil {
		delete(p, clientID)
		if len(p) == 0 {
			delete(m.producers, producerGroup)
		}
	}
	if g := m.groups[consumerGroup]; g != nil {
		if _, ok := g.clients[clientID]; ok {
			delete(g.clients, clientID)
			m.dropEmptyLocked(consumerGroup, g)
			return []string{consumerGroup}
		}
	}
	return nil
}

// removeIf drops every client for which gone returns true and returns the
// consumer groups that lost a member.
func (m *consumerManager) removeIf(gone func(*clientConn) bool) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var left []string
	for name, g := range m.groups {
		changed := false
		for id, c := range g.clients {
			if gone(c) {
				delete(g.clients, id)
				changed = true
			}
		}
		if changed {
			left = append(left, name)
			m.dropEmptyLocked(name, g)
		}
	}
	for name, p := range m.producers {
		for id, c := range p {
			if gone(c) {
				delete(p, id)
			}
		}
		if len(p) == 0 {
			delete(m.producers, name)
		}
	}
	for id, c := range m.requesters {
		if gone(c) {
			delete(m.requesters, id)
		}
	}
	slices.Sort(left)
	return left
}

func (m *consumerManager) dropEmptyLocked(name string, g *consumerGroupInfo) {
	if len(g.clients) == 0 {
		delete(m.groups, name)
	}
}

// dropConn forgets the clients that used conn; called when it closes.
func (m *consumerManager) dropConn(conn *remoting.Conn) []string {
	return m.removeIf(func(c *clientConn) bool { return c.conn == conn })
}

// expire forgets clients not heard from since now-clientExpiry and returns
// the consumer groups that lost a member.
func (m *consumerManager) expire(now time.Time) []string {
	return m.removeIf(func(c *clientConn) bool { return now.Sub(c.lastSeen) > clientExpiry })
}

// clientIDs is a group's consumer list, sorted (every broker must answer
// the same list for the clients' allocation to agree).
func (m *consumerManager) clientIDs(group string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[group]
	if g == nil {
		return []string{}
	}
	ids := make([]string, 0, len(g.clients))
	for id := range g.clients {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// clientConn returns the connection of a group's client, or nil when this
// node holds no heartbeat of it.
func (m *consumerManager) clientConn(group, clientID string) *remoting.Conn {
	m.mu.Lock()
	defer m.mu.Unlock()
	if g := m.groups[group]; g != nil {
		if c := g.clients[clientID]; c != nil {
			return c.conn
		}
	}
	return nil
}

// subscribesElsewhere reports whether the group's online consumers (this
// node's heartbeats) subscribe to some topics but not to topic.
func (m *consumerManager) subscribesElsewhere(group, topic string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[group]
	if g == nil || len(g.subs) == 0 {
		return false
	}
	_, ok := g.subs[topic]
	return !ok
}

// subscription returns a group's subscription to topic from its heartbeats.
func (m *consumerManager) subscription(group, topic string) (subscription, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if g := m.groups[group]; g != nil {
		s, ok := g.subs[topic]
		return s, ok
	}
	return subscription{}, false
}

// producerClients lists a producer group's clients with a live
// connection, sorted by clientID.
func (m *consumerManager) producerClients(group string) []clientConn {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.producers[group]
	out := make([]clientConn, 0, len(p))
	for _, c := range p {
		if c.conn != nil && !c.conn.Closed() {
			out = append(out, *c)
		}
	}
	slices.SortFunc(out, func(a, b clientConn) int { return strings.Compare(a.id, b.id) })
	return out
}

// producerConns lists the live connections of a producer group's clients,
// sorted by clientID (transaction checks pick one of them).
func (m *consumerManager) producerConns(group string) []*remoting.Conn {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.producers[group]
	ids := make([]string, 0, len(p))
	for id := range p {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]*remoting.Conn, 0, len(ids))
	for _, id := range ids {
		if c := p[id].conn; !c.Closed() {
			out = append(out, c)
		}
	}
	return out
}

// notifyGroups queues NOTIFY_CONSUMER_IDS_CHANGED for the given groups,
// to every member but except. It never blocks: a full queue drops the
// notification with a log line.
func (m *consumerManager) notifyGroups(groups []string, except string) {
	for _, name := range groups {
		conns := m.notifyTargets(name, except)
		if len(conns) == 0 {
			continue
		}
		select {
		case m.notifyCh <- notifyEvent{group: name, except: except, conns: conns}:
		default:
			m.log.Warn("consumer-ids notification dropped: queue full", "group", name)
		}
	}
}

// notifyTargets are the connections to notify about a change in group:
// none for a broadcasting group or one whose config disables it.
func (m *consumerManager) notifyTargets(name, except string) []*remoting.Conn {
	if cfg, ok := m.group.Metadata().Group(name); ok && !cfg.NotifyConsumerIdsChangedEnable {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[name]
	if g == nil || g.messageModel == messageModelBroadcasting {
		return nil
	}
	var conns []*remoting.Conn
	for id, c := range g.clients {
		if id != except && !slices.Contains(conns, c.conn) {
			conns = append(conns, c.conn)
		}
	}
	return conns
}

// requestEnsure asks run to create the group's subscription group and
// retry topic if they are missing (leader only).
func (m *consumerManager) requestEnsure(groups []string) {
	if len(groups) == 0 {
		return
	}
	m.ensureMu.Lock()
	for _, g := range groups {
		m.ensure[g] = struct{}{}
	}
	m.ensureMu.Unlock()
	select {
	case m.ensureCh <- struct{}{}:
	default:
	}
}

// Start runs the manager's goroutine until Stop.
func (m *consumerManager) Start() { m.run(m.loop) }

// Stop ends the manager's goroutine; queued notifications are dropped.
func (m *consumerManager) Stop() { m.halt() }

// loop is the manager's goroutine: notifications, expiry and auto-creation.
func (m *consumerManager) loop(ctx context.Context) {
	t := time.NewTicker(clientScanInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-m.notifyCh:
			m.sendNotify(ev)
		case <-t.C:
			m.notifyGroups(m.expire(m.now()), "")
		case <-m.ensureCh:
			m.ensureMetadata(ctx)
		}
	}
}

func (m *consumerManager) sendNotify(ev notifyEvent) {
	cmd := (&protocol.NotifyConsumerIdsChangedRequestHeader{ConsumerGroup: ev.group}).Request()
	for _, c := range ev.conns {
		if c.Closed() {
			continue
		}
		if err := c.Oneway(cmd); err != nil {
			m.log.Debug("consumer-ids notification failed", "group", ev.group, "peer", c.RemoteAddr(), "error", err)
		}
	}
}

// ensureMetadata creates missing subscription groups (when
// AutoCreateSubscriptionGroup) and their %RETRY% topics (1 queue per
// retryQueueNums, perm read|write), as Java's heartbeat does, and then asks
// the registration loop to publish the new topics at once. Only the leader
// proposes; a follower forgets the request (the client heartbeats the leader
// too).
func (m *consumerManager) ensureMetadata(ctx context.Context) {
	m.ensureMu.Lock()
	groups := make([]string, 0, len(m.ensure))
	for g := range m.ensure {
		groups = append(groups, g)
	}
	clear(m.ensure)
	m.ensureMu.Unlock()
	if !m.group.IsLeader() {
		return
	}
	slices.Sort(groups)
	md := m.group.Metadata()
	created := false
	for _, name := range groups {
		// Heartbeats refuse such names; a group already in the metadata
		// (from an older binary) must still not get a topic over the limit.
		if err := validateGroup(name); err != nil {
			m.log.Warn("not creating metadata for a group whose retry topic would be illegal", "error", err)
			continue
		}
		cfg, ok := md.Group(name)
		if !ok {
			if !m.autoCreateGroup {
				continue
			}
			cfg = defaultSubscriptionGroup(name)
			if err := m.propose(ctx, metadata.Op{Kind: metadata.OpPutGroup, Group: &cfg}); err != nil {
				m.log.Warn("auto-creating subscription group failed", "group", name, "error", err)
				continue
			}
		}
		rt := protocol.RetryTopic(name)
		if _, ok := md.Topic(rt); ok {
			continue
		}
		n := max(cfg.RetryQueueNums, 1)
		tc := metadata.TopicConfig{TopicName: rt, ReadQueueNums: n, WriteQueueNums: n,
			Perm: metadata.PermRead | metadata.PermWrite, TopicFilterType: "SINGLE_TAG"}
		if err := m.propose(ctx, metadata.Op{Kind: metadata.OpPutTopic, Topic: &tc}); err != nil {
			m.log.Warn("creating retry topic failed", "topic", rt, "error", err)
			continue
		}
		created = true
	}
	if created {
		m.published()
	}
}

func (m *consumerManager) propose(ctx context.Context, op metadata.Op) error {
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	return m.group.ProposeMetadata(ctx, op)
}

// defaultSubscriptionGroup is Java SubscriptionGroupConfig's defaults.
func defaultSubscriptionGroup(name string) metadata.SubscriptionGroup {
	return metadata.SubscriptionGroup{
		GroupName:                      name,
		ConsumeEnable:                  true,
		ConsumeFromMinEnable:           true,
		ConsumeBroadcastEnable:         true,
		RetryQueueNums:                 1,
		RetryMaxTimes:                  16,
		BrokerID:                       0,
		WhichBrokerWhenConsumeSlowly:   1,
		NotifyConsumerIdsChangedEnable: true,
	}
}

// --- handlers ----------------------------------------------------------------

// handleHeartbeat serves HEART_BEAT (34). Followers record clients too, so a
// new leader already knows them; only the leader creates metadata.
func (b *Broker) handleHeartbeat(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	hb, err := decodeHeartbeat(req.Body)
	if err != nil {
		return errorResponse(req, err)
	}
	refused := dropInvalidGroups(hb)
	joined := b.consumers.register(conn, *hb, clientInfo{language: req.Language, version: req.Version})
	b.consumers.notifyGroups(joined, hb.ClientID)
	groups := make([]string, 0, len(hb.ConsumerDataSet))
	md := b.group.Metadata()
	for _, cd := range hb.ConsumerDataSet {
		_, haveGroup := md.Group(cd.GroupName)
		_, haveRetry := md.Topic(protocol.RetryTopic(cd.GroupName))
		if !haveGroup || !haveRetry {
			groups = append(groups, cd.GroupName)
		}
	}
	if b.group.IsLeader() {
		b.consumers.requestEnsure(groups)
	}
	if refused != nil {
		// The Go client only logs a failed heartbeat: the operator sees why.
		return errorResponse(req, refused)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.SetExt("IS_SUPPORT_HEART_BEAT_V2", "false")
	return resp
}

// handleUnregisterClient serves UNREGISTER_CLIENT (35): ext clientID and
// optionally producerGroup and consumerGroup.
func (b *Broker) handleUnregisterClient(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.UnregisterClientRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return errorResponse(req, err)
	}
	left := b.consumers.unregister(h.ClientID, h.ConsumerGroup, h.ProducerGroup)
	b.consumers.notifyGroups(left, "")
	return remoting.NewResponse(req, remoting.Success, "")
}

// handleGetConsumerList serves GET_CONSUMER_LIST_BY_GROUP (38). The Go client
// reads the body whatever the code, so the body always carries the list;
// an unknown or empty group is Java's SYSTEM_ERROR "no consumer for this
// group" with an empty list.
func (b *Broker) handleGetConsumerList(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.GetConsumerListByGroupRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		resp := errorResponse(req, err)
		resp.Body, _ = (&protocol.ConsumerListBody{ConsumerIDList: []string{}}).Encode()
		return resp
	}
	group := h.ConsumerGroup
	ids := b.consumers.clientIDs(group)
	body, _ := (&protocol.ConsumerListBody{ConsumerIDList: ids}).Encode() // cannot fail: strings only
	resp := remoting.NewResponse(req, remoting.Success, "")
	if len(ids) == 0 {
		resp = remoting.NewResponse(req, remoting.SystemError, "no consumer for this group, "+group)
	}
	resp.Body = body
	return resp
}

// --- wiring --------------------------------------------------------------------

// initConsumerSide builds the consumer side's parts; Broker.Start and
// Broker.Close start and stop each at its step.
func (b *Broker) initConsumerSide() {
	b.consumers = newConsumerManager(consumerDeps{
		group:           b.group,
		log:             b.log,
		now:             b.cfg.Clock,
		sqlEnabled:      !b.cfg.DisablePropertyFilter,
		autoCreateGroup: b.cfg.AutoCreateSubscriptionGroup,
		// Topics just created (retry topics) reach the name servers now
		// rather than at the next period; the round is not awaited.
		published: func() { _ = b.requestRegister() },
	})
	b.pulls = newPullHolder(pullDeps{
		log:       b.log,
		maxOffset: func(topic string, qid int32) (int64, error) { return b.group.Store().MaxOffset(topic, qid) },
		reread:    func(p *pullRequest) (*remoting.Command, bool) { return b.pullOnce(p, true) },
		notFound:  b.pullNotFound,
	})
	b.offsets = newOffsetCommitter(offsetDeps{
		group:      b.group,
		log:        b.log,
		nodeID:     b.cfg.NodeID,
		self:       b.cfg.Peers[b.cfg.NodeID],
		leaderAddr: b.leaderAddr,
		send:       b.oneway,
	})
}

// onConnClose drops the connection's clients (notifying their groups) and
// its held pulls, and the bound its sends shared. It runs on the connection's read goroutine and does not
// block: notifications are sent by the manager's goroutine.
func (b *Broker) onConnClose(c *remoting.Conn) {
	b.consumers.notifyGroups(b.consumers.dropConn(c), "")
	b.pulls.dropConn(c)
	b.bounds.forget(c)
}
