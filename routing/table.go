package routing

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"
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
	DataVersion DataVersion
	// Topics is the broker's whole topic table. It is read only from a
	// leader (id 0), and only when the leader or DataVersion changed.
	Topics map[string]TopicConfig
	// Timeout is how long the member lives without another registration;
	// zero means the table's default.
	Timeout time.Duration
	// ConnID identifies the connection the registration arrived on
	// (remoting.Conn.ID); RemoveConn(ConnID) removes the member. Zero
	// means none.
	ConnID uint64
	// Now is the time of the heartbeat.
	Now time.Time
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
		if err := checkTopic(tc); err != nil {
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
	DataVersion   DataVersion
	LastHeartbeat time.Time
	Timeout       time.Duration
	ConnID        uint64
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
}

// group is one broker group (broker name).
type group struct {
	cluster string
	name    string
	members map[int64]*member // by broker id
	// leaderTerm is the highest term of an id-0 claim accepted while the
	// group existed: the fence against deposed leaders.
	leaderTerm int64
	// topics are the group's queues by topic, from its leader.
	topics map[string]QueueData
	// topicsVersion is the DataVersion the topics were read from.
	topicsVersion DataVersion
}

// member is one registered broker of a group.
type member struct {
	id       int64
	addr     string
	haAddr   string
	term     int64
	version  DataVersion
	lastSeen time.Time
	timeout  time.Duration
	connID   uint64
}

// NewRouteTable returns an empty table whose members expire after expiry
// without a heartbeat, unless a registration sets its own timeout. A
// non-positive expiry means DefaultBrokerExpiry.
func NewRouteTable(expiry time.Duration) *RouteTable {
	if expiry <= 0 {
		expiry = DefaultBrokerExpiry
	}
	return &RouteTable{
		expiry:      expiry,
		groups:      make(map[string]*group),
		topicGroups: make(map[string]map[string]struct{}),
	}
}

// Register applies one registration (heartbeat) and returns what it
// learned. The rules, in order:
//
//  1. Fencing (I6): the registration fails with ErrStaleTerm, changing
//     nothing, if its term is lower than (a) the term recorded for its
//     own address in the group, (b) the term of another address that
//     holds the broker id it claims, or (c) for id 0, the highest term of
//     any leader claim accepted for the group. An equal term passes.
//  2. The address's entry under any other id is removed (a promoted
//     follower leaves its old id; a deposed leader leaves id 0), and so
//     is another address's entry under the claimed id (for id 0: the
//     former leader, which re-registers as a follower).
//  3. The member is recorded with its term and heartbeat time.
//  4. For id 0, the group's topics are replaced by Topics when the leader
//     is new or DataVersion differs from the one last applied.
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
	} else {
		g = &group{
			name:    r.BrokerName,
			members: make(map[int64]*member),
			topics:  make(map[string]QueueData),
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
	m.connID = r.ConnID

	if r.BrokerID == 0 {
		g.leaderTerm = max(g.leaderTerm, term)
		if newMember || g.topicsVersion != r.DataVersion {
			t.setTopics(g, r.Topics)
			g.topicsVersion = r.DataVersion
			res.TopicsApplied = true
		}
	} else if leader := g.members[0]; leader != nil {
		res.MasterAddr = leader.addr
		res.HAServerAddr = leader.haAddr
	}
	return res, nil
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
		return fmt.Errorf("%w: %s id %d is held by %s at term %d; %s claims it at term %d",
			ErrStaleTerm, g.name, id, holder.addr, holder.term, addr, term)
	}
	if id == 0 && term < g.leaderTerm {
		return fmt.Errorf("%w: %s has had a leader at term %d; %s claims leadership at term %d",
			ErrStaleTerm, g.name, g.leaderTerm, addr, term)
	}
	return nil
}

// setTopics replaces g's topics and keeps the index in step.
func (t *RouteTable) setTopics(g *group, topics map[string]TopicConfig) {
	for name := range g.topics {
		if _, keep := topics[name]; !keep {
			t.unindex(name, g)
		}
	}
	for name, tc := range topics {
		if name == "" {
			continue
		}
		g.topics[name] = QueueData{
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
		}
		set[g.name] = struct{}{}
	}
}

// unindex removes topic from g.
func (t *RouteTable) unindex(topic string, g *group) {
	delete(g.topics, topic)
	if set := t.topicGroups[topic]; set != nil {
		delete(set, g.name)
		if len(set) == 0 {
			delete(t.topicGroups, topic)
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
// deposed leader from removing the new leader.
func (t *RouteTable) Unregister(brokerName, brokerAddr string) (Member, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.groups[brokerName]
	if g == nil {
		return Member{}, false
	}
	for _, m := range g.members {
		if m.addr == brokerAddr {
			return t.removeMember(g, m), true
		}
	}
	return Member{}, false
}

// Expire removes every member whose last heartbeat is more than its
// timeout before now, and returns them sorted by group and id.
func (t *RouteTable) Expire(now time.Time) []Member {
	return t.removeIf(func(m *member) bool { return now.Sub(m.lastSeen) > m.timeout })
}

// RemoveConn removes every member registered on connection connID (its
// last registration arrived there) and returns them. Zero removes nothing.
func (t *RouteTable) RemoveConn(connID uint64) []Member {
	if connID == 0 {
		return nil
	}
	return t.removeIf(func(m *member) bool { return m.connID == connID })
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

// LeaderTerm returns the fencing watermark of a group: the highest term of
// a leader claim it accepted. ok is false for an unknown group.
func (t *RouteTable) LeaderTerm(brokerName string) (term int64, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	g := t.groups[brokerName]
	if g == nil {
		return 0, false
	}
	return g.leaderTerm, true
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
		ConnID:        m.connID,
	}
}

func compareMembers(a, b Member) int {
	return cmp.Or(cmp.Compare(a.BrokerName, b.BrokerName), cmp.Compare(a.BrokerID, b.BrokerID))
}
