package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// ErrNoOffset: the group has committed no offset for the queue
// (QUERY_NOT_FOUND).
var ErrNoOffset = errors.New("client: no committed offset")

// MessageExt is a message as a consumer receives it: the stored record
// (topic, body inflated when it was sent compressed, properties, queue
// and commitlog offsets, reconsume times, store times and hosts), the
// queue it was pulled from and its id.
//
// A message redelivered through the group's %RETRY% topic has Topic set
// back to its original topic (RETRY_TOPIC), as RocketMQ clients show it;
// Queue is then the retry queue it came from.
type MessageExt struct {
	message.Ext
	// Queue is where the message was pulled from; Ext.QueueOffset is its
	// offset there.
	Queue Queue
	// MsgID is the UNIQ_KEY the producer set, else the offset id. It is
	// kept across retries.
	MsgID string
}

// Tag returns the message's tag (the TAGS property).
func (m *MessageExt) Tag() string { return m.Properties[message.PropertyTags] }

// consumerSeq makes default instance names unique within the process.
var consumerSeq atomic.Uint64

// clientID is "ip@instance", the identity of a consumer in its group.
func clientID(instance string) string {
	if instance == "" {
		instance = fmt.Sprintf("%d#%d", os.Getpid(), consumerSeq.Add(1))
	}
	return localIP().String() + "@" + instance
}

// topicRoute is what a consumer needs of a topic's route: its readable
// queues and every group's addresses (RocketMQ's subscribe info).
type topicRoute struct {
	topic   string
	queues  []Queue                     // readable, sorted by broker then id
	brokers map[string]map[int64]string // group → brokerId → addr
}

func newTopicRoute(topic string, rd *protocol.TopicRouteData) *topicRoute {
	r := &topicRoute{topic: topic, brokers: map[string]map[int64]string{}}
	for _, bd := range rd.BrokerDatas {
		r.brokers[bd.BrokerName] = bd.BrokerAddrs
	}
	for _, qd := range rd.QueueDatas {
		if !qd.Readable() {
			continue
		}
		if _, ok := r.brokers[qd.BrokerName]; !ok {
			continue
		}
		for id := int32(0); id < qd.ReadQueueNums; id++ {
			r.queues = append(r.queues, Queue{Topic: topic, BrokerName: qd.BrokerName, QueueID: id})
		}
	}
	sortQueues(r.queues)
	r.queues = slices.Compact(r.queues)
	return r
}

// sortQueues orders queues by topic, broker name and id, as every
// RocketMQ client does before allocating them.
func sortQueues(qs []Queue) {
	slices.SortFunc(qs, compareQueues)
}

func compareQueues(a, b Queue) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	if c := strings.Compare(a.BrokerName, b.BrokerName); c != 0 {
		return c
	}
	return int(a.QueueID) - int(b.QueueID)
}

// addr returns the leader (brokerId 0) of group name, or with anyNode and
// no leader, the follower with the lowest id: pulls may be served by a
// follower while the group elects a leader, writes may not.
func (r *topicRoute) addr(name string, anyNode bool) (string, bool) {
	addrs := r.brokers[name]
	if a, ok := addrs[0]; ok && a != "" {
		return a, true
	}
	if !anyNode || len(addrs) == 0 {
		return "", false
	}
	ids := make([]int64, 0, len(addrs))
	for id := range addrs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return addrs[ids[0]], true
}

// allAddrs lists every address of every group, sorted.
func (r *topicRoute) allAddrs() []string {
	var out []string
	for _, addrs := range r.brokers {
		for _, a := range addrs {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// consumerBase is what both consumers share: options, the core, the
// client id and the subscribe routes, read from the name servers and
// re-read at once after a failed call (fast failover, as the producer).
type consumerBase struct {
	opts     options
	core     *core
	clientID string

	mu       sync.Mutex
	routes   map[string]*topicRoute
	fetching map[string]*routeFetch
}

// routeFetch is a route read in flight; done closes when it ends.
type routeFetch struct {
	done  chan struct{}
	route *topicRoute
	err   error
}

func newConsumerBase(o options) *consumerBase {
	return &consumerBase{opts: o, core: newCore(o), clientID: clientID(o.consumer.instance),
		routes: map[string]*topicRoute{}, fetching: map[string]*routeFetch{}}
}

// consumerOptionsFrom applies opts over the consumer defaults.
func consumerOptionsFrom(opts []Option) (options, error) {
	o := defaultOptions()
	o.group = DefaultConsumerGroup
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return o, err
	}
	if err := o.validateConsumer(); err != nil {
		return o, err
	}
	return o, nil
}

// route returns topic's cached route, reading it when there is none.
func (b *consumerBase) route(ctx context.Context, topic string) (*topicRoute, error) {
	b.mu.Lock()
	r := b.routes[topic]
	b.mu.Unlock()
	if r != nil {
		return r, nil
	}
	return b.refreshRoute(ctx, topic)
}

// refreshRoute reads topic's route again (joining a read in flight). A
// failed read keeps the cached route when there is one.
func (b *consumerBase) refreshRoute(ctx context.Context, topic string) (*topicRoute, error) {
	b.mu.Lock()
	f := b.fetching[topic]
	if f == nil {
		f = &routeFetch{done: make(chan struct{})}
		b.fetching[topic] = f
		b.mu.Unlock()
		rd, err := b.core.queryRoute(ctx, topic)
		if err == nil {
			f.route = newTopicRoute(topic, rd)
		} else {
			if errors.Is(err, errTopicNotExist) {
				err = fmt.Errorf("%w: %w", ErrNoRoute, err)
			}
			f.err = err
		}
		b.mu.Lock()
		delete(b.fetching, topic)
		if f.route != nil {
			b.routes[topic] = f.route
		} else if old := b.routes[topic]; old != nil {
			f.route, f.err = old, nil
		}
		b.mu.Unlock()
		close(f.done)
		return f.route, f.err
	}
	b.mu.Unlock()
	select {
	case <-f.done:
		return f.route, f.err
	case <-ctx.Done():
		return nil, fmt.Errorf("client: waiting for the route of %s: %w", topic, ctx.Err())
	}
}

// call sends the request build makes to group q.BrokerName — its leader,
// or with anyNode any node when it has none — and returns the answer.
// On a transport error or SERVICE_NOT_AVAILABLE, or while the route names
// no node, it re-reads the route at once and tries again (backing off
// 10…50 ms) until ctx ends: a new leader is used as soon as the name
// server lists it.
func (b *consumerBase) call(ctx context.Context, q Queue, anyNode bool, build func() *remoting.Command) (*remoting.Command, string, error) {
	bo := backoff{next: firstBackoff}
	r, err := b.route(ctx, q.Topic)
	var lastErr error
	for {
		if err != nil {
			return nil, "", err
		}
		addr, ok := r.addr(q.BrokerName, anyNode)
		if ok {
			resp, err := b.core.rc.Invoke(ctx, addr, build())
			if err == nil && resp.Code != remoting.ServiceNotAvailable {
				return resp, addr, nil
			}
			if err != nil && ctx.Err() != nil {
				return nil, addr, err
			}
			// No answer (transport) or SERVICE_NOT_AVAILABLE (a follower, a
			// leader not ready): another route cures both.
			if err == nil {
				lastErr = &BrokerError{Code: resp.Code, Remark: resp.Remark, Addr: addr}
			} else {
				lastErr = err
			}
			b.opts.logger.Debug("broker call failed, re-reading the route", "queue", q, "addr", addr, "error", lastErr)
			// The first retry goes at once: the route may already name the
			// new leader.
			if bo.next > firstBackoff {
				if werr := bo.wait(ctx); werr != nil {
					return nil, addr, fmt.Errorf("%w (last: %w)", werr, lastErr)
				}
			} else {
				bo.next *= 2
			}
		} else if werr := bo.wait(ctx); werr != nil {
			if lastErr == nil {
				lastErr = fmt.Errorf("%w: no leader for %s", ErrNoRoute, q.BrokerName)
			}
			return nil, "", fmt.Errorf("%w (last: %w)", werr, lastErr)
		}
		r, err = b.refreshRoute(ctx, q.Topic)
	}
}

// --- the offset requests ---------------------------------------------------------

// queryOffset is QUERY_CONSUMER_OFFSET (14): the group's committed offset
// for q, or ErrNoOffset.
func (b *consumerBase) queryOffset(ctx context.Context, q Queue) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
	defer cancel()
	resp, addr, err := b.call(ctx, q, false, func() *remoting.Command {
		h := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: b.opts.group, Topic: q.Topic, QueueID: q.QueueID, BrokerName: q.BrokerName}
		return h.Request()
	})
	if err != nil {
		return 0, fmt.Errorf("client: query offset of %v: %w", q, err)
	}
	switch resp.Code {
	case remoting.Success:
		var ans protocol.OffsetResponseHeader
		if err := ans.Decode(resp.ExtFields); err != nil {
			return 0, fmt.Errorf("client: query offset of %v from %s: %w", q, addr, err)
		}
		return ans.Offset, nil
	case remoting.QueryNotFound:
		return 0, fmt.Errorf("%w: %v", ErrNoOffset, q)
	}
	return 0, fmt.Errorf("client: query offset of %v: %w", q, &BrokerError{Code: resp.Code, Remark: resp.Remark, Addr: addr})
}

// commitOffset is UPDATE_CONSUMER_OFFSET (15): off is the next offset to
// consume. It goes to the leader and waits for the answer.
func (b *consumerBase) commitOffset(ctx context.Context, q Queue, off int64) error {
	ctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
	defer cancel()
	resp, addr, err := b.call(ctx, q, false, func() *remoting.Command {
		h := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: b.opts.group, Topic: q.Topic, QueueID: q.QueueID,
			CommitOffset: off, BrokerName: q.BrokerName}
		return h.Request()
	})
	if err != nil {
		return fmt.Errorf("client: commit offset %d of %v: %w", off, q, err)
	}
	if resp.Code != remoting.Success {
		return fmt.Errorf("client: commit offset %d of %v: %w", off, q, &BrokerError{Code: resp.Code, Remark: resp.Remark, Addr: addr})
	}
	return nil
}

// queueOffset asks for one of GET_MAX_OFFSET (30), GET_MIN_OFFSET (31) or,
// with ts, SEARCH_OFFSET_BY_TIMESTAMP (29). Any node may answer: they all
// hold the committed log.
func (b *consumerBase) queueOffset(ctx context.Context, code int32, q Queue, ts int64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
	defer cancel()
	resp, addr, err := b.call(ctx, q, true, func() *remoting.Command {
		return queueOffsetRequest(code, q.Topic, q.QueueID, q.BrokerName, ts)
	})
	if err != nil {
		return 0, fmt.Errorf("client: %s of %v: %w", remoting.RequestCodeName(code), q, err)
	}
	if resp.Code != remoting.Success {
		return 0, fmt.Errorf("client: %s of %v: %w", remoting.RequestCodeName(code), q, &BrokerError{Code: resp.Code, Remark: resp.Remark, Addr: addr})
	}
	var ans protocol.OffsetResponseHeader
	if err := ans.Decode(resp.ExtFields); err != nil {
		return 0, fmt.Errorf("client: %s of %v from %s: %w", remoting.RequestCodeName(code), q, addr, err)
	}
	return ans.Offset, nil
}

// queueOffsetRequest builds 30, 31 or, with ts, 29 for one queue.
func queueOffsetRequest(code int32, topic string, qid int32, bname string, ts int64) *remoting.Command {
	if code == remoting.SearchOffsetByTimestamp {
		h := protocol.SearchOffsetRequestHeader{Topic: topic, QueueID: qid, Timestamp: ts, BrokerName: bname}
		return h.Request()
	}
	h := protocol.QueueOffsetRequestHeader{Topic: topic, QueueID: qid, BrokerName: bname}
	return h.Request(code)
}

// startOffset is where the group starts on q when it has committed no
// offset, by ConsumeFromWhere (as RocketMQ: a retry topic starts at 0
// when consuming from the last offset).
func (b *consumerBase) startOffset(ctx context.Context, q Queue) (int64, error) {
	switch b.opts.consumer.fromWhere {
	case ConsumeFromFirstOffset:
		return b.queueOffset(ctx, remoting.GetMinOffset, q, 0)
	case ConsumeFromTimestamp:
		if strings.HasPrefix(q.Topic, retryTopicPrefix) {
			return b.queueOffset(ctx, remoting.GetMaxOffset, q, 0)
		}
		return b.queueOffset(ctx, remoting.SearchOffsetByTimestamp, q, b.opts.consumer.timestamp.UnixMilli())
	}
	if strings.HasPrefix(q.Topic, retryTopicPrefix) {
		return 0, nil
	}
	return b.queueOffset(ctx, remoting.GetMaxOffset, q, 0)
}

// resumeOffset is the committed offset of q, else its start offset.
func (b *consumerBase) resumeOffset(ctx context.Context, q Queue) (int64, error) {
	off, err := b.queryOffset(ctx, q)
	if errors.Is(err, ErrNoOffset) {
		return b.startOffset(ctx, q)
	}
	return off, err
}
