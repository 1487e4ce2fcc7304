package grpcapi

import (
	"context"
	"hash/fnv"
	"net/netip"
	"strings"

	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
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
	tc, ok := s.cfg.Broker.Topic(out.topic)
	if !ok {
		return &v2pb.SendResultEntry{Status: newStatus(v2pb.Code_TOPIC_NOT_FOUND, "topic %s does not exist", out.topic), MessageId: out.messageID}
	}
	out.header.QueueID = chooseQueue(tc, out.group)
	h := protocol.SendMessageRequestHeaderV2(out.header)
	rresp := s.cfg.Broker.ServeLocal(ctx, from, h.Request(out.body))
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
	if ids := rh.MsgIDs(); out.half && len(ids) == 1 {
		entry.TransactionId = formatTxnID(ids[0], rh.QueueOffset)
	}
	return entry
}

// chooseQueue picks the queue of a message, as RocketMQ's proxy does
// (clients' queue ids are not taken: the Node.js client, for one, only
// ever names queue 0): a message group always goes to the same writable
// queue, so that the group stays in order; any other message to the
// queue the broker picks (-1: a writable queue at random).
func chooseQueue(tc metadata.TopicConfig, group string) int32 {
	if group == "" || tc.WriteQueueNums <= 0 {
		return -1
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(group))
	return int32(h.Sum32() % uint32(tc.WriteQueueNums))
}

// EndTransaction commits or rolls back the half message the transaction
// id names, through the broker's END_TRANSACTION (which a follower
// forwards to the leader).
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
		BrokerName:           s.cfg.BrokerName,
	}
	rresp := s.cfg.Broker.ServeLocal(ctx, peerOf(ctx), h.Request(""))
	return &v2pb.EndTransactionResponse{Status: statusOf(rresp)}, nil
}
