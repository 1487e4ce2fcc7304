package grpcapi

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
)

// ProducerGroup is the producer group of every message sent over gRPC:
// RocketMQ 5 producers have none, and a transaction's half message must
// name the group its END_TRANSACTION comes from.
const ProducerGroup = "LEDGERMQ_GRPC_PRODUCER"

// reservedProperties are the property names the broker or this port set;
// a user property may not take one (ILLEGAL_MESSAGE_PROPERTY_KEY), as
// RocketMQ's proxy refuses them.
var reservedProperties = map[string]bool{}

func init() {
	for _, k := range []string{
		message.PropertyTags, message.PropertyKeys, message.PropertyUniqKey, message.PropertyWaitStoreMsgOK,
		message.PropertyDelayLevel, message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec,
		message.PropertyTimerDelayMS, message.PropertyTransactionPrepared, message.PropertyProducerGroup,
		message.PropertyTransactionID, message.PropertyRealTopic, message.PropertyRealQueueID,
		message.PropertyRetryTopic, message.PropertyOriginMessageID, message.PropertyReconsumeTime,
		message.PropertyMaxReconsumeTimes, message.PropertyMinOffset, message.PropertyMaxOffset,
		message.PropertyConsumeStartTime, message.PropertyMsgRegion, message.PropertyTraceSwitch,
		message.PropertyCluster, message.PropertyTransactionPreparedQueueOffset,
		message.PropertyTransactionCheckTimes, message.PropertyCheckImmunityTimeInSeconds,
		message.PropertyMessageType, message.PropertyShardingKey, message.PropertyJavaShardingKey,
		message.PropertyInnerNum,
	} {
		reservedProperties[k] = true
	}
}

// statusError is a refusal of a message with the Status to answer.
type statusError struct {
	code v2pb.Code
	msg  string
}

func (e *statusError) Error() string { return e.msg }

func refuse(code v2pb.Code, format string, args ...any) error {
	return &statusError{code: code, msg: fmt.Sprintf(format, args...)}
}

// statusOfError is the Status of a conversion error.
func statusOfError(err error) *v2pb.Status {
	var se *statusError
	if errors.As(err, &se) {
		return &v2pb.Status{Code: se.code, Message: se.msg}
	}
	return newStatus(v2pb.Code_BAD_REQUEST, "%v", err)
}

// topicName is a resource's name as the broker knows it: with a
// namespace, RocketMQ's "namespace%name".
func topicName(r *v2pb.Resource) string {
	if r == nil {
		return ""
	}
	if ns := r.GetResourceNamespace(); ns != "" {
		return ns + "%" + r.GetName()
	}
	return r.GetName()
}

// outgoing is one gRPC message converted for the broker's send path.
type outgoing struct {
	topic     string
	messageID string
	group     string // the FIFO message group, "" for none
	half      bool   // a transaction's half message
	header    protocol.SendMessageRequestHeader
	body      []byte
}

// convert turns a client's Message into the SEND_MESSAGE_V2 header and
// body the broker stores (its queue id is left to the caller). It decodes
// bytes from the network: it never panics, and every refusal is a
// *statusError naming the field (FuzzConvert).
//
//   - system_properties.message_id (required) becomes UNIQ_KEY;
//   - tag becomes TAGS, keys become KEYS (space-separated);
//   - message_group becomes the sharding key (__SHARDINGKEY, as Java's
//     clients read it, and SHARDING_KEY, as ledgermq's and Go's do);
//   - delivery_timestamp becomes TIMER_DELIVER_MS;
//   - message_type TRANSACTION makes a half message (TRAN_MSG, PGROUP);
//   - a GZIP body is inflated (the broker stores bodies as sent by the
//     remoting clients: uncompressed, or zlib with its sysflag);
//   - user_properties are kept, except names the broker reserves.
func convert(m *v2pb.Message, maxBody int) (outgoing, error) {
	var out outgoing
	if m == nil {
		return out, refuse(v2pb.Code_BAD_REQUEST, "a message is empty")
	}
	out.topic = topicName(m.GetTopic())
	if err := protocol.ValidateTopic(out.topic); err != nil {
		return out, refuse(v2pb.Code_ILLEGAL_TOPIC, "topic %q: %v", out.topic, err)
	}
	sp := m.GetSystemProperties()
	if sp == nil {
		return out, refuse(v2pb.Code_BAD_REQUEST, "message of topic %s has no system properties", out.topic)
	}
	out.messageID = sp.GetMessageId()
	if out.messageID == "" || len(out.messageID) > 128 || strings.ContainsAny(out.messageID, "\x00\x01\x02, ") {
		return out, refuse(v2pb.Code_ILLEGAL_MESSAGE_ID, "message id %q is empty, too long or has separators", out.messageID)
	}
	body, err := inflate(m.GetBody(), sp.GetBodyEncoding(), maxBody)
	if err != nil {
		return out, err
	}
	if len(body) == 0 {
		return out, refuse(v2pb.Code_MESSAGE_BODY_EMPTY, "message %s has an empty body", out.messageID)
	}
	out.body = body

	props := make(map[string]string, len(m.GetUserProperties())+6)
	for k, v := range m.GetUserProperties() {
		if k == "" || reservedProperties[k] {
			return out, refuse(v2pb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "property name %q is empty or reserved", k)
		}
		props[k] = v
	}
	if sp.Tag != nil {
		tag := sp.GetTag()
		if strings.TrimSpace(tag) == "" || strings.Contains(tag, "|") {
			return out, refuse(v2pb.Code_ILLEGAL_MESSAGE_TAG, "tag %q is blank or has '|'", tag)
		}
		props[message.PropertyTags] = tag
	}
	if keys := sp.GetKeys(); len(keys) > 0 {
		for _, k := range keys {
			if strings.TrimSpace(k) == "" || strings.Contains(k, " ") {
				return out, refuse(v2pb.Code_ILLEGAL_MESSAGE_KEY, "key %q is blank or has a space", k)
			}
		}
		props[message.PropertyKeys] = strings.Join(keys, " ")
	}
	props[message.PropertyUniqKey] = out.messageID

	typ := sp.GetMessageType()
	if sp.MessageGroup != nil {
		out.group = sp.GetMessageGroup()
		if strings.TrimSpace(out.group) == "" {
			return out, refuse(v2pb.Code_ILLEGAL_MESSAGE_GROUP, "message group %q is blank", out.group)
		}
		props[message.PropertyJavaShardingKey] = out.group
		props[message.PropertyShardingKey] = out.group
	}
	if sp.DeliveryTimestamp != nil {
		ts := sp.GetDeliveryTimestamp()
		if !ts.IsValid() {
			return out, refuse(v2pb.Code_ILLEGAL_DELIVERY_TIME, "delivery timestamp %v is not a time", ts)
		}
		props[message.PropertyTimerDeliverMS] = strconv.FormatInt(ts.AsTime().UnixMilli(), 10)
	}
	switch typ {
	case v2pb.MessageType_TRANSACTION:
		if out.group != "" || sp.DeliveryTimestamp != nil {
			return out, refuse(v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
				"a transactional message cannot have a message group or a delivery timestamp")
		}
		out.half = true
		props[message.PropertyTransactionPrepared] = "true"
	case v2pb.MessageType_FIFO:
		if out.group == "" {
			return out, refuse(v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "a FIFO message needs a message group")
		}
	case v2pb.MessageType_DELAY:
		if sp.DeliveryTimestamp == nil {
			return out, refuse(v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "a DELAY message needs a delivery timestamp")
		}
	}
	props[message.PropertyProducerGroup] = ProducerGroup
	if err := message.ValidateProperties(props); err != nil {
		return out, refuse(v2pb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "properties: %v", err)
	}
	enc := message.EncodeProperties(props)
	if len(enc) > message.MaxPropertiesLength {
		return out, refuse(v2pb.Code_MESSAGE_PROPERTIES_TOO_LARGE, "properties of %d bytes are longer than %d", len(enc), message.MaxPropertiesLength)
	}
	born := int64(0)
	if ts := sp.GetBornTimestamp(); ts != nil && ts.IsValid() {
		born = ts.AsTime().UnixMilli()
	}
	var sysFlag int32
	if out.half {
		sysFlag |= message.SysFlagTransactionPrepared
	}
	out.header = protocol.SendMessageRequestHeader{
		ProducerGroup:         ProducerGroup,
		Topic:                 out.topic,
		DefaultTopic:          "TBW102",
		DefaultTopicQueueNums: 4,
		QueueID:               -1,
		SysFlag:               sysFlag,
		BornTimestamp:         born,
		Properties:            string(enc),
	}
	return out, nil
}

// inflate returns the body as stored: as sent, or a GZIP body inflated,
// in both cases at most maxBody bytes.
func inflate(body []byte, enc v2pb.Encoding, maxBody int) ([]byte, error) {
	switch enc {
	case v2pb.Encoding_ENCODING_UNSPECIFIED, v2pb.Encoding_IDENTITY:
		if len(body) > maxBody {
			return nil, refuse(v2pb.Code_MESSAGE_BODY_TOO_LARGE, "the body of %d bytes is over the limit of %d", len(body), maxBody)
		}
		return body, nil
	case v2pb.Encoding_GZIP:
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, refuse(v2pb.Code_MESSAGE_CORRUPTED, "gzip body: %v", err)
		}
		defer zr.Close()
		out, err := io.ReadAll(io.LimitReader(zr, int64(maxBody)+1))
		if err != nil {
			return nil, refuse(v2pb.Code_MESSAGE_CORRUPTED, "gzip body: %v", err)
		}
		if len(out) > maxBody {
			return nil, refuse(v2pb.Code_MESSAGE_BODY_TOO_LARGE, "the inflated body is over the limit of %d bytes", maxBody)
		}
		return out, nil
	default:
		return nil, refuse(v2pb.Code_BAD_REQUEST, "body encoding %v is unknown", enc)
	}
}
