package protocol

import (
	"encoding/json"
	"fmt"

	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/remoting"
)

// Topic filter types of TopicConfig.TopicFilterType.
const (
	FilterSingleTag = "SINGLE_TAG"
	FilterMultiTag  = "MULTI_TAG"
)

// TopicConfig is one topic of a broker's topic table, as RocketMQ's
// TopicConfig. It is the very type the group replicates (metadata), so
// what a broker registers, answers and stores cannot drift apart:
//
//	{"topicName":"T","readQueueNums":4,"writeQueueNums":4,"perm":6,
//	 "topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false}
//
// The name server keeps ReadQueueNums, WriteQueueNums, Perm and
// TopicSysFlag; the other fields travel for compatibility.
type TopicConfig = metadata.TopicConfig

// DataVersion is RocketMQ's DataVersion: the version of a broker's topic
// table. Timestamp and Counter change whenever the table changes; the name
// server re-reads the topics of a leader registration only when they (or
// the leader) change. StateVersion carries the broker's Raft term.
//
//	{"stateVersion":<raft term>,"timestamp":<ms>,"counter":<n>}
type DataVersion struct {
	StateVersion int64 `json:"stateVersion"`
	Timestamp    int64 `json:"timestamp"`
	Counter      int64 `json:"counter"`
}

// TopicConfigWrapper is RocketMQ's TopicConfigSerializeWrapper: the topic
// table keyed by topic name, and its version. It is the body of
// GET_ALL_TOPIC_CONFIG (21) and part of REGISTER_BROKER's.
type TopicConfigWrapper struct {
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
	DataVersion      DataVersion            `json:"dataVersion"`
}

// RegisterBrokerBody is the body of REGISTER_BROKER (103), RocketMQ's
// RegisterBrokerBody (the name server decodes it with its own bounds).
type RegisterBrokerBody struct {
	TopicConfigSerializeWrapper TopicConfigWrapper `json:"topicConfigSerializeWrapper"`
	FilterServerList            []string           `json:"filterServerList"`
}

// TopicList is the body of GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206).
type TopicList struct {
	TopicList []string `json:"topicList"`
	// BrokerAddr is set in GET_SYSTEM_TOPIC_LIST_FROM_NS's answer only: a
	// broker to ask for its system topics.
	BrokerAddr string `json:"brokerAddr,omitempty"`
}

// AllTopicListRequest returns the GET_ALL_TOPIC_LIST_FROM_NAMESERVER
// request (no header).
func AllTopicListRequest() *remoting.Command {
	return remoting.NewRequest(remoting.GetAllTopicListFromNameServer, nil, nil)
}

// Encode returns the JSON body.
func (l *TopicList) Encode() ([]byte, error) { return json.Marshal(l) }

// DecodeTopicList decodes the body of 206's answer; an error wraps
// ErrBadBody. Its memory is bounded by the body's length.
func DecodeTopicList(body []byte) (*TopicList, error) {
	var l TopicList
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, fmt.Errorf("%w: GET_ALL_TOPIC_LIST_FROM_NAMESERVER answer: %w", ErrBadBody, err)
	}
	return &l, nil
}

// Encode returns the JSON body of GET_ALL_TOPIC_CONFIG's answer; a nil
// table is written {}.
func (w *TopicConfigWrapper) Encode() ([]byte, error) {
	out := *w
	if out.TopicConfigTable == nil {
		out.TopicConfigTable = map[string]TopicConfig{}
	}
	return json.Marshal(&out)
}

// DecodeTopicConfigWrapper decodes GET_ALL_TOPIC_CONFIG's answer; an
// absent or null table decodes as an empty one. Errors wrap ErrBadBody;
// memory is bounded by the body's length. (REGISTER_BROKER's copy has its
// own decoder with the name server's bounds: DecodeRegisterBody.)
func DecodeTopicConfigWrapper(body []byte) (*TopicConfigWrapper, error) {
	w := &TopicConfigWrapper{}
	if err := decodeObject(body, w, "GET_ALL_TOPIC_CONFIG answer"); err != nil {
		return nil, err
	}
	if w.TopicConfigTable == nil {
		w.TopicConfigTable = map[string]TopicConfig{}
	}
	for name, tc := range w.TopicConfigTable {
		if tc.Attributes != nil && len(tc.Attributes) == 0 {
			tc.Attributes = nil // what Encode's omitempty gives back
			w.TopicConfigTable[name] = tc
		}
	}
	return w, nil
}

// AllTopicConfigRequest returns the GET_ALL_TOPIC_CONFIG request (no
// header).
func AllTopicConfigRequest() *remoting.Command {
	return remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil)
}
