package routing

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
)

// DefaultBrokerExpiry is how long a member stays registered without a
// heartbeat (Java's BROKER_CHANNEL_EXPIRED_TIME).
const DefaultBrokerExpiry = 120 * time.Second

// Registration is one REGISTER_BROKER call, decoded: who registers, with
// which term and topics, on which connection, at what time. RouteTable
// takes the time from here rather than from a clock, so the table itself
// does no I/O and reads no clock.
type Registration struct {
	ClusterName  string
	BrokerName   string // the broker group
	BrokerAddr   string // host:port clients dial
	HAServerAddr string
	BrokerID     int64 // 0 = leader, ≥ 1 = follower
	// DataVersion versions Topics; its StateVersion is the broker's Raft
	// term, the fencing token of I6.
	DataVersion protocol.DataVersion
	// Topics is the broker's whole topic table. It is read only from a
	// leader (id 0), and only when the leader or DataVersion changed.
	Topics map[string]protocol.TopicConfig
	// Timeout is how long the member lives without another registration;
	// zero means the table's default.
	Timeout time.Duration
	// ConnID identifies the connection the registration arrived on
	// (remoting.Conn.ID); the member is removed when every connection it
	// registered on has closed (RemoveConn). Zero means none.
	ConnID uint64
	// Now is the time of the heartbeat.
	Now time.Time
	// Confirmed is set when the claimed node has confirmed the claim
	// (Checker): only then may a registration change the routes.
	Confirmed bool
	// TrustTopics is set for a registration signed with the cluster
	// secret (or arriving in the name server's startup grace): it may
	// share topics other groups serve (doc.go, Topics).
	TrustTopics bool
}

// Term is the registration's Raft term (DataVersion.StateVersion).
func (r *Registration) Term() int64 { return r.DataVersion.StateVersion }

// validate checks the fields the table relies on.
func (r *Registration) validate() error {
	switch {
	case r.ClusterName == "":
		return fmt.Errorf("%w: empty clusterName", ErrBadRequest)
	case r.BrokerName == "":
		return fmt.Errorf("%w: empty brokerName", ErrBadRequest)
	case r.BrokerID < 0:
		return fmt.Errorf("%w: negative brokerId %d", ErrBadRequest, r.BrokerID)
	case r.Timeout < 0:
		return fmt.Errorf("%w: negative heartbeat timeout %v", ErrBadRequest, r.Timeout)
	}
	if err := checkAddr(r.BrokerAddr); err != nil {
		return fmt.Errorf("%w: brokerAddr: %w", ErrBadRequest, err)
	}
	for _, tc := range r.Topics {
		if err := protocol.CheckTopicConfig(tc); err != nil {
			return err
		}
	}
	return nil
}

// RegisterResult is what a registration learns: for a follower, the
// leader's addresses (empty when the group has no leader); and what the
// registration changed, for logs.
type RegisterResult struct {
	MasterAddr   string
	HAServerAddr string
	// NewMember is set when the address was not registered under this id
	// before (first registration, promotion, re-registration after
	// expiry).
	NewMember bool
	// TopicsApplied is set when the registration replaced the group's
	// topics.
	TopicsApplied bool
	// Removed lists the members this registration displaced: a former
	// leader, the registering address's entry under another id, another
	// address's entry under the claimed id.
	Removed []Member
	// Pending is set when the registration changed nothing because it
	// must be confirmed by the claimed node first (it is not a heartbeat
	// of a confirmed member); register it again with Confirmed once it is.
	Pending bool
	// TopicsRefused lists the topics of a leader registration that were
	// not taken because other groups serve them (doc.go, Topics), sorted.
	TopicsRefused []string
}

// Member is a snapshot of one registered broker: one member of a broker
// group.
type Member struct {
	ClusterName   string
	BrokerName    string
	BrokerID      int64
	Addr          string
	HAServerAddr  string
	Term          int64
	DataVersion   protocol.DataVersion
	LastHeartbeat time.Time
	Timeout       time.Duration
	// ConnID is the connection of the member's last registration; Conns
	// every open connection it registered on (oldest first).
	ConnID uint64
	Conns  []uint64
}

// RouteTable is the name server's state: broker groups, their members and
// the topics they serve. It is pure state: no I/O, no clock, no
// goroutine; callers pass times in. All methods are safe for concurrent
// use: queries share a read lock, changes take the write lock.
type RouteTable struct {
	expiry time.Duration

	mu     sync.RWMutex
	groups map[string]*group // by broker name
	// topicGroups indexes the topics: topic → names of the groups that
	// serve it. It always agrees with the groups' topics maps.
	topicGroups map[string]map[string]struct{}
	// topicSince is when each served topic was first served (by any
	// group) since no group served it; topicSharers the groups that have
	// served it since then. Both are forgotten with the topic's last
	// group. They decide which groups may share a topic (doc.go, Topics).
	topicSince   map[string]time.Time
	topicSharers map[string]map[string]struct{}
}

// group is one broker group (broker name).
type group struct {
	cluster string
	name    string
	members map[int64]*member // by broker id
	// since is when the group's first member registered (the group is
	// forgotten with its last member).
	since time.Time
	// topics are the group's queues by topic, from its leader.
	topics map[string]protocol.QueueData
	// topicsVersion is the DataVersion the topics were read from.
	topicsVersion protocol.DataVersion
}

// member is one registered broker of a group.
type member struct {
	id       int64
	addr     string
	haAddr   string
	term     int64
	version  protocol.DataVersion
	lastSeen time.Time
	timeout  time.Duration
	// conns are the open connections the member registered on, oldest
	// first, at most maxMemberConns; the last is the latest.
	conns []uint64
}

// maxMemberConns bounds the connections remembered per member. A broker
// uses one connection per name server; more appear only while a
// reconnecting broker's old connection has not been seen closing yet.
const maxMemberConns = 4

// addConn records that m registered on conn (0: none).
func (m *member) addConn(conn uint64) {
	if conn == 0 {
		return
	}
	if i := slices.Index(m.conns, conn); i >= 0 {
		m.conns = slices.Delete(m.conns, i, i+1)
	}
	m.conns = append(m.conns, conn)
	if len(m.conns) > maxMemberConns {
		m.conns = slices.Delete(m.conns, 0, len(m.conns)-maxMemberConns)
	}
}

// lastConn is the connection of m's latest registration (0: none).
func (m *member) lastConn() uint64 {
	if len(m.conns) == 0 {
		return 0
	}
	return m.conns[len(m.conns)-1]
}

// NewRouteTable returns an empty table whose members expire after expiry
// without a heartbeat, unless a registration sets its own timeout. A
// non-positive expiry means DefaultBrokerExpiry.
func NewRouteTable(expiry time.Duration) *RouteTable {
	if expiry <= 0 {
		expiry = DefaultBrokerExpiry
	}
	return &RouteTable{
		expiry:       expiry,
		groups:       make(map[string]*group),
		topicGroups:  make(map[string]map[string]struct{}),
		topicSince:   make(map[string]time.Time),
		topicSharers: make(map[string]map[string]struct{}),
	}
}

// Register applies one registration (heartbeat) and returns what it
// learned. The rules, in order:
//
//  1. Fencing (I6): the registration fails with ErrStaleTerm, changing
//     nothing, if its term is lower than (a) the term recorded for its
//     own address in the group, or (b) the term of another address that
//     holds the broker id it claims. Only live, confirmed members fence:
//     a claim stops fencing when its member expires, unregisters or loses
//     its connections. An equal term passes.
//  2. Confirmation: a registration that is not a heartbeat of a confirmed
//     member (same group, id, address and term) changes nothing unless
//     r.Confirmed; the result says Pending.
//  3. The address's entry under any other id is removed (a promoted
//     follower leaves its old id; a deposed leader leaves id 0), and so
//     is another address's entry under the claimed id (for id 0: the
//     former leader, which re-registers as a follower).
//  4. The member is recorded with its term, heartbeat time and
//     connection.
//  5. For id 0, the group's topics are replaced by Topics when the leader
//     is new or DataVersion differs from the one last applied, except
//     topics the group may not share (doc.go, Topics).
//
// Errors wrap ErrBadRequest (invalid identity), ErrBadBody (invalid
// topic) or ErrStaleTerm.
func (t *RouteTable) Register(r Registration) (RegisterResult, error) {
	if err := r.validate(); err != nil {
		return RegisterResult{}, err
	}
	term := r.Term()
	t.mu.Lock()
	defer t.mu.Unlock()

	g := t.groups[r.BrokerName]
	if g != nil {
		if err := g.fence(r.BrokerID, r.BrokerAddr, term); err != nil {
			return RegisterResult{}, err
		}
	}
	if !r.Confirmed && !g.isHeartbeat(r.BrokerID, r.BrokerAddr, term) {
		return RegisterResult{Pending: true}, nil
	}
	if g == nil {
		g = &group{
			name:    r.BrokerName,
			members: make(map[int64]*member),
			topics:  make(map[string]protocol.QueueData),
			since:   r.Now,
		}
		t.groups[r.BrokerName] = g
	}

	var res RegisterResult
	for id, m := range g.members {
		sameAddr := m.addr == r.BrokerAddr
		if sameAddr != (id == r.BrokerID) {
			delete(g.members, id)
			res.Removed = append(res.Removed, g.snapshot(m))
		}
	}
	slices.SortFunc(res.Removed, compareMembers)
	g.cluster = r.ClusterName

	m := g.members[r.BrokerID]
	newMember := m == nil
	res.NewMember = newMember
	if newMember {
		m = &member{id: r.BrokerID}
		g.members[r.BrokerID] = m
	}
	m.addr = r.BrokerAddr
	m.haAddr = r.HAServerAddr
	m.term = term
	m.version = r.DataVersion
	m.lastSeen = r.Now
	m.timeout = cmp.Or(r.Timeout, t.expiry)
	m.addConn(r.ConnID)

	if r.BrokerID == 0 {
		if newMember || g.topicsVersion != r.DataVersion {
			res.TopicsRefused = t.setTopics(g, r.Topics, r.TrustTopics, r.Now)
			g.topicsVersion = r.DataVersion
			res.TopicsApplied = true
		}
	} else if leader := g.members[0]; leader != nil {
		res.MasterAddr = leader.addr
		res.HAServerAddr = leader.haAddr
	}
	return res, nil
}

// isHeartbeat reports whether a registration repeats a confirmed member:
// the same id, address and term. A nil group has none.
func (g *group) isHeartbeat(id int64, addr string, term int64) bool {
	if g == nil {
		return false
	}
	m := g.members[id]
	return m != nil && m.addr == addr && m.term == term
}

// fence applies rule 1 of Register.
func (g *group) fence(id int64, addr string, term int64) error {
	for _, m := range g.members {
		if m.addr == addr && m.term > term {
			return fmt.Errorf("%w: %s registered %s as id %d at term %d, now claims id %d at term %d",
				ErrStaleTerm, g.name, addr, m.id, m.term, id, term)
		}
	}
	if holder := g.members[id]; holder != nil && holder.addr != addr && holder.term > term {
		if id == 0 {
			return fmt.Errorf("%w: %s is led by %s at term %d; %s claims leadership at term %d",
				ErrStaleTerm, g.name, holder.addr, holder.term, addr, term)
		}
		return fmt.Errorf("%w: %s id %d is held by %s at term %d; %s claims it at term %d",
			ErrStaleTerm, g.name, id, holder.addr, holder.term, addr, term)
	}
	return nil
}

// setTopics replaces g's topics and keeps the index in step. A topic other
// groups serve is taken only if g may share it (doc.go, Topics): trust
// (a signed registration), g served it before since the topic was last
// free, or g existed before the topic was first served. It returns the
// topics refused, sorted.
func (t *RouteTable) setTopics(g *group, topics map[string]protocol.TopicConfig, trust bool, now time.Time) []string {
	for name := range g.topics {
		if _, keep := topics[name]; !keep {
			t.unindex(name, g)
		}
	}
	var refused []string
	for name, tc := range topics {
		if name == "" {
			continue
		}
		if !trust && !t.mayShare(g, name) {
			refused = append(refused, name)
			continue
		}
		g.topics[name] = protocol.QueueData{
			BrokerName:     g.name,
			ReadQueueNums:  tc.ReadQueueNums,
			WriteQueueNums: tc.WriteQueueNums,
			Perm:           tc.Perm,
			TopicSysFlag:   tc.TopicSysFlag,
		}
		set := t.topicGroups[name]
		if set == nil {
			set = make(map[string]struct{}, 1)
			t.topicGroups[name] = set
			t.topicSince[name] = now
		}
		set[g.name] = struct{}{}
		sharers := t.topicSharers[name]
		if sharers == nil {
			sharers = make(map[string]struct{}, 1)
			t.topicSharers[name] = sharers
		}
		sharers[g.name] = struct{}{}
	}
	slices.Sort(refused)
	return refused
}

// mayShare reports whether an unsigned leader registration of g may serve
// topic: no other group serves it, g serves it already or did since the
// topic was last free, or g is older than the topic.
func (t *RouteTable) mayShare(g *group, topic string) bool {
	set := t.topicGroups[topic]
	if len(set) == 0 {
		return true
	}
	if _, ok := set[g.name]; ok {
		return true
	}
	if _, ok := t.topicSharers[topic][g.name]; ok {
		return true
	}
	return !g.since.After(t.topicSince[topic])
}

// unindex removes topic from g; a topic no group serves any more is free
// again (its history is forgotten).
func (t *RouteTable) unindex(topic string, g *group) {
	delete(g.topics, topic)
	if set := t.topicGroups[topic]; set != nil {
		delete(set, g.name)
		if len(set) == 0 {
			delete(t.topicGroups, topic)
			delete(t.topicSince, topic)
			delete(t.topicSharers, topic)
		}
	}
}

// removeMember deletes one member, and its group (with the group's
// topics) when it was the last one.
func (t *RouteTable) removeMember(g *group, m *member) Member {
	snap := g.snapshot(m)
	delete(g.members, m.id)
	if len(g.members) == 0 {
		for topic := range g.topics {
			t.unindex(topic, g)
		}
		delete(t.groups, g.name)
	}
	return snap
}

// Unregister removes the member of group brokerName registered at
// brokerAddr, whatever its id, and reports whether there was one. Matching
// by address (Java matches by id) keeps a late UNREGISTER_BROKER of a
// deposed leader from removing the new leader. The request is honoured
// only when it arrives on one of the member's connections (connID) or is
// trusted (signed with the cluster secret); otherwise it fails with
// ErrNotRegistrant and changes nothing.
func (t *RouteTable) Unregister(brokerName, brokerAddr string, connID uint64, trusted bool) (Member, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.groups[brokerName]
	if g == nil {
		return Member{}, false, nil
	}
	for _, m := range g.members {
		if m.addr != brokerAddr {
			continue
		}
		if !trusted && (connID == 0 || !slices.Contains(m.conns, connID)) {
			return Member{}, false, fmt.Errorf("%w: %s at %s registered on another connection", ErrNotRegistrant, brokerName, brokerAddr)
		}
		return t.removeMember(g, m), true, nil
	}
	return Member{}, false, nil
}

// Expire removes every member whose last heartbeat is more than its
// timeout before now, and returns them sorted by group and id.
func (t *RouteTable) Expire(now time.Time) []Member {
	return t.removeIf(func(m *member) bool { return now.Sub(m.lastSeen) > m.timeout })
}

// RemoveConn forgets connection connID and removes every member that has
// no open connection left (each registered on it, and on no other that is
// still open), and returns them. Zero removes nothing.
func (t *RouteTable) RemoveConn(connID uint64) []Member {
	if connID == 0 {
		return nil
	}
	return t.removeIf(func(m *member) bool {
		i := slices.Index(m.conns, connID)
		switch {
		case i < 0:
			return false
		case len(m.conns) == 1:
			return true // its last connection: the member goes, conns intact for the snapshot
		}
		m.conns = slices.Delete(m.conns, i, i+1)
		return false
	})
}

// removeIf removes the members matching drop.
func (t *RouteTable) removeIf(drop func(*member) bool) []Member {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Member
	for _, g := range t.groups {
		for _, m := range g.members {
			if drop(m) {
				out = append(out, t.removeMember(g, m))
			}
		}
	}
	slices.SortFunc(out, compareMembers)
	return out
}

// Members returns a snapshot of every member, sorted by group and id.
func (t *RouteTable) Members() []Member {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []Member
	for _, g := range t.groups {
		for _, m := range g.members {
			out = append(out, g.snapshot(m))
		}
	}
	slices.SortFunc(out, compareMembers)
	return out
}

// LeaderTerm returns the term of a group's confirmed leader (id 0), the
// fence of leader claims; 0 when the group has no leader. ok is false for
// an unknown group.
func (t *RouteTable) LeaderTerm(brokerName string) (term int64, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	g := t.groups[brokerName]
	if g == nil {
		return 0, false
	}
	if m := g.members[0]; m != nil {
		return m.term, true
	}
	return 0, true
}

func (g *group) snapshot(m *member) Member {
	return Member{
		ClusterName:   g.cluster,
		BrokerName:    g.name,
		BrokerID:      m.id,
		Addr:          m.addr,
		HAServerAddr:  m.haAddr,
		Term:          m.term,
		DataVersion:   m.version,
		LastHeartbeat: m.lastSeen,
		Timeout:       m.timeout,
		ConnID:        m.lastConn(),
		Conns:         slices.Clone(m.conns),
	}
}

func compareMembers(a, b Member) int {
	return cmp.Or(cmp.Compare(a.BrokerName, b.BrokerName), cmp.Compare(a.BrokerID, b.BrokerID))
}
