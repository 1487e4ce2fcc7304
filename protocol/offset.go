package protocol

import (
	"strings"

	"github.com/ledgermq/ledgermq/remoting"
)

// The offset requests, consumer or admin → broker. Each names one queue by
// topic and queueId; the broker (broker/offsets.go) checks that the topic
// is non-empty and the queue id not negative, so that those answer
// INVALID_PARAMETER rather than the SYSTEM_ERROR of a header that does
// not decode.
//
//	code  request                       header                               answer header
//	----  ----------------------------  -----------------------------------  ------------------------------
//	14    QUERY_CONSUMER_OFFSET         QueryConsumerOffsetRequestHeader     OffsetResponseHeader (or 22)
//	15    UPDATE_CONSUMER_OFFSET        UpdateConsumerOffsetRequestHeader    none
//	29    SEARCH_OFFSET_BY_TIMESTAMP    SearchOffsetRequestHeader            OffsetResponseHeader
//	30    GET_MAX_OFFSET                QueueOffsetRequestHeader             OffsetResponseHeader
//	31    GET_MIN_OFFSET                QueueOffsetRequestHeader             OffsetResponseHeader
//	32    GET_EARLIEST_MSG_STORETIME    QueueOffsetRequestHeader             StoreTimeResponseHeader

// QueryConsumerOffsetRequestHeader is the header of QUERY_CONSUMER_OFFSET
// (14): a group's committed offset of one queue.
//
//	field          ext name       required
//	-------------  -------------  --------
//	ConsumerGroup  consumerGroup  yes
//	Topic          topic          yes
//	QueueID        queueId        yes
//	BrokerName     bname
type QueryConsumerOffsetRequestHeader struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
	BrokerName    string
	// NotFoundIfNone is RocketMQ 5's setZeroIfNotFound=false: it asks for
	// QUERY_NOT_FOUND when the group has no offset, whatever the queue
	// holds. Without it (the field absent or true) the answer is 4.x's:
	// 0 while the queue still starts at 0.
	NotFoundIfNone bool
}

// Encode returns the ext fields, every field written
// (setZeroIfNotFound=false with NotFoundIfNone).
func (h *QueryConsumerOffsetRequestHeader) Encode() map[string]string {
	m := map[string]string{
		"consumerGroup": h.ConsumerGroup,
		"topic":         h.Topic,
		"queueId":       itoa32(h.QueueID),
		"bname":         h.BrokerName,
	}
	if h.NotFoundIfNone {
		m["setZeroIfNotFound"] = "false"
	}
	return m
}

// Decode reads the ext fields. A missing required field wraps
// remoting.ErrMissingField, a malformed number remoting.ErrBadHeader. It
// never panics.
func (h *QueryConsumerOffsetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "QUERY_CONSUMER_OFFSET request header", ext: ext}
	out := QueryConsumerOffsetRequestHeader{
		ConsumerGroup: r.str("consumerGroup", true),
		Topic:         r.str("topic", true),
		QueueID:       r.int32("queueId", true),
		BrokerName:    r.str("bname", false),
	}
	if v, ok := r.get("setZeroIfNotFound"); ok && strings.EqualFold(v, "false") {
		out.NotFoundIfNone = true
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the QUERY_CONSUMER_OFFSET request.
func (h *QueryConsumerOffsetRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.QueryConsumerOffset, h.Encode(), nil)
}

// UpdateConsumerOffsetRequestHeader is the header of
// UPDATE_CONSUMER_OFFSET (15): CommitOffset is the next offset the group
// consumes on the queue. A follower broker forwards commits to its leader
// with this header plus its own marker field (broker/offsets.go).
//
//	field          ext name       required
//	-------------  -------------  --------
//	ConsumerGroup  consumerGroup  yes
//	Topic          topic          yes
//	QueueID        queueId        yes
//	CommitOffset   commitOffset   yes
//	BrokerName     bname
type UpdateConsumerOffsetRequestHeader struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
	CommitOffset  int64
	BrokerName    string
}

// Encode returns the ext fields, every field written.
func (h *UpdateConsumerOffsetRequestHeader) Encode() map[string]string {
	return map[string]string{
		"consumerGroup": h.ConsumerGroup,
		"topic":         h.Topic,
		"queueId":       itoa32(h.QueueID),
		"commitOffset":  itoa64(h.CommitOffset),
		"bname":         h.BrokerName,
	}
}

// Decode reads the ext fields, with the rules of
// QueryConsumerOffsetRequestHeader.Decode.
func (h *UpdateConsumerOffsetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "UPDATE_CONSUMER_OFFSET request header", ext: ext}
	out := UpdateConsumerOffsetRequestHeader{
		ConsumerGroup: r.str("consumerGroup", true),
		Topic:         r.str("topic", true),
		QueueID:       r.int32("queueId", true),
		CommitOffset:  r.int64("commitOffset", true),
		BrokerName:    r.str("bname", false),
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the UPDATE_CONSUMER_OFFSET request.
func (h *UpdateConsumerOffsetRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.UpdateConsumerOffset, h.Encode(), nil)
}

// QueueOffsetRequestHeader is the header of GET_MAX_OFFSET (30),
// GET_MIN_OFFSET (31) and GET_EARLIEST_MSG_STORETIME (32): one queue.
//
//	field       ext name  required
//	----------  --------  --------
//	Topic       topic     yes
//	QueueID     queueId   yes
//	BrokerName  bname
type QueueOffsetRequestHeader struct {
	Topic      string
	QueueID    int32
	BrokerName string
}

// Encode returns the ext fields, every field written.
func (h *QueueOffsetRequestHeader) Encode() map[string]string {
	return map[string]string{
		"topic":   h.Topic,
		"queueId": itoa32(h.QueueID),
		"bname":   h.BrokerName,
	}
}

// Decode reads the ext fields, with the rules of
// QueryConsumerOffsetRequestHeader.Decode.
func (h *QueueOffsetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "queue offset request header", ext: ext}
	out := QueueOffsetRequestHeader{
		Topic:      r.str("topic", true),
		QueueID:    r.int32("queueId", true),
		BrokerName: r.str("bname", false),
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the request of code, one of remoting.GetMaxOffset,
// GetMinOffset and GetEarliestMsgStoretime.
func (h *QueueOffsetRequestHeader) Request(code int32) *remoting.Command {
	return remoting.NewRequest(code, h.Encode(), nil)
}

// SearchOffsetRequestHeader is the header of SEARCH_OFFSET_BY_TIMESTAMP
// (29): the first offset of the queue stored at or after Timestamp (ms).
//
//	field       ext name   required
//	----------  ---------  --------
//	Topic       topic      yes
//	QueueID     queueId    yes
//	Timestamp   timestamp  yes
//	BrokerName  bname
type SearchOffsetRequestHeader struct {
	Topic      string
	QueueID    int32
	Timestamp  int64
	BrokerName string
}

// Encode returns the ext fields, every field written.
func (h *SearchOffsetRequestHeader) Encode() map[string]string {
	return map[string]string{
		"topic":     h.Topic,
		"queueId":   itoa32(h.QueueID),
		"timestamp": itoa64(h.Timestamp),
		"bname":     h.BrokerName,
	}
}

// Decode reads the ext fields, with the rules of
// QueryConsumerOffsetRequestHeader.Decode.
func (h *SearchOffsetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "SEARCH_OFFSET_BY_TIMESTAMP request header", ext: ext}
	out := SearchOffsetRequestHeader{
		Topic:      r.str("topic", true),
		QueueID:    r.int32("queueId", true),
		Timestamp:  r.int64("timestamp", true),
		BrokerName: r.str("bname", false),
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the SEARCH_OFFSET_BY_TIMESTAMP request.
func (h *SearchOffsetRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.SearchOffsetByTimestamp, h.Encode(), nil)
}

// OffsetResponseHeader is the answer header of 14, 29, 30 and 31: ext
// offset (required). The broker writes it on the error answers of 29–31
// too, as 0, because rocketmq-client-go reads it without checking the
// code.
type OffsetResponseHeader struct {
	Offset int64
}

// Encode returns the ext fields.
func (h *OffsetResponseHeader) Encode() map[string]string {
	return map[string]string{"offset": itoa64(h.Offset)}
}

// Decode reads the ext fields; offset is required.
func (h *OffsetResponseHeader) Decode(ext map[string]string) error {
	r := extReader{header: "offset response header", ext: ext}
	out := OffsetResponseHeader{Offset: r.int64("offset", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// StoreTimeResponseHeader is the answer header of
// GET_EARLIEST_MSG_STORETIME (32): ext timestamp (required), the store
// time in ms of the queue's oldest message, -1 when it has none.
type StoreTimeResponseHeader struct {
	Timestamp int64
}

// Encode returns the ext fields.
func (h *StoreTimeResponseHeader) Encode() map[string]string {
	return map[string]string{"timestamp": itoa64(h.Timestamp)}
}

// Decode reads the ext fields; timestamp is required.
func (h *StoreTimeResponseHeader) Decode(ext map[string]string) error {
	r := extReader{header: "GET_EARLIEST_MSG_STORETIME response header", ext: ext}
	out := StoreTimeResponseHeader{Timestamp: r.int64("timestamp", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}
