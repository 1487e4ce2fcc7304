package broker

import "time"

// Observer hears what the broker stores and serves, for metrics
// (Config.Observer; nil: nothing is measured). Its methods are called on
// request goroutines and must not block.
type Observer interface {
	// Stored: a send of msgs messages with bytes of bodies to topic was
	// stored (replicated and applied) on this leader; took is the time
	// from the request's arrival to its answer.
	Stored(topic string, msgs, bytes int, took time.Duration)
	// Served: a pull of group from topic was answered with msgs messages
	// (bytes of records) read from this node's store.
	Served(topic, group string, msgs, bytes int, took time.Duration)
}

// nopObserver measures nothing.
type nopObserver struct{}

func (nopObserver) Stored(string, int, int, time.Duration)         {}
func (nopObserver) Served(string, string, int, int, time.Duration) {}

// GroupLag is one consumer group's lag on one topic of this node's
// replica: the messages stored beyond its committed offsets, summed over
// the topic's queues (queues it has committed nothing on count from their
// minimum offset).
type GroupLag struct {
	Group, Topic string
	Lag          int64
}

// Lags reports every subscription group's lag on the topics it consumes.
func (b *Broker) Lags() []GroupLag {
	md := b.group.Metadata()
	st := b.group.Store()
	var out []GroupLag
	for _, g := range md.Groups() {
		for _, topic := range b.groupTopics(g.GroupName) {
			tc, ok := md.Topic(topic)
			if !ok {
				continue
			}
			var lag int64
			for q := int32(0); q < tc.WriteQueueNums; q++ {
				maxOff, err := st.MaxOffset(topic, q)
				if err != nil {
					continue
				}
				committed, ok := md.Offset(g.GroupName, topic, q)
				if !ok {
					if committed, err = st.MinOffset(topic, q); err != nil {
						continue
					}
				}
				if maxOff > committed {
					lag += maxOff - committed
				}
			}
			out = append(out, GroupLag{Group: g.GroupName, Topic: topic, Lag: lag})
		}
	}
	return out
}

// Counts are the sizes RocketMQ's exporter reports of a broker.
type Counts struct {
	Topics, Groups, Producers, Consumers int
}

// Counts reports this node's topic and subscription-group numbers and its
// producer and consumer connections.
func (b *Broker) Counts() Counts {
	md := b.group.Metadata()
	c := Counts{Topics: len(md.Topics()), Groups: len(md.Groups())}
	c.Producers, c.Consumers = b.consumers.connCounts()
	return c
}

// connCounts counts the producer and consumer clients heard from.
func (m *consumerManager) connCounts() (producers, consumers int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range m.groups {
		consumers += len(g.clients)
	}
	for _, g := range m.producers {
		producers += len(g)
	}
	return producers, consumers
}
