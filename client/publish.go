package client

import (
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/ledgermq/ledgermq/protocol"
)

// publishInfo is what a producer needs of a topic's route (RocketMQ's
// TopicPublishInfo). It is immutable once built; a refresh replaces it.
type publishInfo struct {
	topic string
	// all lists every writable queue, sorted by broker name then queue
	// id, whether or not its group has a leader now: hashing for ordered
	// messages uses it, so a leader change does not move keys.
	all []Queue
	// queues is all without the queues of leaderless groups: where a
	// message can go now.
	queues []Queue
	// leaders maps each group with a leader to the leader's address.
	leaders map[string]string
	// clusters are the clusters of the route's broker groups.
	clusters []string
	// waiting: some group of all has no leader (an election is under
	// way, or its leader just died): sends to it wait for a new route.
	waiting bool
	// fromDefault: the topic was unknown, so this is the TBW102 route
	// (queue counts capped at DefaultTopicQueueNums); the broker creates
	// the topic on the first send.
	fromDefault bool
	// next is the round-robin counter, shared by every version of the
	// topic's route.
	next *atomic.Uint32
	// version changes when a refresh brings different queues or leaders.
	version uint64
	sig     string // what version compares
}

// newPublishInfo builds the publish view of rd for topic. fromDefault
// marks rd as the TBW102 route standing in for an unknown topic.
func newPublishInfo(topic string, rd *protocol.TopicRouteData, fromDefault bool) *publishInfo {
	info := &publishInfo{topic: topic, leaders: map[string]string{}, fromDefault: fromDefault, next: new(atomic.Uint32)}
	add := func(name string, n int32) {
		bd, ok := rd.Broker(name)
		if !ok || n <= 0 {
			return
		}
		if bd.Cluster != "" && !slices.Contains(info.clusters, bd.Cluster) {
			info.clusters = append(info.clusters, bd.Cluster)
		}
		addr, hasLeader := bd.LeaderAddr()
		if hasLeader {
			info.leaders[name] = addr
		} else {
			info.waiting = true
		}
		for id := int32(0); id < n; id++ {
			q := Queue{Topic: topic, BrokerName: name, QueueID: id}
			info.all = append(info.all, q)
			if hasLeader {
				info.queues = append(info.queues, q)
			}
		}
	}
	if conf := rd.OrderTopicConf; conf != "" && !fromDefault {
		// "broker-a:4;broker-b:4": the ordered topic's queues, by itself.
		for item := range strings.SplitSeq(conf, ";") {
			name, num, ok := strings.Cut(item, ":")
			n, err := strconv.ParseInt(num, 10, 32)
			if ok && err == nil && n <= protocol.MaxQueueNums {
				add(name, int32(n))
			}
		}
	} else {
		for _, qd := range rd.QueueDatas {
			if !qd.Writable() {
				continue
			}
			n := qd.WriteQueueNums
			if fromDefault {
				n = min(n, protocol.DefaultTopicQueueNums)
			}
			add(qd.BrokerName, n)
		}
	}
	cmp := func(a, b Queue) int {
		if c := strings.Compare(a.BrokerName, b.BrokerName); c != 0 {
			return c
		}
		return int(a.QueueID) - int(b.QueueID)
	}
	slices.SortFunc(info.all, cmp)
	info.all = slices.CompactFunc(info.all, func(a, b Queue) bool { return cmp(a, b) == 0 })
	slices.SortFunc(info.queues, cmp)
	info.queues = slices.CompactFunc(info.queues, func(a, b Queue) bool { return cmp(a, b) == 0 })
	info.sig = info.signature()
	return info
}

// signature is a canonical text of the queues and leaders.
func (p *publishInfo) signature() string {
	var b strings.Builder
	names := make([]string, 0, len(p.leaders))
	for n := range p.leaders {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		b.WriteString(n + "=" + p.leaders[n] + ";")
	}
	b.WriteString("|")
	for _, q := range p.all {
		b.WriteString(q.BrokerName + "#" + strconv.Itoa(int(q.QueueID)) + ";")
	}
	if p.fromDefault {
		b.WriteString("|default")
	}
	return b.String()
}

// brokerNames returns the groups that have a leader, sorted.
func (p *publishInfo) brokerNames() []string {
	names := make([]string, 0, len(p.leaders))
	for n := range p.leaders {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
