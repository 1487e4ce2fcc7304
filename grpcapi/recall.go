package grpcapi

import (
	"context"

	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/protocol"
)

// RecallMessage recalls a timer message before it is due, by the recall
// handle SendMessage answered for it (SendResultEntry.recall_handle),
// through the broker's RECALL_MESSAGE (broker/recall.go), in the broker
// group the handle names (a follower forwards it to the leader).
//
// The answer, as RocketMQ's proxy gives it: OK with the message's id (also
// when no such message is parked: the broker records the recall until its
// time); a handle that does not decode BAD_REQUEST (the proxy answers
// INTERNAL_SERVER_ERROR, which says less); the broker's refusals by
// statusOf — its ILLEGAL_OPERATION (the handle's time passed, the message
// delivered already, the handle names another topic or group) is
// INTERNAL_SERVER_ERROR, as the proxy maps it, with the broker's remark;
// an unknown topic TOPIC_NOT_FOUND.
func (s *Server) RecallMessage(ctx context.Context, req *v2pb.RecallMessageRequest) (*v2pb.RecallMessageResponse, error) {
	topic := topicName(req.GetTopic())
	if topic == "" {
		return &v2pb.RecallMessageResponse{Status: newStatus(v2pb.Code_ILLEGAL_TOPIC, "no topic")}, nil
	}
	handle, err := protocol.DecodeRecallHandle(req.GetRecallHandle())
	if err != nil {
		return &v2pb.RecallMessageResponse{Status: newStatus(v2pb.Code_BAD_REQUEST, "%v", err)}, nil
	}
	h := protocol.RecallMessageRequestHeader{ProducerGroup: ProducerGroup, Topic: topic,
		RecallHandle: req.GetRecallHandle(), BrokerName: handle.BrokerName}
	rresp := s.be.serve(ctx, peerOf(ctx), topic, handle.BrokerName, h.Request())
	st := statusOf(rresp)
	if st.Code != v2pb.Code_OK {
		s.log.Debug("recall refused", "topic", topic, "message", handle.MessageID, "status", st.Code, "reason", st.Message)
		return &v2pb.RecallMessageResponse{Status: st}, nil
	}
	var rh protocol.RecallMessageResponseHeader
	if err := rh.Decode(rresp.ExtMap()); err != nil {
		return &v2pb.RecallMessageResponse{Status: newStatus(v2pb.Code_INTERNAL_SERVER_ERROR, "the broker's answer: %v", err)}, nil
	}
	return &v2pb.RecallMessageResponse{Status: st, MessageId: rh.MsgID}, nil
}
