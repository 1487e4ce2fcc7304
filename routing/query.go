package routing

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"

	"github.com/ledgermq/ledgermq/protocol"
)

// Route returns the route of topic: the queues of every group serving it
// and those groups' live members, sorted by broker name. ok is false when
// no group serves the topic (TOPIC_NOT_EXIST). TBW102, the auto-create
// template, is an ordinary topic here: it has a route while any leader
// reports it. The result is a fresh copy the caller may keep.
func (t *RouteTable) Route(topic string) (route *protocol.TopicRouteData, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	set := t.topicGroups[topic]
	if len(set) == 0 {
		return nil, false
	}
	names := slices.Sorted(maps.Keys(set))
	route = &protocol.TopicRouteData{
		QueueDatas:        make([]protocol.QueueData, 0, len(names)),
		BrokerDatas:       make([]protocol.BrokerData, 0, len(names)),
		FilterServerTable: map[string][]string{},
	}
	for _, name := range names {
		g := t.groups[name]
		route.QueueDatas = append(route.QueueDatas, g.topics[topic])
		route.BrokerDatas = append(route.BrokerDatas, g.brokerData())
	}
	return route, true
}

// brokerData is the group's BrokerData (never a nil BrokerAddrs).
func (g *group) brokerData() protocol.BrokerData {
	addrs := make(map[int64]string, len(g.members))
	for id, m := range g.members {
		addrs[id] = m.addr
	}
	return protocol.BrokerData{Cluster: g.cluster, BrokerName: g.name, BrokerAddrs: addrs}
}

// ClusterInfo returns every group and the group names of every cluster.
func (t *RouteTable) ClusterInfo() *protocol.ClusterInfo {
	t.mu.RLock()
	defer t.mu.RUnlock()
	info := &protocol.ClusterInfo{
		BrokerAddrTable:  make(map[string]protocol.BrokerData, len(t.groups)),
		ClusterAddrTable: make(map[string][]string),
	}
	for name, g := range t.groups {
		info.BrokerAddrTable[name] = g.brokerData()
		info.ClusterAddrTable[g.cluster] = append(info.ClusterAddrTable[g.cluster], name)
	}
	for _, names := range info.ClusterAddrTable {
		slices.Sort(names)
	}
	return info
}

// Topics returns the name of every topic some group serves, sorted.
func (t *RouteTable) Topics() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return slices.Sorted(maps.Keys(t.topicGroups))
}

// TopicsOfCluster returns, sorted, the topics that a broker group of
// cluster serves (an unknown cluster serves none).
func (t *RouteTable) TopicsOfCluster(cluster string) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []string
	for topic, groups := range t.topicGroups {
		for name := range groups {
			if g := t.groups[name]; g != nil && g.cluster == cluster {
				out = append(out, topic)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// DeleteTopic removes topic from every group, or from the groups of
// cluster when it is not empty, and returns how many groups served it. A
// leader's next registration brings the topic back only if its
// DataVersion changed (Java's behaviour: deletion is meant to follow the
// topic's deletion on the brokers).
func (t *RouteTable) DeleteTopic(topic, cluster string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for name := range t.topicGroups[topic] {
		g := t.groups[name]
		if cluster != "" && g.cluster != cluster {
			continue
		}
		t.unindex(topic, g)
		n++
	}
	return n
}

// checkAddr accepts "host:port" with a port in 1..65535 and only the
// characters of host names and IP literals: clients split route JSON on
// ',' and strip '"', so an address must not contain them.
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "" {
		return errors.New("empty host")
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return fmt.Errorf("bad port %q", port)
	}
	for i := 0; i < len(addr); i++ {
		c := addr[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '-' || c == '_' || c == ':' || c == '[' || c == ']' || c == '%'
		if !ok {
			return fmt.Errorf("character %q not allowed in %q", c, addr)
		}
	}
	return nil
}

// SetWritePerm changes the permission of every topic's queues of the
// group brokerName: without PERM_WRITE (writable false), or readable and
// writable (writable true), as Java's operateWritePermOfBroker. It
// returns how many topics it touched. The group's next registration that
// replaces its topics (RouteTable.Register, rule 5) restores what the
// leader reports.
func (t *RouteTable) SetWritePerm(brokerName string, writable bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.groups[brokerName]
	if g == nil {
		return 0
	}
	for name, q := range g.topics {
		if writable {
			q.Perm = protocol.PermRead | protocol.PermWrite
		} else {
			q.Perm &^= protocol.PermWrite
		}
		g.topics[name] = q
	}
	return len(g.topics)
}
