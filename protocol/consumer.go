package protocol

import (
	"encoding/json"
	"fmt"

	"github.com/ledgermq/ledgermq/remoting"
)

// The consumer-group requests between consumers and the broker:
//
//	code  request                         direction           header                                   body
//	----  ------------------------------  ------------------  ---------------------------------------  ------------------------------
//	35    UNREGISTER_CLIENT               client → broker     UnregisterClientRequestHeader            none
//	36    CONSUMER_SEND_MSG_BACK          consumer → broker   ConsumerSendMsgBackRequestHeader         none
//	38    GET_CONSUMER_LIST_BY_GROUP      consumer → broker   GetConsumerListByGroupRequestHeader      answer: ConsumerListBody
//	40    NOTIFY_CONSUMER_IDS_CHANGED     broker → consumer   NotifyConsumerIdsChangedRequestHeader    none
//	41    LOCK_BATCH_MQ                   consumer → broker   none                                     LockBatchBody; answer: LockBatchResult
//	42    UNLOCK_BATCH_MQ                 consumer → broker   none                                     LockBatchBody
//	220   RESET_CONSUMER_CLIENT_OFFSET    broker → consumer   ResetConsumerClientOffsetRequestHeader   ResetOffsetBody
//
// The broker checks names and lengths (broker/consumer.go, locks.go); the
// decoders here check only the form.

// GetConsumerListByGroupRequestHeader is the header of
// GET_CONSUMER_LIST_BY_GROUP (38): ext consumerGroup (required).
type GetConsumerListByGroupRequestHeader struct {
	ConsumerGroup string
}

// Encode returns the ext fields.
func (h *GetConsumerListByGroupRequestHeader) Encode() map[string]string {
	return map[string]string{"consumerGroup": h.ConsumerGroup}
}

// Decode reads the ext fields; a missing consumerGroup wraps
// remoting.ErrMissingField.
func (h *GetConsumerListByGroupRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "GET_CONSUMER_LIST_BY_GROUP request header", ext: ext}
	out := GetConsumerListByGroupRequestHeader{ConsumerGroup: r.str("consumerGroup", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the GET_CONSUMER_LIST_BY_GROUP request.
func (h *GetConsumerListByGroupRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.GetConsumerListByGroup, h.Encode(), nil)
}

// ConsumerListBody is the body of GET_CONSUMER_LIST_BY_GROUP's answer: the
// client ids of the group's members. rocketmq-client-go reads it whatever
// the code, so the broker sends it on its error answers too.
type ConsumerListBody struct {
	ConsumerIDList []string `json:"consumerIdList"`
}

// Encode returns the JSON body; a nil list is written null, an empty one [].
func (b *ConsumerListBody) Encode() ([]byte, error) { return json.Marshal(b) }

// DecodeConsumerListBody decodes the body; an error wraps ErrBadBody. Its
// memory is bounded by the body's length.
func DecodeConsumerListBody(body []byte) (*ConsumerListBody, error) {
	var b ConsumerListBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("%w: GET_CONSUMER_LIST_BY_GROUP answer: %w", ErrBadBody, err)
	}
	return &b, nil
}

// UnregisterClientRequestHeader is the header of UNREGISTER_CLIENT (35):
// a client leaving its producer group, consumer group or both.
//
//	field          ext name       required
//	-------------  -------------  --------
//	ClientID       clientID       yes
//	ProducerGroup  producerGroup       (written only when set)
//	ConsumerGroup  consumerGroup       (written only when set)
type UnregisterClientRequestHeader struct {
	ClientID      string
	ProducerGroup string
	ConsumerGroup string
}

// Encode returns the ext fields. The group fields are left out when empty,
// as Java leaves out null fields: absent and empty mean the same.
func (h *UnregisterClientRequestHeader) Encode() map[string]string {
	ext := map[string]string{"clientID": h.ClientID}
	if h.ProducerGroup != "" {
		ext["producerGroup"] = h.ProducerGroup
	}
	if h.ConsumerGroup != "" {
		ext["consumerGroup"] = h.ConsumerGroup
	}
	return ext
}

// Decode reads the ext fields; a missing clientID wraps
// remoting.ErrMissingField.
func (h *UnregisterClientRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "UNREGISTER_CLIENT request header", ext: ext}
	out := UnregisterClientRequestHeader{
		ClientID:      r.str("clientID", true),
		ProducerGroup: r.str("producerGroup", false),
		ConsumerGroup: r.str("consumerGroup", false),
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the UNREGISTER_CLIENT request.
func (h *UnregisterClientRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.UnregisterClient, h.Encode(), nil)
}

// ConsumerSendMsgBackRequestHeader is the header of CONSUMER_SEND_MSG_BACK
// (36): the message at Offset failed and goes to %RETRY%<Group>, delayed
// by DelayLevel (-1: straight to %DLQ%<Group>).
//
//	field              ext name           required
//	-----------------  -----------------  --------
//	Group              group              yes
//	Offset             offset             yes  (commit-log offset of the message)
//	DelayLevel         delayLevel              (0: the broker picks by reconsume count)
//	OriginMsgID        originMsgId
//	OriginTopic        originTopic
//	UnitMode           unitMode
//	MaxReconsumeTimes  maxReconsumeTimes       (0: the group's setting)
//	BrokerName         bname
type ConsumerSendMsgBackRequestHeader struct {
	Group             string
	Offset            int64
	DelayLevel        int32
	OriginMsgID       string
	OriginTopic       string
	UnitMode          bool
	MaxReconsumeTimes int32
	BrokerName        string
}

// Encode returns the ext fields, every field written.
func (h *ConsumerSendMsgBackRequestHeader) Encode() map[string]string {
	return map[string]string{
		"group":             h.Group,
		"offset":            itoa64(h.Offset),
		"delayLevel":        itoa32(h.DelayLevel),
		"originMsgId":       h.OriginMsgID,
		"originTopic":       h.OriginTopic,
		"unitMode":          boolString(h.UnitMode),
		"maxReconsumeTimes": itoa32(h.MaxReconsumeTimes),
		"bname":             h.BrokerName,
	}
}

// Decode reads the ext fields. A missing required field wraps
// remoting.ErrMissingField, a malformed number remoting.ErrBadHeader.
func (h *ConsumerSendMsgBackRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "CONSUMER_SEND_MSG_BACK request header", ext: ext}
	out := ConsumerSendMsgBackRequestHeader{
		Group:             r.str("group", true),
		Offset:            r.int64("offset", true),
		DelayLevel:        r.int32("delayLevel", false),
		OriginMsgID:       r.str("originMsgId", false),
		OriginTopic:       r.str("originTopic", false),
		UnitMode:          r.bool("unitMode"),
		MaxReconsumeTimes: r.int32("maxReconsumeTimes", false),
		BrokerName:        r.str("bname", false),
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the CONSUMER_SEND_MSG_BACK request.
func (h *ConsumerSendMsgBackRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.ConsumerSendMsgBack, h.Encode(), nil)
}

// NotifyConsumerIdsChangedRequestHeader is the header of
// NOTIFY_CONSUMER_IDS_CHANGED (40), one-way, broker → consumer: the
// group's members changed, rebalance now. Ext consumerGroup (required).
type NotifyConsumerIdsChangedRequestHeader struct {
	ConsumerGroup string
}

// Encode returns the ext fields.
func (h *NotifyConsumerIdsChangedRequestHeader) Encode() map[string]string {
	return map[string]string{"consumerGroup": h.ConsumerGroup}
}

// Decode reads the ext fields; a missing consumerGroup wraps
// remoting.ErrMissingField.
func (h *NotifyConsumerIdsChangedRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "NOTIFY_CONSUMER_IDS_CHANGED request header", ext: ext}
	out := NotifyConsumerIdsChangedRequestHeader{ConsumerGroup: r.str("consumerGroup", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the NOTIFY_CONSUMER_IDS_CHANGED request, as a Java
// broker sends it (language JAVA).
func (h *NotifyConsumerIdsChangedRequestHeader) Request() *remoting.Command {
	cmd := remoting.NewRequest(remoting.NotifyConsumerIdsChanged, h.Encode(), nil)
	cmd.Language = remoting.LanguageJava
	return cmd
}

// ResetConsumerClientOffsetRequestHeader is the header of
// RESET_CONSUMER_CLIENT_OFFSET (220), one-way, broker → consumer: move the
// group's offsets of Topic to those of the ResetOffsetBody.
//
//	field      ext name   required
//	---------  ---------  --------
//	Topic      topic      yes
//	Group      group      yes
//	Timestamp  timestamp  yes  (ms; -1: to the given offsets)
//	IsForce    isForce    yes
type ResetConsumerClientOffsetRequestHeader struct {
	Topic     string
	Group     string
	Timestamp int64
	IsForce   bool
}

// Encode returns the ext fields, every field written.
func (h *ResetConsumerClientOffsetRequestHeader) Encode() map[string]string {
	return map[string]string{
		"topic":     h.Topic,
		"group":     h.Group,
		"timestamp": itoa64(h.Timestamp),
		"isForce":   boolString(h.IsForce),
	}
}

// Decode reads the ext fields. A missing required field wraps
// remoting.ErrMissingField, a malformed number remoting.ErrBadHeader.
func (h *ResetConsumerClientOffsetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "RESET_CONSUMER_CLIENT_OFFSET request header", ext: ext}
	out := ResetConsumerClientOffsetRequestHeader{
		Topic:     r.str("topic", true),
		Group:     r.str("group", true),
		Timestamp: r.int64("timestamp", true),
		IsForce:   r.bool("isForce"),
	}
	if _, ok := ext["isForce"]; !ok {
		r.missing("isForce")
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the RESET_CONSUMER_CLIENT_OFFSET request with body, as a
// Java broker sends it (language JAVA).
func (h *ResetConsumerClientOffsetRequestHeader) Request(body []byte) *remoting.Command {
	cmd := remoting.NewRequest(remoting.ResetConsumerClientOffset, h.Encode(), body)
	cmd.Language = remoting.LanguageJava
	return cmd
}

// LockBatchBody is the body of LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ
// (42): the queues of one broker group that ClientID of ConsumerGroup
// locks or releases (orderly consumption).
type LockBatchBody struct {
	ConsumerGroup string         `json:"consumerGroup"`
	ClientID      string         `json:"clientId"`
	MQSet         []MessageQueue `json:"mqSet"`
}

// Encode returns the JSON body.
func (b *LockBatchBody) Encode() ([]byte, error) { return json.Marshal(b) }

// Request returns the request of code, remoting.LockBatchMQ or
// UnlockBatchMQ, with this body.
func (b *LockBatchBody) Request(code int32) (*remoting.Command, error) {
	body, err := b.Encode()
	if err != nil {
		return nil, fmt.Errorf("protocol: lock body: %w", err)
	}
	return remoting.NewRequest(code, nil, body), nil
}

// DecodeLockBatchBody decodes the body of 41 or 42; an error wraps
// ErrBadBody. Its memory is bounded by the body's length; the broker
// checks the group, the client id and the queues.
func DecodeLockBatchBody(body []byte) (*LockBatchBody, error) {
	var b LockBatchBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("%w: lock body: %w", ErrBadBody, err)
	}
	return &b, nil
}

// LockBatchResult is the body of LOCK_BATCH_MQ's answer: the queues now
// locked by the asking client.
type LockBatchResult struct {
	LockOKMQSet []MessageQueue `json:"lockOKMQSet"`
}

// Encode returns the JSON body.
func (b *LockBatchResult) Encode() ([]byte, error) { return json.Marshal(b) }

// DecodeLockBatchResult decodes the answer body of 41; an error wraps
// ErrBadBody.
func DecodeLockBatchResult(body []byte) (*LockBatchResult, error) {
	var b LockBatchResult
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("%w: lock answer: %w", ErrBadBody, err)
	}
	return &b, nil
}

// ConsumerRelayRequestHeader is the header of the two requests an admin
// tool sends a broker for one of its consumers, which the broker relays
// to that consumer's connection: GET_CONSUMER_RUNNING_INFO (307: ext
// consumerGroup, clientId, jstackEnable) and CONSUME_MESSAGE_DIRECTLY
// (309: consumerGroup, clientId, msgId, brokerName, topic). The ext
// fields travel on as they came; only these are read.
type ConsumerRelayRequestHeader struct {
	ConsumerGroup string
	ClientID      string
	// MsgID is 309's offset message id.
	MsgID string
}

// Decode reads the ext fields; consumerGroup and clientId are required,
// and msgId for 309 (the caller checks it).
func (h *ConsumerRelayRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "consumer relay request header", ext: ext}
	out := ConsumerRelayRequestHeader{ConsumerGroup: r.str("consumerGroup", true), ClientID: r.str("clientId", true),
		MsgID: r.str("msgId", false)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Encode returns the ext fields (msgId only when set).
func (h *ConsumerRelayRequestHeader) Encode() map[string]string {
	ext := map[string]string{"consumerGroup": h.ConsumerGroup, "clientId": h.ClientID}
	if h.MsgID != "" {
		ext["msgId"] = h.MsgID
	}
	return ext
}
