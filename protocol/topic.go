package protocol

import (
	"encoding/json"
	"fmt"

	"github.com/ledgermq/ledgermq/metadata"
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
