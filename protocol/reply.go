package protocol

import "github.com/ledgermq/ledgermq/remoting"

// Request-reply (RocketMQ 4.6+). A requester sends an ordinary message
// whose properties carry CORRELATION_ID, REPLY_TO_CLIENT (its client id)
// and TTL; the consumer that handles it sends the reply with
// SEND_REPLY_MESSAGE (324, the send header's long names) or
// SEND_REPLY_MESSAGE_V2 (325, the one-letter names) to the topic
// "<cluster>_REPLY_TOPIC", MSG_TYPE "reply". The broker stores the reply
// and pushes it to the requester with PUSH_REPLY_MESSAGE_TO_CLIENT (326)
// over the connection the requester's producer heartbeats on.

// Request-reply's own names (its properties are package message's:
// PropertyCorrelationID, PropertyReplyToClient, PropertyMessageTTL,
// PropertyMessageType, PropertyArriveTime).
const (
	// PropertyPushReplyTime is the time the broker pushed a reply (Java
	// MessageConst.PROPERTY_PUSH_REPLY_TIME).
	PropertyPushReplyTime = "PUSH_REPLY_TIME"
	// ReplyMessageType is MSG_TYPE's value on a reply.
	ReplyMessageType = "reply"
	// ReplyTopicSuffix makes a cluster's reply topic:
	// ReplyTopic(cluster) = cluster + "_" + ReplyTopicSuffix.
	ReplyTopicSuffix = "REPLY_TOPIC"
)

// ReplyTopic is the topic replies of cluster's brokers go to (Java
// MixAll.REPLY_TOPIC_POSTFIX).
func ReplyTopic(cluster string) string { return cluster + "_" + ReplyTopicSuffix }

// ReplyMessageRequestHeader is the header of PUSH_REPLY_MESSAGE_TO_CLIENT
// (326), broker → requester: the reply's send header, where the broker
// received and stored it, and its properties with PUSH_REPLY_TIME added.
// The body is the reply's body as the replier sent it (SysFlag says
// whether it is compressed).
//
//	field                  ext name               required
//	---------------------  ---------------------  --------
//	ProducerGroup          producerGroup          yes
//	Topic                  topic                  yes
//	DefaultTopic           defaultTopic           yes
//	DefaultTopicQueueNums  defaultTopicQueueNums  yes
//	QueueID                queueId                yes
//	SysFlag                sysFlag                yes
//	BornTimestamp          bornTimestamp          yes
//	Flag                   flag                   yes
//	Properties             properties
//	ReconsumeTimes         reconsumeTimes
//	UnitMode               unitMode
//	BornHost               bornHost               yes
//	StoreHost              storeHost              yes
//	StoreTimestamp         storeTimestamp         yes
type ReplyMessageRequestHeader struct {
	ProducerGroup         string
	Topic                 string
	DefaultTopic          string
	DefaultTopicQueueNums int32
	QueueID               int32
	SysFlag               int32
	BornTimestamp         int64
	Flag                  int32
	Properties            string
	ReconsumeTimes        int32
	UnitMode              bool
	// BornHost and StoreHost are Java's InetSocketAddress.toString():
	// "/127.0.0.1:4242".
	BornHost       string
	StoreHost      string
	StoreTimestamp int64
}

// Encode returns the ext fields, every field written.
func (h *ReplyMessageRequestHeader) Encode() map[string]string {
	return map[string]string{
		"producerGroup":         h.ProducerGroup,
		"topic":                 h.Topic,
		"defaultTopic":          h.DefaultTopic,
		"defaultTopicQueueNums": itoa32(h.DefaultTopicQueueNums),
		"queueId":               itoa32(h.QueueID),
		"sysFlag":               itoa32(h.SysFlag),
		"bornTimestamp":         itoa64(h.BornTimestamp),
		"flag":                  itoa32(h.Flag),
		"properties":            h.Properties,
		"reconsumeTimes":        itoa32(h.ReconsumeTimes),
		"unitMode":              boolString(h.UnitMode),
		"bornHost":              h.BornHost,
		"storeHost":             h.StoreHost,
		"storeTimestamp":        itoa64(h.StoreTimestamp),
	}
}

// Decode reads the ext fields. A missing required field wraps
// remoting.ErrMissingField, a malformed number remoting.ErrBadHeader. It
// never panics.
func (h *ReplyMessageRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "PUSH_REPLY_MESSAGE_TO_CLIENT request header", ext: ext}
	out := ReplyMessageRequestHeader{
		ProducerGroup:         r.str("producerGroup", true),
		Topic:                 r.str("topic", true),
		DefaultTopic:          r.str("defaultTopic", true),
		DefaultTopicQueueNums: r.int32("defaultTopicQueueNums", true),
		QueueID:               r.int32("queueId", true),
		SysFlag:               r.int32("sysFlag", true),
		BornTimestamp:         r.int64("bornTimestamp", true),
		Flag:                  r.int32("flag", true),
		Properties:            r.str("properties", false),
		ReconsumeTimes:        r.int32("reconsumeTimes", false),
		UnitMode:              r.bool("unitMode"),
		BornHost:              r.str("bornHost", true),
		StoreHost:             r.str("storeHost", true),
		StoreTimestamp:        r.int64("storeTimestamp", true),
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the PUSH_REPLY_MESSAGE_TO_CLIENT request carrying body.
func (h *ReplyMessageRequestHeader) Request(body []byte) *remoting.Command {
	return remoting.NewRequest(remoting.PushReplyMessageToClient, h.Encode(), body)
}
