package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ledgermq/ledgermq/remoting"
)

// The headers of the admin reads and their standard-JSON bodies
// (admin.go has the fastjson ones):
//
//	code  request                        header                               answer body
//	----  -----------------------------  -----------------------------------  ------------------
//	28    GET_BROKER_RUNTIME_INFO        none (BrokerRuntimeInfoRequest)      KVTable
//	202   GET_TOPIC_STATS_INFO           TopicStatsInfoRequestHeader          TopicStatsTable
//	203   GET_CONSUMER_CONNECTION_LIST   ConsumerConnectionListRequestHeader  ConsumerConnection
//	204   GET_PRODUCER_CONNECTION_LIST   ProducerConnectionListRequestHeader  ProducerConnection
//	208   GET_CONSUME_STATS              ConsumeStatsRequestHeader            ConsumeStats

// TopicStatsInfoRequestHeader is the header of GET_TOPIC_STATS_INFO (202):
// ext topic (required).
type TopicStatsInfoRequestHeader struct {
	Topic string
}

// Encode returns the ext fields.
func (h *TopicStatsInfoRequestHeader) Encode() map[string]string {
	return map[string]string{"topic": h.Topic}
}

// Decode reads the ext fields; a missing topic wraps
// remoting.ErrMissingField.
func (h *TopicStatsInfoRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "GET_TOPIC_STATS_INFO request header", ext: ext}
	out := TopicStatsInfoRequestHeader{Topic: r.str("topic", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the GET_TOPIC_STATS_INFO request.
func (h *TopicStatsInfoRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.GetTopicStatsInfo, h.Encode(), nil)
}

// ConsumerConnectionListRequestHeader is the header of
// GET_CONSUMER_CONNECTION_LIST (203): ext consumerGroup (required).
type ConsumerConnectionListRequestHeader struct {
	ConsumerGroup string
}

// Encode returns the ext fields.
func (h *ConsumerConnectionListRequestHeader) Encode() map[string]string {
	return map[string]string{"consumerGroup": h.ConsumerGroup}
}

// Decode reads the ext fields; a missing consumerGroup wraps
// remoting.ErrMissingField.
func (h *ConsumerConnectionListRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "GET_CONSUMER_CONNECTION_LIST request header", ext: ext}
	out := ConsumerConnectionListRequestHeader{ConsumerGroup: r.str("consumerGroup", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the GET_CONSUMER_CONNECTION_LIST request.
func (h *ConsumerConnectionListRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.GetConsumerConnectionList, h.Encode(), nil)
}

// ProducerConnectionListRequestHeader is the header of
// GET_PRODUCER_CONNECTION_LIST (204): ext producerGroup (required).
type ProducerConnectionListRequestHeader struct {
	ProducerGroup string
}

// Encode returns the ext fields.
func (h *ProducerConnectionListRequestHeader) Encode() map[string]string {
	return map[string]string{"producerGroup": h.ProducerGroup}
}

// Decode reads the ext fields; a missing producerGroup wraps
// remoting.ErrMissingField.
func (h *ProducerConnectionListRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "GET_PRODUCER_CONNECTION_LIST request header", ext: ext}
	out := ProducerConnectionListRequestHeader{ProducerGroup: r.str("producerGroup", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the GET_PRODUCER_CONNECTION_LIST request.
func (h *ProducerConnectionListRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.GetProducerConnectionList, h.Encode(), nil)
}

// ConsumeStatsRequestHeader is the header of GET_CONSUME_STATS (208): ext
// consumerGroup (required) and topic (optional, written only when set;
// absent or empty: every topic of the group).
type ConsumeStatsRequestHeader struct {
	ConsumerGroup string
	Topic         string
}

// Encode returns the ext fields; topic only when set.
func (h *ConsumeStatsRequestHeader) Encode() map[string]string {
	ext := map[string]string{"consumerGroup": h.ConsumerGroup}
	if h.Topic != "" {
		ext["topic"] = h.Topic
	}
	return ext
}

// Decode reads the ext fields; a missing consumerGroup wraps
// remoting.ErrMissingField.
func (h *ConsumeStatsRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "GET_CONSUME_STATS request header", ext: ext}
	out := ConsumeStatsRequestHeader{ConsumerGroup: r.str("consumerGroup", true), Topic: r.str("topic", false)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the GET_CONSUME_STATS request.
func (h *ConsumeStatsRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.GetConsumeStats, h.Encode(), nil)
}

// Encode returns the JSON body; a nil connection set is written [] and a
// nil subscription table {}, as Java writes its empty HashSet and map.
func (c *ConsumerConnection) Encode() ([]byte, error) {
	out := *c
	if out.ConnectionSet == nil {
		out.ConnectionSet = []Connection{}
	}
	if out.SubscriptionTable == nil {
		out.SubscriptionTable = map[string]SubscriptionData{}
	}
	return json.Marshal(&out)
}

// DecodeConsumerConnection decodes 203's answer; absent sets decode as
// empty ones. Errors wrap ErrBadBody; memory is bounded by the body's
// length.
func DecodeConsumerConnection(body []byte) (*ConsumerConnection, error) {
	c := &ConsumerConnection{}
	if err := decodeObject(body, c, "GET_CONSUMER_CONNECTION_LIST answer"); err != nil {
		return nil, err
	}
	if c.ConnectionSet == nil {
		c.ConnectionSet = []Connection{}
	}
	if c.SubscriptionTable == nil {
		c.SubscriptionTable = map[string]SubscriptionData{}
	}
	return c, nil
}

// Encode returns the JSON body; a nil connection set is written [].
func (p *ProducerConnection) Encode() ([]byte, error) {
	out := *p
	if out.ConnectionSet == nil {
		out.ConnectionSet = []Connection{}
	}
	return json.Marshal(&out)
}

// DecodeProducerConnection decodes 204's answer; an absent set decodes as
// an empty one. Errors wrap ErrBadBody.
func DecodeProducerConnection(body []byte) (*ProducerConnection, error) {
	p := &ProducerConnection{}
	if err := decodeObject(body, p, "GET_PRODUCER_CONNECTION_LIST answer"); err != nil {
		return nil, err
	}
	if p.ConnectionSet == nil {
		p.ConnectionSet = []Connection{}
	}
	return p, nil
}

// KVTable is Java's KVTable, the body of GET_BROKER_RUNTIME_INFO's and
// GET_KVLIST_BY_NAMESPACE's answers:
// {"table":{"brokerVersionDesc":"V5_3_3","commitLogMaxOffset":"1241",…}}.
// Every value is a string, numbers in decimal, because Java's tools read
// them with Long.parseLong and Double.parseDouble.
type KVTable struct {
	Table map[string]string `json:"table"`
}

// BrokerRuntimeInfoRequest returns the GET_BROKER_RUNTIME_INFO request (no
// header).
func BrokerRuntimeInfoRequest() *remoting.Command {
	return remoting.NewRequest(remoting.GetBrokerRuntimeInfo, nil, nil)
}

// Encode returns the JSON body; a nil table is written {}.
func (t *KVTable) Encode() ([]byte, error) {
	out := *t
	if out.Table == nil {
		out.Table = map[string]string{}
	}
	return json.Marshal(&out)
}

// DecodeKVTable decodes 28's answer; an absent or null table decodes as
// an empty one. Errors wrap ErrBadBody.
func DecodeKVTable(body []byte) (*KVTable, error) {
	t := &KVTable{}
	if err := decodeObject(body, t, "GET_BROKER_RUNTIME_INFO answer"); err != nil {
		return nil, err
	}
	if t.Table == nil {
		t.Table = map[string]string{}
	}
	return t, nil
}

// QueryTopicConsumeByWhoRequestHeader is the header of
// QUERY_TOPIC_CONSUME_BY_WHO (300): ext topic (required). The answer's
// body is a GroupList.
type QueryTopicConsumeByWhoRequestHeader struct {
	Topic string
}

// Encode returns the ext fields.
func (h *QueryTopicConsumeByWhoRequestHeader) Encode() map[string]string {
	return map[string]string{"topic": h.Topic}
}

// Decode reads the ext fields; a missing topic wraps
// remoting.ErrMissingField.
func (h *QueryTopicConsumeByWhoRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "QUERY_TOPIC_CONSUME_BY_WHO request header", ext: ext}
	out := QueryTopicConsumeByWhoRequestHeader{Topic: r.str("topic", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the QUERY_TOPIC_CONSUME_BY_WHO request.
func (h *QueryTopicConsumeByWhoRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.QueryTopicConsumeByWho, h.Encode(), nil)
}

// GroupList is the body of QUERY_TOPIC_CONSUME_BY_WHO's answer (Java
// GroupList): the consumer groups of a topic.
type GroupList struct {
	GroupList []string `json:"groupList"`
}

// Encode returns the JSON body; no groups is an empty list.
func (g GroupList) Encode() []byte {
	if g.GroupList == nil {
		g.GroupList = []string{}
	}
	b, _ := json.Marshal(g) // a list of strings always marshals
	return b
}

// DecodeGroupList reads a GroupList body.
func DecodeGroupList(b []byte) (GroupList, error) {
	var g GroupList
	if err := json.Unmarshal(b, &g); err != nil {
		return GroupList{}, fmt.Errorf("protocol: GroupList: %w", err)
	}
	return g, nil
}

// BrokerConfigRequest returns the GET_BROKER_CONFIG (26) request (no
// header). The answer's body is the node's settings as Java properties
// text (EncodeBrokerConfig), its ext "version" a DataVersion.
func BrokerConfigRequest() *remoting.Command {
	return remoting.NewRequest(remoting.GetBrokerConfig, nil, nil)
}

// EncodeBrokerConfig writes settings as RocketMQ's broker writes its
// configuration (MixAll.properties2String): "key=value\n" per setting,
// here sorted by key.
func EncodeBrokerConfig(settings map[string]string) []byte {
	var b bytes.Buffer
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(settings[k])
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// DecodeBrokerConfig reads properties text: one "key=value" (or
// "key:value") a line; blank lines and lines starting with # or ! are
// comments; the key and the value are trimmed of spaces.
func DecodeBrokerConfig(body []byte) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(string(body), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			out[line] = ""
			continue
		}
		out[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	return out
}

// QueryConsumeTimeSpanRequestHeader is the header of
// QUERY_CONSUME_TIME_SPAN (303): ext topic and group (both required).
type QueryConsumeTimeSpanRequestHeader struct {
	Topic, Group string
}

// Encode returns the ext fields.
func (h *QueryConsumeTimeSpanRequestHeader) Encode() map[string]string {
	return map[string]string{"topic": h.Topic, "group": h.Group}
}

// Decode reads the ext fields; a missing topic or group wraps
// remoting.ErrMissingField.
func (h *QueryConsumeTimeSpanRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "QUERY_CONSUME_TIME_SPAN request header", ext: ext}
	out := QueryConsumeTimeSpanRequestHeader{Topic: r.str("topic", true), Group: r.str("group", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// QueueTimeSpan is one queue of a QUERY_CONSUME_TIME_SPAN answer (Java
// QueueTimeSpan): the store times of its oldest and newest messages and of
// the group's last consumed one, and how long the next message to consume
// has waited (0: none waits).
type QueueTimeSpan struct {
	MessageQueue     MessageQueue `json:"messageQueue"`
	MinTimeStamp     int64        `json:"minTimeStamp"`
	MaxTimeStamp     int64        `json:"maxTimeStamp"`
	ConsumeTimeStamp int64        `json:"consumeTimeStamp"`
	DelayTime        int64        `json:"delayTime"`
}

// QueryConsumeTimeSpanBody is the answer's body (Java
// QueryConsumeTimeSpanBody).
type QueryConsumeTimeSpanBody struct {
	ConsumeTimeSpanSet []QueueTimeSpan `json:"consumeTimeSpanSet"`
}

// Encode returns the JSON body; no queues is an empty list.
func (b QueryConsumeTimeSpanBody) Encode() []byte {
	if b.ConsumeTimeSpanSet == nil {
		b.ConsumeTimeSpanSet = []QueueTimeSpan{}
	}
	out, _ := json.Marshal(b) // plain values always marshal
	return out
}

// DecodeQueryConsumeTimeSpanBody reads the answer's body.
func DecodeQueryConsumeTimeSpanBody(data []byte) (QueryConsumeTimeSpanBody, error) {
	var b QueryConsumeTimeSpanBody
	if err := json.Unmarshal(data, &b); err != nil {
		return QueryConsumeTimeSpanBody{}, fmt.Errorf("protocol: QueryConsumeTimeSpanBody: %w", err)
	}
	return b, nil
}

// CloneGroupOffsetRequestHeader is the header of CLONE_GROUP_OFFSET (314):
// ext srcGroup and destGroup (required), topic (empty: every topic the
// source group has offsets of) and offline ("true": clone even when the
// source group's online consumers do not subscribe to the topic).
type CloneGroupOffsetRequestHeader struct {
	SrcGroup, DestGroup, Topic string
	Offline                    bool
}

// Encode returns the ext fields (topic only when set).
func (h *CloneGroupOffsetRequestHeader) Encode() map[string]string {
	ext := map[string]string{"srcGroup": h.SrcGroup, "destGroup": h.DestGroup, "offline": strconv.FormatBool(h.Offline)}
	if h.Topic != "" {
		ext["topic"] = h.Topic
	}
	return ext
}

// Decode reads the ext fields; a missing srcGroup or destGroup wraps
// remoting.ErrMissingField.
func (h *CloneGroupOffsetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "CLONE_GROUP_OFFSET request header", ext: ext}
	out := CloneGroupOffsetRequestHeader{SrcGroup: r.str("srcGroup", true), DestGroup: r.str("destGroup", true),
		Topic: r.str("topic", false), Offline: r.bool("offline")}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}
