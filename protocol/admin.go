package protocol

// The admin requests' bodies and headers that client.Admin sends and the
// broker serves (broker/admin_stats.go):
//
//	code  request                         header ext                      answer body
//	----  ------------------------------  ------------------------------  -----------------------------
//	202   GET_TOPIC_STATS_INFO            topic                           TopicStatsTable
//	203   GET_CONSUMER_CONNECTION_LIST    consumerGroup                   ConsumerConnection (206 if
//	                                                                      no client is online)
//	208   GET_CONSUME_STATS               consumerGroup, topic (optional) ConsumeStats
//	222   INVOKE_BROKER_TO_RESET_OFFSET   topic, group, timestamp,        ResetOffsetBody
//	                                      isForce, queueId, offset
//
// Why a hand-written codec: Java's brokers and mqadmin serialise these
// maps with fastjson, whose Map<MessageQueue, V> has JSON objects as keys:
//
//	{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"maxOffset":5,…}},"consumeTps":0.0}
//
// That is not JSON, so encoding/json can neither write nor read it. Java's
// mqadmin reads only this form, so the broker writes it; the decoder also
// accepts an empty table. Keys are written sorted (topic, broker, queue)
// so that answers are deterministic.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/ledgermq/ledgermq/remoting"
)

// MessageQueue names one queue of a topic on one broker group (Java
// MessageQueue).
type MessageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

func (q MessageQueue) compare(o MessageQueue) int {
	return cmp.Or(cmp.Compare(q.Topic, o.Topic), cmp.Compare(q.BrokerName, o.BrokerName), cmp.Compare(q.QueueID, o.QueueID))
}

// TopicOffset is one queue's line of GET_TOPIC_STATS_INFO: its offsets and
// the store time of its newest message (0 when empty).
type TopicOffset struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
}

// TopicStatsTable is the body of GET_TOPIC_STATS_INFO (Java TopicStatsTable).
type TopicStatsTable struct {
	OffsetTable map[MessageQueue]TopicOffset
}

// OffsetWrapper is one queue's line of GET_CONSUME_STATS: the queue's max
// offset, the group's committed offset and the store time of the last
// message the group consumed (0 when none).
type OffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	PullOffset     int64 `json:"pullOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
}

// ConsumeStats is the body of GET_CONSUME_STATS (Java ConsumeStats).
type ConsumeStats struct {
	OffsetTable map[MessageQueue]OffsetWrapper
	ConsumeTps  float64
}

// ResetOffsetBody is the body of the INVOKE_BROKER_TO_RESET_OFFSET answer
// and of RESET_CONSUMER_CLIENT_OFFSET (220): each queue's new offset.
type ResetOffsetBody struct {
	OffsetTable map[MessageQueue]int64
}

// Encode writes the fastjson form.
func (t TopicStatsTable) Encode() []byte {
	var b bytes.Buffer
	b.WriteString(`{"offsetTable":`)
	writeQueueMap(&b, t.OffsetTable)
	b.WriteByte('}')
	return b.Bytes()
}

// Encode writes the fastjson form.
func (s ConsumeStats) Encode() []byte {
	var b bytes.Buffer
	b.WriteString(`{"consumeTps":`)
	b.WriteString(strconv.FormatFloat(s.ConsumeTps, 'f', -1, 64))
	b.WriteString(`,"offsetTable":`)
	writeQueueMap(&b, s.OffsetTable)
	b.WriteByte('}')
	return b.Bytes()
}

// Encode writes the fastjson form.
func (r ResetOffsetBody) Encode() []byte {
	var b bytes.Buffer
	b.WriteString(`{"offsetTable":`)
	writeQueueMap(&b, r.OffsetTable)
	b.WriteByte('}')
	return b.Bytes()
}

// DecodeTopicStatsTable parses a GET_TOPIC_STATS_INFO body.
func DecodeTopicStatsTable(body []byte) (TopicStatsTable, error) {
	var t TopicStatsTable
	err := walkObject(body, func(key string, val []byte) (int, error) {
		if key != "offsetTable" {
			return -1, nil
		}
		m, n, err := readQueueMap[TopicOffset](val)
		t.OffsetTable = m
		return n, err
	})
	if err != nil {
		return TopicStatsTable{}, fmt.Errorf("%w: topic stats body: %w", remoting.ErrBadHeader, err)
	}
	return t, nil
}

// DecodeConsumeStats parses a GET_CONSUME_STATS body.
func DecodeConsumeStats(body []byte) (ConsumeStats, error) {
	var s ConsumeStats
	err := walkObject(body, func(key string, val []byte) (int, error) {
		switch key {
		case "offsetTable":
			m, n, err := readQueueMap[OffsetWrapper](val)
			s.OffsetTable = m
			return n, err
		case "consumeTps":
			dec := json.NewDecoder(bytes.NewReader(val))
			err := dec.Decode(&s.ConsumeTps)
			return int(dec.InputOffset()), err
		}
		return -1, nil
	})
	if err != nil {
		return ConsumeStats{}, fmt.Errorf("%w: consume stats body: %w", remoting.ErrBadHeader, err)
	}
	return s, nil
}

// DecodeResetOffsetBody parses a ResetOffsetBody.
func DecodeResetOffsetBody(body []byte) (ResetOffsetBody, error) {
	var r ResetOffsetBody
	err := walkObject(body, func(key string, val []byte) (int, error) {
		if key != "offsetTable" {
			return -1, nil
		}
		m, n, err := readQueueMap[int64](val)
		r.OffsetTable = m
		return n, err
	})
	if err != nil {
		return ResetOffsetBody{}, fmt.Errorf("%w: reset offset body: %w", remoting.ErrBadHeader, err)
	}
	return r, nil
}

func writeQueueMap[V any](b *bytes.Buffer, m map[MessageQueue]V) {
	keys := slices.SortedFunc(maps.Keys(m), MessageQueue.compare)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)    // strings and an int: cannot fail
		vb, _ := json.Marshal(m[k]) // numbers only: cannot fail
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
}

// skipSpace returns the index of the first non-space byte of b at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// readValue decodes one JSON value at the start of b into v and returns
// how many bytes it took.
func readValue(b []byte, v any) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return 0, err
	}
	return int(dec.InputOffset()), nil
}

// walkObject walks the top-level object of body: for each member it calls
// field with the key and the bytes from the value on; field returns how
// many bytes it consumed, or -1 to have the value skipped as standard JSON.
func walkObject(body []byte, field func(key string, val []byte) (int, error)) error {
	_, err := walkObjectN(body, field)
	return err
}

// walkObjectN is walkObject that also returns the bytes the object took.
func walkObjectN(body []byte, field func(key string, val []byte) (int, error)) (int, error) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return 0, fmt.Errorf("not an object")
	}
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return i + 1, nil
	}
	for {
		var key string
		n, err := readValue(body[i:], &key)
		if err != nil {
			return 0, fmt.Errorf("key at byte %d: %w", i, err)
		}
		i = skipSpace(body, i+n)
		if i >= len(body) || body[i] != ':' {
			return 0, fmt.Errorf("no ':' after key %q", key)
		}
		i = skipSpace(body, i+1)
		if n, err = field(key, body[i:]); err != nil {
			return 0, fmt.Errorf("%s: %w", key, err)
		}
		if n < 0 {
			var raw json.RawMessage
			if n, err = readValue(body[i:], &raw); err != nil {
				return 0, fmt.Errorf("%s: %w", key, err)
			}
		}
		i = skipSpace(body, i+n)
		if i >= len(body) {
			return 0, fmt.Errorf("unterminated object")
		}
		switch body[i] {
		case '}':
			return i + 1, nil
		case ',':
			i = skipSpace(body, i+1)
		default:
			return 0, fmt.Errorf("unexpected %q at byte %d", body[i], i)
		}
	}
}

// readQueueMap reads a fastjson Map<MessageQueue, V> at the start of b and
// returns it and the bytes it took.
func readQueueMap[V any](b []byte) (map[MessageQueue]V, int, error) {
	out := map[MessageQueue]V{}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, 0, fmt.Errorf("not an object")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return out, i + 1, nil
	}
	for {
		var k MessageQueue
		n, err := readValue(b[i:], &k)
		if err != nil {
			return nil, 0, fmt.Errorf("queue key at byte %d: %w", i, err)
		}
		i = skipSpace(b, i+n)
		if i >= len(b) || b[i] != ':' {
			return nil, 0, fmt.Errorf("no ':' after queue %+v", k)
		}
		i = skipSpace(b, i+1)
		var v V
		if n, err = readValue(b[i:], &v); err != nil {
			return nil, 0, fmt.Errorf("queue %+v: %w", k, err)
		}
		out[k] = v
		i = skipSpace(b, i+n)
		if i >= len(b) {
			return nil, 0, fmt.Errorf("unterminated queue table")
		}
		switch b[i] {
		case '}':
			return out, i + 1, nil
		case ',':
			i = skipSpace(b, i+1)
		default:
			return nil, 0, fmt.Errorf("unexpected %q at byte %d", b[i], i)
		}
	}
}

// Connection is one client connection of a consumer group (Java
// Connection).
type Connection struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int32  `json:"version"`
}

// SubscriptionData is a group's subscription to one topic (Java
// SubscriptionData).
type SubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	Topic           string   `json:"topic"`
	SubString       string   `json:"subString"`
	TagsSet         []string `json:"tagsSet"`
	CodeSet         TagCodes `json:"codeSet"`
	SubVersion      int64    `json:"subVersion"`
	ExpressionType  string   `json:"expressionType"`
}

// ProducerConnection is the body of GET_PRODUCER_CONNECTION_LIST (204):
// the clients of a producer group heartbeating the broker (Java
// ProducerConnection); standard JSON.
type ProducerConnection struct {
	ConnectionSet []Connection `json:"connectionSet"`
}

// ConsumerConnection is the body of GET_CONSUMER_CONNECTION_LIST (Java
// ConsumerConnection); standard JSON.
type ConsumerConnection struct {
	ConnectionSet     []Connection                `json:"connectionSet"`
	SubscriptionTable map[string]SubscriptionData `json:"subscriptionTable"`
	ConsumeType       string                      `json:"consumeType"`
	MessageModel      string                      `json:"messageModel"`
	ConsumeFromWhere  string                      `json:"consumeFromWhere"`
}

// ResetOffsetHeader is the header of INVOKE_BROKER_TO_RESET_OFFSET (222)
// as Java 5's mqadmin sends it (ResetOffsetRequestHeader): the group's
// offsets of topic move to the first message stored at or after Timestamp
// (ms; -1: the queue's end), or, when QueueID >= 0 and Offset >= 0, that
// one queue to Offset. Without IsForce an offset only moves backwards.
type ResetOffsetHeader struct {
	Topic     string
	Group     string
	Timestamp int64
	IsForce   bool
	QueueID   int32 // -1: every queue
	Offset    int64 // -1: by Timestamp
}

// Request builds the 222 request.
func (h ResetOffsetHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.InvokeBrokerToResetOffset, map[string]string{
		"topic": h.Topic, "group": h.Group, "timestamp": itoa64(h.Timestamp),
		"isForce": strconv.FormatBool(h.IsForce), "queueId": itoa32(h.QueueID), "offset": itoa64(h.Offset),
	}, nil)
}

// DecodeResetOffsetHeader reads a 222 header: topic, group and timestamp
// are required; queueId and offset default to -1 (Java 4 sends neither).
func DecodeResetOffsetHeader(ext map[string]string) (ResetOffsetHeader, error) {
	r := extReader{header: "INVOKE_BROKER_TO_RESET_OFFSET request header", ext: ext}
	h := ResetOffsetHeader{QueueID: -1, Offset: -1}
	h.Topic = r.str("topic", true)
	h.Group = r.str("group", true)
	h.Timestamp = r.int64("timestamp", true)
	h.IsForce = r.bool("isForce")
	if v := ext["queueId"]; v != "" {
		h.QueueID = r.int32("queueId", false)
	}
	if v := ext["offset"]; v != "" {
		h.Offset = r.int64("offset", false)
	}
	if r.err != nil {
		return ResetOffsetHeader{}, r.err
	}
	return h, nil
}
