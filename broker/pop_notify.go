package broker

// NOTIFICATION (200054) and POLLING_INFO (200055) on the remoting port,
// served by the leader on the POP state (pop.go), as Java's
// NotificationProcessor and PollingInfoProcessor answer them:
//
//	request       answer (SUCCESS)
//	------------  ----------------------------------------------------------
//	NOTIFICATION  hasMsg: a POP of the group would get a message of the
//	              queue (-1: of any of the topic's) now; when none, the
//	              request waits up to its pollTime (capped at maxPullHold)
//	              for one, then answers hasMsg=false; pollingFull=true
//	              (hasMsg=false, at once) when maxHeldNotifications wait
//	POLLING_INFO  pollingNum: the POP receives (remoting POP_MESSAGE and
//	              the gRPC port's) waiting on the leader now for the group,
//	              the topic and the queue; -1 counts those of any queue
//	              (POP_MESSAGE's queueId -1, every gRPC receive), as Java
//	              keys its polls by the request's queueId
//
// "Would get" is popOnce's rule: a receipt whose invisible time ended and
// whose deliveries are not used up, or a message past the group's
// position in a queue below Config.PopMaxInflight receipts; a FIFO
// group's queue hands out nothing while a message of it is invisible.
// Like Java's, the answer does not filter by tag (the request names no
// expression), and the header's order flag is not read: the group's
// config says whether it is FIFO, as for its receives.
//
// A waiting NOTIFICATION holds a worker of the pop pool and watches the
// topic as a waiting receive does (a message stored, an acknowledgement,
// a new invisible time wake it; the earliest invisible receipt of its
// queues ending too), and looks again when woken: no polling loop. At
// most maxHeldNotifications wait at once, so they never take all of the
// pool's workers from POP_MESSAGE. A request on a closing broker is
// answered hasMsg=false.
//
// Before anything, as Java: the topic (TOPIC_NOT_EXIST; NO_PERMISSION
// when not readable), the queue (INVALID_PARAMETER at or past the topic's
// read queues; any negative id is -1) and the group
// (SUBSCRIPTION_GROUP_NOT_EXIST when unknown and
// autoCreateSubscriptionGroup is off; NO_PERMISSION when its
// consumeEnable is off); PEEK_MESSAGE (pop_peek.go) checks the same.

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// maxHeldNotifications bounds the NOTIFICATION requests waiting at once:
// half of the pop pool's workers.
var maxHeldNotifications = int64(pools[poolPop].Workers / 2)

// popNotifying counts the NOTIFICATION requests waiting. The zero value
// is ready.
type popNotifying struct {
	n atomic.Int64
	// max, when set (tests), replaces maxHeldNotifications.
	max atomic.Int64
}

// enter counts one more waiting, unless as many as allowed wait already.
func (p *popNotifying) enter() bool {
	limit := p.max.Load()
	if limit <= 0 {
		limit = maxHeldNotifications
	}
	if p.n.Add(1) > limit {
		p.n.Add(-1)
		return false
	}
	return true
}

// leave ends one counted by enter.
func (p *popNotifying) leave() { p.n.Add(-1) }

// popPolls counts the POP receives waiting, by topic, group and queue
// (-1: a receive of any queue). The zero value is ready.
type popPolls struct {
	mu sync.Mutex
	n  map[popPollKey]int
}

type popPollKey struct {
	topic, group string
	queueID      int32
}

// hold counts a receive waiting; the func returned ends it.
func (p *popPolls) hold(topic, group string, queueID int32) func() {
	k := popPollKey{topic, group, queueID}
	p.mu.Lock()
	if p.n == nil {
		p.n = map[popPollKey]int{}
	}
	p.n[k]++
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		if p.n[k]--; p.n[k] <= 0 {
			delete(p.n, k)
		}
		p.mu.Unlock()
	}
}

// count is how many receives of topic, group and queue wait now.
func (p *popPolls) count(topic, group string, queueID int32) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[popPollKey{topic, group, queueID}]
}

// pollQueue is the queue a waiting receive is counted under: its queue,
// or -1 for a receive of any.
func (r PopRequest) pollQueue() int32 {
	if r.OneQueue {
		return r.QueueID
	}
	return -1
}

// popLookCheck checks the group, topic and queue of a PEEK_MESSAGE,
// NOTIFICATION or POLLING_INFO (see the file comment); a refusal is the
// answer to send. It returns the topic's config and the queue id (-1 for
// every queue).
func (b *Broker) popLookCheck(req *remoting.Command, group, topic string, queueID int32) (metadata.TopicConfig, int32, *remoting.Command) {
	if err := validateGroup(group); err != nil {
		return metadata.TopicConfig{}, 0, errorResponse(req, err)
	}
	md := b.group.Metadata()
	tc, ok := md.Topic(topic)
	if !ok {
		return tc, 0, errorResponse(req, fmt.Errorf("%w: topic[%s] not exist, apply first please", ErrTopicNotExist, topic))
	}
	if tc.Perm&metadata.PermRead == 0 || tc.ReadQueueNums <= 0 {
		return tc, 0, errorResponse(req, fmt.Errorf("%w: topic %s is not readable", ErrNoPermission, topic))
	}
	if queueID >= tc.ReadQueueNums {
		return tc, 0, errorResponse(req, fmt.Errorf("%w: queueId %d of topic %s (it has %d read queues)", ErrInvalidParameter, queueID, topic, tc.ReadQueueNums))
	}
	g, ok := md.Group(group)
	switch {
	case !ok && !b.cfg.AutoCreateSubscriptionGroup:
		return tc, 0, remoting.NewResponse(req, remoting.SubscriptionGroupNotExist, fmt.Sprintf("subscription group [%s] does not exist", group))
	case ok && !g.ConsumeEnable:
		return tc, 0, errorResponse(req, fmt.Errorf("%w: subscription group %s: consume disabled", ErrNoPermission, group))
	}
	return tc, max(queueID, -1), nil
}

// popHasMsg reports whether a receive of group would get a message of
// the topic's queue now (queueID -1: of any of its read queues; see the
// file comment), and the earliest time (Unix ms) a receipt of them still
// invisible ends, 0 if none.
func (b *Broker) popHasMsg(group string, tc metadata.TopicConfig, queueID int32) (bool, int64) {
	md, st := b.group.Metadata(), b.group.Store()
	now := b.nowMs()
	maxAttempts := b.popMaxAttempts(group)
	orderly := b.PopOrderly(group)
	first, n := int32(0), tc.ReadQueueNums
	if queueID >= 0 {
		first, n = queueID, 1
	}
	next := int64(0)
	for q := first; q < first+n; q++ {
		inflight := md.PopInflight(group, tc.TopicName, q)
		if inflight > 0 {
			exp, nx := popExpired(md, group, tc.TopicName, q, now, inflight)
			if nx > 0 && (next == 0 || nx < next) {
				next = nx
			}
			if !orderly || len(exp) == inflight {
				for _, e := range exp {
					if e.Attempt < maxAttempts {
						return true, next
					}
				}
			}
			if orderly || inflight >= b.pop.maxInflight {
				continue
			}
		}
		pos, had := md.PopPosition(group, tc.TopicName, q)
		if !had {
			pos = b.popStart(group, tc.TopicName, q, protocol.PopInitModeMin)
		}
		if end, err := st.MaxOffset(tc.TopicName, q); err == nil && end > pos {
			return true, next
		}
	}
	return false, next
}

// notificationRemote serves NOTIFICATION on the leader.
func (b *Broker) notificationRemote(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.NotificationRequestHeader
	if err := h.Decode(req.ExtMap()); err != nil {
		return nil, badPopHeader(err)
	}
	answer := func(rh protocol.NotificationResponseHeader) (*remoting.Command, error) {
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.ExtFields = rh.Encode()
		return resp, nil
	}
	deadline := time.Now().Add(remotePollTime(req))
	held := false
	defer func() {
		if held {
			b.pop.notifying.leave()
		}
	}()
	for {
		// Every look checks again, as Java's runs the request again when
		// it wakes: a new leader, or the topic gone meanwhile.
		if err := b.checkPop(); err != nil {
			return nil, err
		}
		tc, q, refused := b.popLookCheck(req, h.ConsumerGroup, h.Topic, h.QueueID)
		if refused != nil {
			return refused, nil
		}
		// Watch before looking, so a message stored in between wakes us.
		wake, done := b.pop.watch(h.Topic)
		has, next := b.popHasMsg(h.ConsumerGroup, tc, q)
		wait := time.Until(deadline)
		if has || wait <= 0 {
			done()
			return answer(protocol.NotificationResponseHeader{HasMsg: has})
		}
		if !held {
			if !b.pop.notifying.enter() {
				done()
				return answer(protocol.NotificationResponseHeader{PollingFull: true})
			}
			held = true
		}
		if next > 0 {
			wait = min(wait, max(time.Duration(next-b.nowMs())*time.Millisecond, popRecheck))
		}
		over := b.popWait(ctx, wake, wait)
		done()
		if over {
			return answer(protocol.NotificationResponseHeader{})
		}
	}
}

// pollingInfoRemote serves POLLING_INFO on the leader.
func (b *Broker) pollingInfoRemote(_ context.Context, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.PollingInfoRequestHeader
	if err := h.Decode(req.ExtMap()); err != nil {
		return nil, badPopHeader(err)
	}
	if err := b.checkPop(); err != nil {
		return nil, err
	}
	_, q, refused := b.popLookCheck(req, h.ConsumerGroup, h.Topic, h.QueueID)
	if refused != nil {
		return refused, nil
	}
	n := b.pop.polls.count(h.Topic, h.ConsumerGroup, q)
	resp := remoting.NewResponse(req, remoting.Success, "")
	rh := protocol.PollingInfoResponseHeader{PollingNum: int32(min(n, math.MaxInt32))}
	resp.ExtFields = rh.Encode()
	return resp, nil
}
