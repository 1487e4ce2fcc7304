package client

// Request-reply (RocketMQ 4.6+): Producer.Request sends a message that
// carries CORRELATION_ID, REPLY_TO_CLIENT (this producer's client id) and
// TTL, and waits for the reply. The consumer that handles it answers with
// NewReply, sent by any producer: the reply goes to the cluster's reply
// topic with SEND_REPLY_MESSAGE (324), and the broker that stores it pushes
// it to the requester with PUSH_REPLY_MESSAGE_TO_CLIENT (326) over the
// connection the requester heartbeats on. So a requester heartbeats (as a
// producer) the leaders of the request topic's route and of its cluster's
// reply topic before it sends.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// ErrRequestTimeout: no reply came within the request's timeout.
var ErrRequestTimeout = errors.New("client: no reply within the request timeout")

// replies is a producer's request-reply state: its heartbeat (started by
// the first Request) and the requests waiting for their replies.
type replies struct {
	mu      sync.Mutex
	hb      *producerHeartbeat
	waiting map[string]chan *MessageExt // by CORRELATION_ID
}

// Request sends m as a request and waits up to timeout for its reply (a
// message another client made with NewReply). The send itself retries as
// Send does; its errors are Send's. ErrRequestTimeout when the reply does
// not come in time.
func (p *Producer) Request(ctx context.Context, m *Message, timeout time.Duration) (*MessageExt, error) {
	if m == nil {
		return nil, failedError("", fmt.Errorf("%w: nil message", ErrInvalidMessage))
	}
	if timeout <= 0 {
		return nil, failedError(m.Topic, fmt.Errorf("%w: request timeout %v", ErrInvalidMessage, timeout))
	}
	if p.isClosed() {
		return nil, failedError(m.Topic, ErrClosed)
	}
	hb := p.requestHeartbeat()
	correlation := p.core.ids.Next()
	ch := make(chan *MessageExt, 1)
	r := &p.replies
	r.mu.Lock()
	r.waiting[correlation] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.waiting, correlation)
		r.mu.Unlock()
	}()

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p.announce(ctx, hb, m.Topic)
	out, err := p.prepareWith(m, map[string]string{
		message.PropertyCorrelationID: correlation,
		message.PropertyReplyToClient: hb.clientID,
		message.PropertyMessageTTL:    strconv.FormatInt(timeout.Milliseconds(), 10),
	})
	if err != nil {
		return nil, err
	}
	if err := p.begin(out.topic); err != nil {
		return nil, err
	}
	_, err = p.deliver(ctx, out, kindSync)
	p.sends.leave()
	if err != nil {
		return nil, err
	}
	select {
	case reply := <-ch:
		return reply, nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w (%v, correlation id %s)", ErrRequestTimeout, timeout, correlation)
		}
		return nil, ctx.Err()
	}
}

// requestHeartbeat starts the producer heartbeat a requester needs, once.
func (p *Producer) requestHeartbeat() *producerHeartbeat {
	r := &p.replies
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hb == nil {
		r.hb = newProducerHeartbeat(p)
	}
	return r.hb
}

// announce heartbeats the leaders of topic's route and of the reply topic
// of its clusters, where a reply may be stored and pushed from.
func (p *Producer) announce(ctx context.Context, hb *producerHeartbeat, topic string) {
	info, err := p.core.routes.get(ctx, topic)
	if err != nil {
		return // the send reports it
	}
	for _, addr := range info.leaders {
		hb.ensure(ctx, addr)
	}
	for _, cluster := range info.clusters {
		if ri, err := p.core.routes.get(ctx, protocol.ReplyTopic(cluster)); err == nil {
			for _, addr := range ri.leaders {
				hb.ensure(ctx, addr)
			}
		}
	}
}

// serveReply takes a PUSH_REPLY_MESSAGE_TO_CLIENT to the request waiting
// for it; a reply nobody waits for any more (its request timed out) is
// dropped, as Java's client drops it.
func (p *Producer) serveReply(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.ReplyMessageRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	props, err := message.DecodeProperties([]byte(h.Properties))
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, "reply properties: "+err.Error())
	}
	body := req.Body
	if h.SysFlag&message.SysFlagCompressed != 0 {
		if body, err = inflate(body, p.opts.maxMessageSize); err != nil {
			return remoting.NewResponse(req, remoting.SystemError, err.Error())
		}
	}
	m := &MessageExt{Ext: message.Ext{
		Message:        message.Message{Topic: h.Topic, Body: body, Flag: h.Flag, Properties: props},
		QueueID:        h.QueueID,
		SysFlag:        h.SysFlag &^ message.SysFlagCompressed,
		BornTimestamp:  h.BornTimestamp,
		StoreTimestamp: h.StoreTimestamp,
		ReconsumeTimes: h.ReconsumeTimes,
	}, Queue: Queue{Topic: h.Topic, QueueID: h.QueueID}, MsgID: props[message.PropertyUniqKey]}
	r := &p.replies
	r.mu.Lock()
	ch := r.waiting[props[message.PropertyCorrelationID]]
	r.mu.Unlock()
	if ch != nil {
		select {
		case ch <- m:
		default: // a second reply to the same request
		}
	} else {
		p.opts.logger.Debug("reply to no waiting request dropped", "correlation", props[message.PropertyCorrelationID])
	}
	return remoting.NewResponse(req, remoting.Success, "")
}

// NewReply is the reply to request, to be sent with any producer: body to
// the reply topic of the cluster that stored the request, with the
// request's correlation id, requester and time to live. A message that is
// not a request (no CORRELATION_ID, REPLY_TO_CLIENT or CLUSTER) is
// ErrInvalidMessage.
func NewReply(request *MessageExt, body []byte) (*Message, error) {
	if request == nil {
		return nil, fmt.Errorf("%w: nil request", ErrInvalidMessage)
	}
	props := request.Properties
	cluster, correlation, to := props[message.PropertyCluster], props[message.PropertyCorrelationID], props[message.PropertyReplyToClient]
	if cluster == "" || correlation == "" || to == "" {
		return nil, fmt.Errorf("%w: %s is no request (CLUSTER %q, CORRELATION_ID %q, REPLY_TO_CLIENT %q)",
			ErrInvalidMessage, request.MsgID, cluster, correlation, to)
	}
	return &Message{Topic: protocol.ReplyTopic(cluster), Body: body, Properties: map[string]string{
		message.PropertyCorrelationID: correlation,
		message.PropertyReplyToClient: to,
		message.PropertyMessageTTL:    props[message.PropertyMessageTTL],
		message.PropertyMessageType:   protocol.ReplyMessageType,
	}}, nil
}
