package grpcapi

import (
	"context"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/protocol"
)

// AckMessage acknowledges received messages by their receipt handles, all
// in one raft entry. Each entry gets its own Status (INVALID_RECEIPT_HANDLE
// for a handle no longer held: acknowledged before, or the message
// delivered again since); the response's Status is OK when all are
// acknowledged, MULTIPLE_RESULTS when some are not, and the first
// entry's when none is.
func (s *Server) AckMessage(ctx context.Context, req *v2pb.AckMessageRequest) (*v2pb.AckMessageResponse, error) {
	group, topic := topicName(req.GetGroup()), topicName(req.GetTopic())
	if st := checkNames(group, topic); st != nil {
		return &v2pb.AckMessageResponse{Status: st}, nil
	}
	handles := make([]string, len(req.GetEntries()))
	bg := ""
	for i, e := range req.GetEntries() {
		handles[i] = e.GetReceiptHandle()
		if g := handleGroup(handles[i]); i == 0 {
			bg = g
		} else if g != bg {
			return &v2pb.AckMessageResponse{Status: newStatus(v2pb.Code_BAD_REQUEST, "the receipt handles of one ack are of one broker group")}, nil
		}
	}
	c, fctx, st := s.consumerTarget(ctx, group, topic, bg)
	if st != nil {
		return &v2pb.AckMessageResponse{Status: st}, nil
	}
	if c != nil {
		resp, err := c.AckMessage(fctx, req)
		if err != nil {
			s.be.relayFailed(topic, bg)
			return &v2pb.AckMessageResponse{Status: relayStatus(err)}, nil
		}
		return resp, nil
	}
	errs, err := s.be.popper().AckPopped(ctx, group, topic, handles)
	if err != nil {
		return &v2pb.AckMessageResponse{Status: popStatus(err)}, nil
	}
	resp := &v2pb.AckMessageResponse{Entries: make([]*v2pb.AckMessageResultEntry, len(handles))}
	failed := 0
	for i, e := range req.GetEntries() {
		st := okStatus()
		if errs[i] != nil {
			st = popStatus(errs[i])
			failed++
		}
		resp.Entries[i] = &v2pb.AckMessageResultEntry{MessageId: e.GetMessageId(), ReceiptHandle: e.GetReceiptHandle(), Status: st}
	}
	switch {
	case failed == 0:
		resp.Status = okStatus()
	case failed == len(handles):
		resp.Status = resp.Entries[0].Status
	default:
		resp.Status = newStatus(v2pb.Code_MULTIPLE_RESULTS, "%d of %d messages not acknowledged", failed, len(handles))
	}
	return resp, nil
}

// ChangeInvisibleDuration makes a received message invisible for the
// duration asked, from now, and answers its new receipt handle (the one
// sent is stale from then on).
func (s *Server) ChangeInvisibleDuration(ctx context.Context, req *v2pb.ChangeInvisibleDurationRequest) (*v2pb.ChangeInvisibleDurationResponse, error) {
	group, topic := topicName(req.GetGroup()), topicName(req.GetTopic())
	if st := checkNames(group, topic); st != nil {
		return &v2pb.ChangeInvisibleDurationResponse{Status: st}, nil
	}
	d := req.GetInvisibleDuration()
	if d == nil || !d.IsValid() || d.AsDuration() < 0 || d.AsDuration() > broker.MaxInvisible {
		return &v2pb.ChangeInvisibleDurationResponse{Status: newStatus(v2pb.Code_ILLEGAL_INVISIBLE_TIME, "invisible duration %v", d)}, nil
	}
	bg := handleGroup(req.GetReceiptHandle())
	c, fctx, st := s.consumerTarget(ctx, group, topic, bg)
	if st != nil {
		return &v2pb.ChangeInvisibleDurationResponse{Status: st}, nil
	}
	if c != nil {
		resp, err := c.ChangeInvisibleDuration(fctx, req)
		if err != nil {
			s.be.relayFailed(topic, bg)
			return &v2pb.ChangeInvisibleDurationResponse{Status: relayStatus(err)}, nil
		}
		return resp, nil
	}
	h, err := s.be.popper().ChangeInvisible(ctx, group, topic, req.GetReceiptHandle(), d.AsDuration())
	if err != nil {
		return &v2pb.ChangeInvisibleDurationResponse{Status: popStatus(err)}, nil
	}
	return &v2pb.ChangeInvisibleDurationResponse{Status: okStatus(), ReceiptHandle: h}, nil
}

// ForwardMessageToDeadLetterQueue stores the received message in the
// group's dead-letter queue (%DLQ%<group>) and forgets its receipt: the
// client gave up on it (a push consumer past its attempts).
func (s *Server) ForwardMessageToDeadLetterQueue(ctx context.Context, req *v2pb.ForwardMessageToDeadLetterQueueRequest) (*v2pb.ForwardMessageToDeadLetterQueueResponse, error) {
	group, topic := topicName(req.GetGroup()), topicName(req.GetTopic())
	if st := checkNames(group, topic); st != nil {
		return &v2pb.ForwardMessageToDeadLetterQueueResponse{Status: st}, nil
	}
	bg := handleGroup(req.GetReceiptHandle())
	c, fctx, st := s.consumerTarget(ctx, group, topic, bg)
	if st != nil {
		return &v2pb.ForwardMessageToDeadLetterQueueResponse{Status: st}, nil
	}
	if c != nil {
		resp, err := c.ForwardMessageToDeadLetterQueue(fctx, req)
		if err != nil {
			s.be.relayFailed(topic, bg)
			return &v2pb.ForwardMessageToDeadLetterQueueResponse{Status: relayStatus(err)}, nil
		}
		return resp, nil
	}
	if err := s.be.popper().PopToDeadLetter(ctx, group, topic, req.GetReceiptHandle()); err != nil {
		return &v2pb.ForwardMessageToDeadLetterQueueResponse{Status: popStatus(err)}, nil
	}
	return &v2pb.ForwardMessageToDeadLetterQueueResponse{Status: okStatus()}, nil
}

// QueryAssignment answers a push consumer's assignment as RocketMQ's proxy
// does for POP consumption: one queue of each broker group with a
// readable queue (id -1: the broker picks the queues of each receive) at
// the endpoint serving it.
func (s *Server) QueryAssignment(ctx context.Context, req *v2pb.QueryAssignmentRequest) (*v2pb.QueryAssignmentResponse, error) {
	topic := topicName(req.GetTopic())
	if topic == "" {
		return &v2pb.QueryAssignmentResponse{Status: newStatus(v2pb.Code_ILLEGAL_TOPIC, "no topic named")}, nil
	}
	routes, err := s.be.routes(ctx, topic)
	if err != nil {
		return &v2pb.QueryAssignmentResponse{Status: routesStatus(topic, err)}, nil
	}
	resp := &v2pb.QueryAssignmentResponse{Status: okStatus()}
	for _, r := range routes {
		if perm := permission(r.tc, 0); perm == v2pb.Permission_READ || perm == v2pb.Permission_READ_WRITE {
			broker := &v2pb.Broker{Name: r.name, Id: 0, Endpoints: endpointsOf(r.endpoint)}
			resp.Assignments = append(resp.Assignments, &v2pb.Assignment{MessageQueue: &v2pb.MessageQueue{
				Topic: req.GetTopic(), Id: -1, Permission: perm, Broker: broker, AcceptMessageTypes: acceptedTypes,
			}})
		}
	}
	return resp, nil
}

// Heartbeat acknowledges: a producer needs nothing registered, and a POP
// consumer is known by its requests (it holds no queues to rebalance).
// A consumer's group name is checked.
func (s *Server) Heartbeat(_ context.Context, req *v2pb.HeartbeatRequest) (*v2pb.HeartbeatResponse, error) {
	switch req.GetClientType() {
	case v2pb.ClientType_SIMPLE_CONSUMER, v2pb.ClientType_PUSH_CONSUMER:
		if err := protocol.ValidateGroup(topicName(req.GetGroup())); err != nil {
			return &v2pb.HeartbeatResponse{Status: newStatus(v2pb.Code_ILLEGAL_CONSUMER_GROUP, "consumer group: %v", err)}, nil
		}
	}
	return &v2pb.HeartbeatResponse{Status: okStatus()}, nil
}

// checkNames checks a consumer request's group and topic.
func checkNames(group, topic string) *v2pb.Status {
	if err := protocol.ValidateGroup(group); err != nil {
		return newStatus(v2pb.Code_ILLEGAL_CONSUMER_GROUP, "consumer group %q: %v", group, err)
	}
	if err := protocol.ValidateTopic(topic); err != nil {
		return newStatus(v2pb.Code_ILLEGAL_TOPIC, "topic %q: %v", topic, err)
	}
	return nil
}
