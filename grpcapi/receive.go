package grpcapi

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
)

// Popper is the broker's POP consumption, what the consumer side of the
// port uses (*broker.Broker implements it).
type Popper interface {
	PopMessages(ctx context.Context, r broker.PopRequest) ([]broker.Popped, error)
	AckPopped(ctx context.Context, group, topic string, handles []string) ([]error, error)
	ChangeInvisible(ctx context.Context, group, topic, handle string, d time.Duration) (string, error)
	PopToDeadLetter(ctx context.Context, group, topic, handle string) error
	PopMaxAttempts(group string) int32
	PopOrderly(group string) bool
}

const (
	// defaultInvisible is the invisible duration of a receive that names
	// none (a push consumer's auto-renewed receive).
	defaultInvisible = 30 * time.Second
	// pollMargin is kept of the client's deadline for the answer to get
	// back before it gives up.
	pollMargin = 500 * time.Millisecond
)

// popStatus maps an error of the broker's POP side to a Status.
func popStatus(err error) *v2pb.Status {
	code := v2pb.Code_INTERNAL_SERVER_ERROR
	switch {
	case errors.Is(err, broker.ErrInvalidReceipt):
		code = v2pb.Code_INVALID_RECEIPT_HANDLE
	case errors.Is(err, broker.ErrPopUnsupported):
		code = v2pb.Code_VERSION_UNSUPPORTED
	case errors.Is(err, broker.ErrTopicNotExist):
		code = v2pb.Code_TOPIC_NOT_FOUND
	case errors.Is(err, broker.ErrNoPermission):
		code = v2pb.Code_FORBIDDEN
	case errors.Is(err, broker.ErrSubscriptionParse), errors.Is(err, broker.ErrFilterNotSupported):
		code = v2pb.Code_ILLEGAL_FILTER_EXPRESSION
	case errors.Is(err, broker.ErrNotFound):
		code = v2pb.Code_NOT_FOUND
	case errors.Is(err, broker.ErrInvalidParameter), errors.Is(err, broker.ErrBadRequest):
		code = v2pb.Code_BAD_REQUEST
	}
	return newStatus(code, "%v", err)
}

// ReceiveMessage serves a POP receive: up to batch_size messages of the
// topic handed to the group by the broker (whatever queue the client
// names: the clients keep queue 0 only, and the broker picks across the
// topic's queues), each invisible to the group for invisible_duration.
// With none ready it waits up to long_polling_timeout (within the call's
// deadline). The answer: a Status (OK, or MESSAGE_NOT_FOUND when none
// came), the messages, then the delivery timestamp.
func (s *Server) ReceiveMessage(req *v2pb.ReceiveMessageRequest, stream v2pb.MessagingService_ReceiveMessageServer) error {
	send := func(st *v2pb.Status) error {
		return stream.Send(&v2pb.ReceiveMessageResponse{Content: &v2pb.ReceiveMessageResponse_Status{Status: st}})
	}
	group := topicName(req.GetGroup())
	topicRes := req.GetMessageQueue().GetTopic()
	topic := topicName(topicRes)
	if group == "" {
		return send(newStatus(v2pb.Code_ILLEGAL_CONSUMER_GROUP, "no consumer group named"))
	}
	if topic == "" {
		return send(newStatus(v2pb.Code_ILLEGAL_TOPIC, "no topic named"))
	}
	if req.GetBatchSize() <= 0 {
		return send(newStatus(v2pb.Code_BAD_REQUEST, "batch size %d", req.GetBatchSize()))
	}
	invisible := defaultInvisible
	if d := req.GetInvisibleDuration(); d != nil {
		if !d.IsValid() {
			return send(newStatus(v2pb.Code_ILLEGAL_INVISIBLE_TIME, "invisible duration %v", d))
		}
		invisible = d.AsDuration()
	}
	if invisible < broker.MinInvisible || invisible > broker.MaxInvisible {
		return send(newStatus(v2pb.Code_ILLEGAL_INVISIBLE_TIME, "invisible duration %v is not within [%v, %v]", invisible, broker.MinInvisible, broker.MaxInvisible))
	}
	wait := time.Duration(0)
	if d := req.GetLongPollingTimeout(); d != nil {
		if !d.IsValid() || d.AsDuration() < 0 {
			return send(newStatus(v2pb.Code_ILLEGAL_POLLING_TIME, "long polling timeout %v", d))
		}
		wait = d.AsDuration()
	}
	ctx := stream.Context()
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl)-pollMargin)
	}
	// The port's own stop ends a long poll at once.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.stopCtx, cancel)()
	c, fctx, st := s.consumerTarget(ctx, group, topic, req.GetMessageQueue().GetBroker().GetName())
	if st != nil {
		return send(st)
	}
	if c != nil {
		return relayReceive(fctx, c, req, stream, func() { s.be.relayFailed(topic, req.GetMessageQueue().GetBroker().GetName()) })
	}
	expr, exprType := filterOf(req.GetFilterExpression(), "")
	// A group new to a queue starts as Java's proxy starts it
	// (ConsumeInitMode.MAX): at the queue's last message, or its first
	// while the queue is young (broker.PopRequest.InitMode).
	got, err := s.be.popper().PopMessages(ctx, broker.PopRequest{Group: group, Topic: topic, Expression: expr, ExpressionType: exprType,
		Max: int(req.GetBatchSize()), Invisible: invisible, Wait: max(wait, 0), InitMode: protocol.PopInitModeMax})
	if err != nil {
		return send(popStatus(err))
	}
	if len(got) == 0 {
		return send(newStatus(v2pb.Code_MESSAGE_NOT_FOUND, "no new message"))
	}
	if err := send(okStatus()); err != nil {
		return err
	}
	for _, p := range got {
		m, err := toClientMessage(p, topicRes, invisible)
		if err != nil {
			s.log.Warn("a received message could not be converted; it is delivered again after its invisible time",
				"topic", topic, "queue", p.Msg.QueueID, "offset", p.Msg.QueueOffset, "error", err)
			continue
		}
		if err := stream.Send(&v2pb.ReceiveMessageResponse{Content: &v2pb.ReceiveMessageResponse_Message{Message: m}}); err != nil {
			return err
		}
	}
	return stream.Send(&v2pb.ReceiveMessageResponse{Content: &v2pb.ReceiveMessageResponse_DeliveryTimestamp{DeliveryTimestamp: timestamppb.Now()}})
}

// toClientMessage is a message handed out by a receive as the clients
// read it (clientMessage) with its receipt handle, invisible duration and
// delivery attempt.
func toClientMessage(p broker.Popped, topic *v2pb.Resource, invisible time.Duration) (*v2pb.Message, error) {
	out, err := clientMessage(p.Msg, topic)
	if err != nil {
		return nil, err
	}
	handle, attempt := p.Handle, p.Attempt
	sp := out.SystemProperties
	sp.ReceiptHandle, sp.InvisibleDuration, sp.DeliveryAttempt = &handle, durationpb.New(invisible), &attempt
	return out, nil
}

// clientMessage is a stored message as the clients read it: the body
// uncompressed with its CRC32 digest, the system properties from the
// stored ones (its queue id and offset among them), the rest as user
// properties.
func clientMessage(m *message.Ext, topic *v2pb.Resource) (*v2pb.Message, error) {
	body := m.Body
	if m.SysFlag&message.SysFlagCompressed != 0 {
		if m.SysFlag&(message.SysFlagCompressionLZ4|message.SysFlagCompressionZSTD) != 0 {
			return nil, errors.New("a body compressed other than by zlib")
		}
		zr, err := zlib.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		if body, err = io.ReadAll(io.LimitReader(zr, 64<<20)); err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
	}
	offset := m.QueueOffset
	sp := &v2pb.SystemProperties{
		MessageId:      m.MsgID(),
		BodyDigest:     &v2pb.Digest{Type: v2pb.DigestType_CRC32, Checksum: strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)},
		BodyEncoding:   v2pb.Encoding_IDENTITY,
		MessageType:    v2pb.MessageType_NORMAL,
		BornTimestamp:  timestamppb.New(time.UnixMilli(m.BornTimestamp)),
		BornHost:       m.BornHost.Addr().String(),
		StoreTimestamp: timestamppb.New(time.UnixMilli(m.StoreTimestamp)),
		StoreHost:      m.StoreHost.String(),
		QueueId:        m.QueueID,
		QueueOffset:    &offset,
		Keys:           m.Keys(),
	}
	if tag := m.Tags(); tag != "" {
		sp.Tag = &tag
	}
	if g := m.Properties[message.PropertyJavaShardingKey]; g != "" {
		sp.MessageGroup = &g
		sp.MessageType = v2pb.MessageType_FIFO
	}
	if v := m.Properties[message.PropertyTimerDeliverMS]; v != "" {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
			sp.DeliveryTimestamp = timestamppb.New(time.UnixMilli(ms))
			sp.MessageType = v2pb.MessageType_DELAY
		}
	}
	if m.Properties[message.PropertyTransactionPrepared] == "true" {
		sp.MessageType = v2pb.MessageType_TRANSACTION
	}
	user := make(map[string]string, len(m.Properties))
	for k, v := range m.Properties {
		if !reservedProperties[k] {
			user[k] = v
		}
	}
	t := topic
	if t == nil || t.GetName() == "" {
		t = &v2pb.Resource{Name: m.Topic}
	}
	return &v2pb.Message{Topic: t, UserProperties: user, SystemProperties: sp, Body: body}, nil
}

// filterOf is a request's filter as the broker takes it: the expression
// ("*" when empty) and its type, "SQL92" for SQL or else tagType.
func filterOf(fe *v2pb.FilterExpression, tagType string) (expr, exprType string) {
	expr, exprType = fe.GetExpression(), tagType
	if fe.GetType() == v2pb.FilterType_SQL {
		exprType = "SQL92"
	}
	if expr == "" {
		expr = "*"
	}
	return expr, exprType
}
