package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// relayTimeout bounds a relayed request's wait for the consumer's answer.
const relayTimeout = 5 * time.Second

// relayToConsumer serves GET_CONSUMER_RUNNING_INFO (307) and
// CONSUME_MESSAGE_DIRECTLY (309), as Java's broker does: it finds the
// consumer by group and client id among the clients whose heartbeats this
// node holds, sends it the request (same code, ext and body; for 309 the
// body is the stored record the offset message id names, and ext
// brokerName is this group's), waits up to relayTimeout and answers what
// the consumer answered. A consumer this node does not hold, or one that
// does not answer in time, is SYSTEM_ERROR naming it.
func (b *Broker) relayToConsumer(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.ConsumerRelayRequestHeader
	if err := decodeHeader(&h, req.ExtFields); err != nil {
		return errorResponse(req, err)
	}
	ext := make(map[string]string, len(req.ExtFields)+1)
	for k, v := range req.ExtFields {
		ext[k] = v
	}
	body := req.Body
	if req.Code == remoting.ConsumeMessageDirectly {
		rec, err := b.recordOfMsgID(h.MsgID)
		if err != nil {
			return remoting.NewResponse(req, remoting.SystemError, err.Error())
		}
		body = rec
		ext["brokerName"] = b.cfg.BrokerName
	}
	conn := b.consumers.clientConn(h.ConsumerGroup, h.ClientID)
	if conn == nil {
		return remoting.NewResponse(req, remoting.SystemError,
			fmt.Sprintf("The Consumer <%s> <%s> not online", h.ConsumerGroup, h.ClientID))
	}
	cctx, cancel := context.WithTimeout(ctx, relayTimeout)
	defer cancel()
	resp, err := conn.Request(cctx, remoting.NewRequest(req.Code, ext, body))
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError,
			fmt.Sprintf("invoke consumer <%s> <%s>: %v", h.ConsumerGroup, h.ClientID, err))
	}
	out := *resp
	return &out
}

// recordOfMsgID returns the stored record an offset message id names.
func (b *Broker) recordOfMsgID(id string) ([]byte, error) {
	if id == "" {
		return nil, errors.New("CONSUME_MESSAGE_DIRECTLY needs msgId")
	}
	_, off, err := message.ParseOffsetMsgID(id)
	if err != nil {
		return nil, fmt.Errorf("msgId %q: %w", id, err)
	}
	m, err := b.group.Store().MessageAt(off)
	if err != nil {
		return nil, fmt.Errorf("can not find message by the offset %d: %w", off, err)
	}
	return message.AppendRecord(nil, m)
}
