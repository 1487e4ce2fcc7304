package grpcapi

import (
	"cmp"
	"context"
	"net/netip"
	"strings"

	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// SendMessage stores each message of the request through the broker's
// send path, one SEND_MESSAGE_V2 each, in order; each entry answers one
// message. The response's status is OK when every message was stored,
// else the first refusal.
func (s *Server) SendMessage(ctx context.Context, req *v2pb.SendMessageRequest) (*v2pb.SendMessageResponse, error) {
	msgs := req.GetMessages()
	if len(msgs) == 0 {
		return &v2pb.SendMessageResponse{Status: newStatus(v2pb.Code_BAD_REQUEST, "no message to send")}, nil
	}
	resp := &v2pb.SendMessageResponse{Status: okStatus(), Entries: make([]*v2pb.SendResultEntry, 0, len(msgs))}
	from := peerOf(ctx)
	for _, m := range msgs {
		e := s.sendOne(ctx, from, m)
		if e.Status.Code != v2pb.Code_OK && resp.Status.Code == v2pb.Code_OK {
			resp.Status = e.Status
		}
		resp.Entries = append(resp.Entries, e)
	}
	return resp, nil
}

func (s *Server) sendOne(ctx context.Context, from netip.AddrPort, m *v2pb.Message) *v2pb.SendResultEntry {
	out, err := convert(m, s.cfg.MaxBodySize)
	if err != nil {
		return &v2pb.SendResultEntry{Status: statusOfError(err), MessageId: m.GetSystemProperties().GetMessageId()}
	}
	routes, err := s.be.routes(ctx, out.topic)
	if err != nil {
		return &v2pb.SendResultEntry{Status: routesStatus(out.topic, err), MessageId: out.messageID}
	}
	// Through the proxy, among the groups whose own rules let the caller
	// publish to the topic (clusteracl.go).
	routes = s.be.admitting(ctx, routes, extRequest(remoting.SendMessageV2, "b", out.topic))
	bg, q := pickQueue(routes, out.group, s.turn.Add(1))
	out.header.QueueID = q
	h := protocol.SendMessageRequestHeaderV2(out.header)
	rresp := s.be.serve(ctx, from, out.topic, bg, h.Request(out.body))
	st := statusOf(rresp)
	entry := &v2pb.SendResultEntry{Status: st, MessageId: out.messageID}
	if st.Code != v2pb.Code_OK {
		s.log.Debug("send refused", "topic", out.topic, "message", out.messageID, "peer", from.String(), "status", st.Code, "reason", st.Message)
		return entry
	}
	var rh protocol.SendMessageResponseHeader
	if err := rh.Decode(rresp.ExtFields); err != nil {
		entry.Status = newStatus(v2pb.Code_INTERNAL_SERVER_ERROR, "the broker's answer: %v", err)
		return entry
	}
	entry.Offset = rh.QueueOffset
	entry.RecallHandle = rh.RecallHandle // a timer message's (recall.go)
	if ids := rh.MsgIDs(); out.half && len(ids) == 1 {
		entry.TransactionId = formatTxnID(ids[0], rh.QueueOffset, bg)
	}
	return entry
}

// EndTransaction commits or rolls back the half message the transaction
// id names, through the broker's END_TRANSACTION (which a follower
// forwards to the leader), in the broker group the id names.
func (s *Server) EndTransaction(ctx context.Context, req *v2pb.EndTransactionRequest) (*v2pb.EndTransactionResponse, error) {
	t, err := parseTxnID(req.GetTransactionId())
	if err != nil {
		return &v2pb.EndTransactionResponse{Status: newStatus(v2pb.Code_INVALID_TRANSACTION_ID, "%v", err)}, nil
	}
	var decision int32
	switch req.GetResolution() {
	case v2pb.TransactionResolution_COMMIT:
		decision = protocol.TransactionCommit
	case v2pb.TransactionResolution_ROLLBACK:
		decision = protocol.TransactionRollback
	default:
		return &v2pb.EndTransactionResponse{Status: newStatus(v2pb.Code_BAD_REQUEST, "resolution %v is neither COMMIT nor ROLLBACK", req.GetResolution())}, nil
	}
	msgID := req.GetMessageId()
	if strings.ContainsAny(msgID, "\x00\x01\x02") {
		return &v2pb.EndTransactionResponse{Status: newStatus(v2pb.Code_ILLEGAL_MESSAGE_ID, "message id %q", msgID)}, nil
	}
	h := protocol.EndTransactionRequestHeader{
		ProducerGroup:        ProducerGroup,
		TranStateTableOffset: t.queueOffset,
		CommitLogOffset:      t.commitLogOffset,
		CommitOrRollback:     decision,
		FromTransactionCheck: req.GetSource() == v2pb.TransactionSource_SOURCE_SERVER_CHECK,
		MsgID:                t.offsetMsgID,
		TransactionID:        msgID,
		BrokerName:           cmp.Or(t.brokerName, s.cfg.BrokerName),
	}
	r := h.Request("")
	if t := topicName(req.GetTopic()); t != "" {
		// As RocketMQ 5's header: the broker group that ends it checks
		// PUB on the topic (its ACL, or the proxy's check of it).
		r.ExtFields["topic"] = t
	}
	rresp := s.be.serve(ctx, peerOf(ctx), topicName(req.GetTopic()), h.BrokerName, r)
	return &v2pb.EndTransactionResponse{Status: statusOf(rresp)}, nil
}
