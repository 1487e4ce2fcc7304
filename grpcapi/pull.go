package grpcapi

// Offset-based consumption, RocketMQ 5's PullConsumer: the client picks
// the queues and keeps the offsets, the broker answers what is stored at
// an offset. Each call is the remoting request the broker already serves,
// sent through the backend as a send is (a node's broker: a follower
// answers pulls and queue offsets from its own replica, which holds
// committed data only, and forwards the group's offsets to the leader;
// the proxy: the group's leader over remoting):
//
//	gRPC call                 remoting request
//	------------------------  ------------------------------------------
//	PullMessage               PULL_MESSAGE (11), the filter as its
//	                          subscription, no offset committed
//	UpdateOffset              UPDATE_CONSUMER_OFFSET (15)
//	GetOffset                 QUERY_CONSUMER_OFFSET (14)
//	QueryOffset BEGINNING     GET_MIN_OFFSET (31)
//	QueryOffset END           GET_MAX_OFFSET (30)
//	QueryOffset TIMESTAMP     SEARCH_OFFSET_BY_TIMESTAMP (29)
//
// A call names its queue by the message queue's broker (the broker
// group's name; may be left empty where one group serves the topic) and
// id, which must be one of the topic's readable queues.

import (
	"context"
	"net/netip"
	"time"

	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

const (
	// maxPullBatch caps a pull's batch_size (RocketMQ's proxy bounds a
	// receive's batch at 32 too).
	maxPullBatch = 32
	// maxPullWait caps a pull's long_polling_timeout as the broker caps
	// the hold of a pull (below the clients' 30 s request timeout).
	maxPullWait = 25 * time.Second
)

// pullQueue is the queue a call names, checked against the topic's
// route: its topic, broker group and queue id.
type pullQueue struct {
	topic string
	group string
	id    int32
}

// queueOf checks mq: a valid topic name, a broker group serving the topic
// (the only one when mq names none), a readable queue id.
func (s *Server) queueOf(ctx context.Context, mq *v2pb.MessageQueue) (pullQueue, *v2pb.Status) {
	topic := topicName(mq.GetTopic())
	if err := protocol.ValidateTopic(topic); err != nil {
		return pullQueue{}, newStatus(v2pb.Code_ILLEGAL_TOPIC, "topic %q: %v", topic, err)
	}
	routes, err := s.be.routes(ctx, topic)
	if err != nil {
		return pullQueue{}, routesStatus(topic, err)
	}
	name := mq.GetBroker().GetName()
	var r *groupRoute
	for i := range routes {
		if routes[i].name == name || (name == "" && len(routes) == 1) {
			r = &routes[i]
			break
		}
	}
	switch {
	case r == nil && name == "":
		return pullQueue{}, newStatus(v2pb.Code_BAD_REQUEST, "the message queue names no broker, and %d broker groups serve topic %s", len(routes), topic)
	case r == nil:
		return pullQueue{}, newStatus(v2pb.Code_BAD_REQUEST, "broker group %q does not serve topic %s", name, topic)
	case mq.GetId() < 0 || mq.GetId() >= r.tc.ReadQueueNums:
		return pullQueue{}, newStatus(v2pb.Code_BAD_REQUEST, "queue %d of topic %s in broker group %s: it has %d readable queues",
			mq.GetId(), topic, r.name, r.tc.ReadQueueNums)
	}
	return pullQueue{topic: topic, group: r.name, id: mq.GetId()}, nil
}

// consumerQueue checks a call's consumer group and its queue (queueOf).
func (s *Server) consumerQueue(ctx context.Context, group *v2pb.Resource, mq *v2pb.MessageQueue) (string, pullQueue, *v2pb.Status) {
	g := topicName(group)
	if err := protocol.ValidateGroup(g); err != nil {
		return "", pullQueue{}, newStatus(v2pb.Code_ILLEGAL_CONSUMER_GROUP, "consumer group %q: %v", g, err)
	}
	q, st := s.queueOf(ctx, mq)
	return g, q, st
}

// PullMessage reads up to batch_size messages of the group's queue from
// offset, as PULL_MESSAGE with the filter expression as its subscription
// (TAG, or SQL92) and no offset committed. With nothing new it waits up
// to long_polling_timeout (capped at maxPullWait and within the call's
// deadline) for a message to come. The answer, as RocketMQ's proxy
// writes it: a Status (OK; MESSAGE_NOT_FOUND when nothing matched;
// ILLEGAL_OFFSET when offset is outside the queue), the messages found
// (as a receive hands them out, without receipt handle, with their queue
// offset), then the offset the next pull starts at. A refusal is a
// Status alone.
func (s *Server) PullMessage(req *v2pb.PullMessageRequest, stream v2pb.MessagingService_PullMessageServer) error {
	send := func(st *v2pb.Status) error {
		return stream.Send(&v2pb.PullMessageResponse{Content: &v2pb.PullMessageResponse_Status{Status: st}})
	}
	sendNext := func(next int64) error {
		return stream.Send(&v2pb.PullMessageResponse{Content: &v2pb.PullMessageResponse_NextOffset{NextOffset: next}})
	}
	ctx := stream.Context()
	group, q, st := s.consumerQueue(ctx, req.GetGroup(), req.GetMessageQueue())
	if st != nil {
		return send(st)
	}
	if req.GetBatchSize() <= 0 {
		return send(newStatus(v2pb.Code_BAD_REQUEST, "batch size %d", req.GetBatchSize()))
	}
	if req.GetOffset() < 0 {
		return send(newStatus(v2pb.Code_ILLEGAL_OFFSET, "offset %d", req.GetOffset()))
	}
	wait := time.Duration(0)
	if d := req.GetLongPollingTimeout(); d != nil {
		if !d.IsValid() || d.AsDuration() < 0 {
			return send(newStatus(v2pb.Code_ILLEGAL_POLLING_TIME, "long polling timeout %v", d))
		}
		wait = min(d.AsDuration(), maxPullWait)
	}
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl)-pollMargin)
	}
	// The port's own stop ends a long poll at once.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.stopCtx, cancel)()

	expr, exprType := filterOf(req.GetFilterExpression(), "TAG")
	h := protocol.PullMessageRequestHeader{
		ConsumerGroup:  group,
		Topic:          q.topic,
		QueueID:        q.id,
		QueueOffset:    req.GetOffset(),
		MaxMsgNums:     min(req.GetBatchSize(), maxPullBatch),
		Subscription:   expr,
		ExpressionType: exprType,
	}
	resp, next, st := s.pull(ctx, peerOf(ctx), q, h, time.Now().Add(max(wait, 0)))
	switch {
	case st != nil:
		return send(st)
	case resp.Code == remoting.PullOffsetMoved:
		if err := send(newStatus(v2pb.Code_ILLEGAL_OFFSET, "offset %d is outside the queue; the next pull starts at %d", req.GetOffset(), next)); err != nil {
			return err
		}
		return sendNext(next)
	case resp.Code != remoting.Success:
		if err := send(newStatus(v2pb.Code_MESSAGE_NOT_FOUND, "no new message")); err != nil {
			return err
		}
		return sendNext(next)
	}
	recs, err := message.DecodeRecords(resp.Body)
	if err != nil {
		return send(newStatus(v2pb.Code_INTERNAL_SERVER_ERROR, "the broker's messages: %v", err))
	}
	var out []*v2pb.Message
	for _, m := range recs {
		cm, err := clientMessage(m, req.GetMessageQueue().GetTopic())
		if err != nil {
			s.log.Warn("a pulled message could not be converted; it is skipped",
				"topic", q.topic, "queue", m.QueueID, "offset", m.QueueOffset, "error", err)
			continue
		}
		out = append(out, cm)
	}
	if len(out) == 0 {
		if err := send(newStatus(v2pb.Code_MESSAGE_NOT_FOUND, "no message that could be delivered")); err != nil {
			return err
		}
		return sendNext(next)
	}
	if err := send(okStatus()); err != nil {
		return err
	}
	for _, m := range out {
		if err := stream.Send(&v2pb.PullMessageResponse{Content: &v2pb.PullMessageResponse_Message{Message: m}}); err != nil {
			return err
		}
	}
	return sendNext(next)
}

// pull serves h as one pull the broker holds (the suspend flag, with the
// time left until until) until a message comes or the time is up: over
// remoting from the proxy, in process on a node's port (ServeLocalWait).
// An answer that found nothing but moved the offset on (messages the
// filter skipped, a page at a time) is asked on from there at once while
// time is left; the offsets only grow, so this ends. It returns the last
// answer, a pull answer (SUCCESS, PULL_NOT_FOUND, PULL_RETRY_IMMEDIATELY,
// PULL_OFFSET_MOVED) with the offset the next pull starts at, or the
// Status of any other answer.
func (s *Server) pull(ctx context.Context, from netip.AddrPort, q pullQueue, h protocol.PullMessageRequestHeader, until time.Time) (*remoting.Command, int64, *v2pb.Status) {
	for {
		h.SysFlag, h.SuspendTimeoutMillis = protocol.PullFlagSubscription, 0
		if left := time.Until(until); left > 0 {
			h.SysFlag |= protocol.PullFlagSuspend
			h.SuspendTimeoutMillis = max(left.Milliseconds(), 1)
		}
		resp := s.be.serve(ctx, from, q.topic, q.group, h.Request())
		if ctx.Err() != nil && (resp == nil || !pullAnswer(resp.Code)) {
			// Stopped, or the client went: nothing came.
			return &remoting.Command{Code: remoting.PullNotFound}, h.QueueOffset, nil
		}
		if resp == nil || !pullAnswer(resp.Code) {
			return nil, 0, statusOf(resp)
		}
		var rh protocol.PullMessageResponseHeader
		if err := rh.Decode(resp.ExtFields); err != nil {
			return nil, 0, newStatus(v2pb.Code_INTERNAL_SERVER_ERROR, "the broker's answer: %v", err)
		}
		if resp.Code == remoting.Success || resp.Code == remoting.PullOffsetMoved ||
			rh.NextBeginOffset <= h.QueueOffset || time.Until(until) <= 0 || ctx.Err() != nil {
			// Found, moved, or nothing more to read before the time is
			// up: the hold ended (PULL_NOT_FOUND), or the broker asks the
			// same offset again (a follower behind).
			return resp, rh.NextBeginOffset, nil
		}
		h.QueueOffset = rh.NextBeginOffset
	}
}

// pullAnswer reports whether code is one of a pull's answers.
func pullAnswer(code int32) bool {
	switch code {
	case remoting.Success, remoting.PullNotFound, remoting.PullRetryImmediately, remoting.PullOffsetMoved:
		return true
	}
	return false
}

// UpdateOffset commits the group's offset of the queue, as
// UPDATE_CONSUMER_OFFSET (the group's leader replicates it through raft).
func (s *Server) UpdateOffset(ctx context.Context, req *v2pb.UpdateOffsetRequest) (*v2pb.UpdateOffsetResponse, error) {
	group, q, st := s.consumerQueue(ctx, req.GetGroup(), req.GetMessageQueue())
	if st != nil {
		return &v2pb.UpdateOffsetResponse{Status: st}, nil
	}
	if req.GetOffset() < 0 {
		return &v2pb.UpdateOffsetResponse{Status: newStatus(v2pb.Code_ILLEGAL_OFFSET, "offset %d", req.GetOffset())}, nil
	}
	h := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: q.topic, QueueID: q.id, CommitOffset: req.GetOffset(), BrokerName: q.group}
	resp := s.be.serve(ctx, peerOf(ctx), q.topic, q.group, h.Request())
	return &v2pb.UpdateOffsetResponse{Status: statusOf(resp)}, nil
}

// GetOffset answers the group's committed offset of the queue, as
// QUERY_CONSUMER_OFFSET with setZeroIfNotFound=false, as Java's proxy
// asks it: a group that has none is OFFSET_NOT_FOUND (the clients then
// start where their policy says, the queue's end by default).
func (s *Server) GetOffset(ctx context.Context, req *v2pb.GetOffsetRequest) (*v2pb.GetOffsetResponse, error) {
	group, q, st := s.consumerQueue(ctx, req.GetGroup(), req.GetMessageQueue())
	if st != nil {
		return &v2pb.GetOffsetResponse{Status: st}, nil
	}
	h := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: q.topic, QueueID: q.id, BrokerName: q.group,
		NotFoundIfNone: true}
	resp := s.be.serve(ctx, peerOf(ctx), q.topic, q.group, h.Request())
	off, st := offsetOf(resp)
	if resp != nil && resp.Code == remoting.QueryNotFound {
		st = newStatus(v2pb.Code_OFFSET_NOT_FOUND, "consumer group %s has no offset of queue %d of %s: %s", group, q.id, q.topic, resp.Remark)
	}
	return &v2pb.GetOffsetResponse{Status: st, Offset: off}, nil
}

// QueryOffset answers an offset of the queue: its first (BEGINNING, as
// GET_MIN_OFFSET), the one past its last (END, GET_MAX_OFFSET), or the
// first stored at or after the timestamp, which that policy requires
// (TIMESTAMP, SEARCH_OFFSET_BY_TIMESTAMP; END when every message is
// older).
func (s *Server) QueryOffset(ctx context.Context, req *v2pb.QueryOffsetRequest) (*v2pb.QueryOffsetResponse, error) {
	q, st := s.queueOf(ctx, req.GetMessageQueue())
	if st != nil {
		return &v2pb.QueryOffsetResponse{Status: st}, nil
	}
	var r *remoting.Command
	switch p := req.GetQueryOffsetPolicy(); p {
	case v2pb.QueryOffsetPolicy_BEGINNING, v2pb.QueryOffsetPolicy_END:
		code := remoting.GetMinOffset
		if p == v2pb.QueryOffsetPolicy_END {
			code = remoting.GetMaxOffset
		}
		h := protocol.QueueOffsetRequestHeader{Topic: q.topic, QueueID: q.id, BrokerName: q.group}
		r = h.Request(code)
	case v2pb.QueryOffsetPolicy_TIMESTAMP:
		if req.Timestamp == nil {
			return &v2pb.QueryOffsetResponse{Status: newStatus(v2pb.Code_BAD_REQUEST, "the TIMESTAMP policy needs a timestamp")}, nil
		}
		if err := req.GetTimestamp().CheckValid(); err != nil {
			return &v2pb.QueryOffsetResponse{Status: newStatus(v2pb.Code_BAD_REQUEST, "timestamp: %v", err)}, nil
		}
		h := protocol.SearchOffsetRequestHeader{Topic: q.topic, QueueID: q.id, Timestamp: req.GetTimestamp().AsTime().UnixMilli(), BrokerName: q.group}
		r = h.Request()
	default:
		return &v2pb.QueryOffsetResponse{Status: newStatus(v2pb.Code_BAD_REQUEST, "query offset policy %v", p)}, nil
	}
	off, st := offsetOf(s.be.serve(ctx, peerOf(ctx), q.topic, q.group, r))
	return &v2pb.QueryOffsetResponse{Status: st, Offset: off}, nil
}

// offsetOf is the offset of an offset request's answer and its Status.
func offsetOf(resp *remoting.Command) (int64, *v2pb.Status) {
	st := statusOf(resp)
	if st.GetCode() != v2pb.Code_OK {
		return 0, st
	}
	var h protocol.OffsetResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return 0, newStatus(v2pb.Code_INTERNAL_SERVER_ERROR, "the broker's answer: %v", err)
	}
	return h.Offset, st
}
