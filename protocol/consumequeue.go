package protocol

import "github.com/ledgermq/ledgermq/remoting"

// QUERY_CONSUME_QUEUE (321), admin → broker (mqadmin queryCq): the
// ConsumeQueue units of one queue from an index on, and, for a consumer
// group, its subscription and whether each unit passes its tag filter.

// QueryConsumeQueueRequestHeader is the header of QUERY_CONSUME_QUEUE.
//
//	field          ext name       required
//	-------------  -------------  --------
//	Topic          topic          yes
//	QueueID        queueId        yes
//	Index          index          yes
//	Count          count          yes
//	ConsumerGroup  consumerGroup
type QueryConsumeQueueRequestHeader struct {
	Topic         string
	QueueID       int32
	Index         int64
	Count         int32
	ConsumerGroup string
}

// Encode returns the ext fields; consumerGroup only when set.
func (h *QueryConsumeQueueRequestHeader) Encode() map[string]string {
	ext := map[string]string{"topic": h.Topic, "queueId": itoa32(h.QueueID), "index": itoa64(h.Index), "count": itoa32(h.Count)}
	if h.ConsumerGroup != "" {
		ext["consumerGroup"] = h.ConsumerGroup
	}
	return ext
}

// Decode reads the ext fields. A missing required field wraps
// remoting.ErrMissingField, a malformed number remoting.ErrBadHeader. It
// never panics.
func (h *QueryConsumeQueueRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "QUERY_CONSUME_QUEUE request header", ext: ext}
	out := QueryConsumeQueueRequestHeader{
		Topic:         r.str("topic", true),
		QueueID:       r.int32("queueId", true),
		Index:         r.int64("index", true),
		Count:         r.int32("count", true),
		ConsumerGroup: r.str("consumerGroup", false),
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the QUERY_CONSUME_QUEUE request.
func (h *QueryConsumeQueueRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.QueryConsumeQueue, h.Encode(), nil)
}

// ConsumeQueueData is one ConsumeQueue unit (Java ConsumeQueueData): where
// the message is in the CommitLog, its size and its tags' hash; Eval is
// whether it passes the consumer group's filter (false without a group).
// ExtendDataJSON, BitMap and Msg are Java's ConsumeQueue extension's
// (never written here: no extension).
type ConsumeQueueData struct {
	PhysicOffset   int64  `json:"physicOffset"`
	PhysicSize     int32  `json:"physicSize"`
	TagsCode       int64  `json:"tagsCode"`
	ExtendDataJSON string `json:"extendDataJson,omitempty"`
	BitMap         string `json:"bitMap,omitempty"`
	Eval           bool   `json:"eval"`
	Msg            string `json:"msg,omitempty"`
}

// QueryConsumeQueueResponseBody is the body of QUERY_CONSUME_QUEUE's
// answer (Java QueryConsumeQueueResponseBody; standard JSON, absent
// fields left out as fastjson leaves out nulls).
type QueryConsumeQueueResponseBody struct {
	SubscriptionData *SubscriptionData  `json:"subscriptionData,omitempty"`
	FilterData       string             `json:"filterData,omitempty"`
	QueueData        []ConsumeQueueData `json:"queueData,omitempty"`
	MaxQueueIndex    int64              `json:"maxQueueIndex"`
	MinQueueIndex    int64              `json:"minQueueIndex"`
}

// DecodeQueryConsumeQueueBody decodes the answer's body. Errors wrap
// ErrBadBody.
func DecodeQueryConsumeQueueBody(body []byte) (*QueryConsumeQueueResponseBody, error) {
	var b QueryConsumeQueueResponseBody
	if err := decodeObject(body, &b, "QueryConsumeQueueResponseBody"); err != nil {
		return nil, err
	}
	return &b, nil
}
