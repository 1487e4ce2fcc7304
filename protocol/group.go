package protocol

import (
	"encoding/json"
	"fmt"

	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/remoting"
)

// The subscription-group bodies that client.Admin and Java's mqadmin send
// and the broker serves (broker/groups.go):
//
//	code  request                              header  body
//	----  -----------------------------------  ------  ------------------------------------------
//	200   UPDATE_AND_CREATE_SUBSCRIPTIONGROUP  none    SubscriptionGroupConfig
//	201   GET_ALL_SUBSCRIPTIONGROUP_CONFIG     none    answer: SubscriptionGroupWrapper
//	352   GET_SUBSCRIPTIONGROUP_CONFIG         group   answer: SubscriptionGroupConfig
//
// A config's fields left out of a body read RocketMQ's defaults
// (DefaultSubscriptionGroupConfig), as Java's fastjson fills a new
// SubscriptionGroupConfig: mqadmin's updateSubGroup sends every field,
// older tools fewer. Java's extra fields (groupRetryPolicy,
// subscriptionDataSet, attributes, …) are ignored. The broker checks the
// name and the retry bounds; the decoders here check only the form, and
// their memory is bounded by the body's length.

// SubscriptionGroupConfig is a subscription group's config (Java
// SubscriptionGroupConfig), the body of 200 and of 352's answer:
//
//	{"groupName":"g","consumeEnable":true,"consumeFromMinEnable":true,
//	 "consumeBroadcastEnable":true,"consumeMessageOrderly":false,
//	 "retryQueueNums":1,"retryMaxTimes":16,"brokerId":0,
//	 "whichBrokerWhenConsumeSlowly":1,"notifyConsumerIdsChangedEnable":true}
//
// The broker replicates it as a metadata.SubscriptionGroup (Metadata);
// ConsumeMessageOrderly makes a FIFO group for POP consumption (RocketMQ
// 5's clients), while a 4.x consumer's ordering stays its own choice, made
// at its subscription.
type SubscriptionGroupConfig struct {
	GroupName                      string `json:"groupName"`
	ConsumeEnable                  bool   `json:"consumeEnable"`
	ConsumeFromMinEnable           bool   `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable         bool   `json:"consumeBroadcastEnable"`
	ConsumeMessageOrderly          bool   `json:"consumeMessageOrderly"`
	RetryQueueNums                 int32  `json:"retryQueueNums"`
	RetryMaxTimes                  int32  `json:"retryMaxTimes"`
	BrokerID                       int64  `json:"brokerId"`
	WhichBrokerWhenConsumeSlowly   int64  `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIdsChangedEnable bool   `json:"notifyConsumerIdsChangedEnable"`
}

// DefaultSubscriptionGroupConfig is name's config with Java's defaults.
func DefaultSubscriptionGroupConfig(name string) SubscriptionGroupConfig {
	return SubscriptionGroupConfig{GroupName: name, ConsumeEnable: true, ConsumeFromMinEnable: true, ConsumeBroadcastEnable: true,
		RetryQueueNums: 1, RetryMaxTimes: 16, WhichBrokerWhenConsumeSlowly: 1, NotifyConsumerIdsChangedEnable: true}
}

// defaultedConfig decodes a config with the defaults for the fields the
// object leaves out. The method is not SubscriptionGroupConfig's own so
// that a struct embedding the config (client.BrokerGroupConfig) keeps
// encoding/json's field-by-field decoding.
type defaultedConfig SubscriptionGroupConfig

func (c *defaultedConfig) UnmarshalJSON(b []byte) error {
	type plain SubscriptionGroupConfig // no method: json.Unmarshal fills it
	p := plain(DefaultSubscriptionGroupConfig(""))
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = defaultedConfig(p)
	return nil
}

// Encode returns the JSON body, every field written.
func (c *SubscriptionGroupConfig) Encode() ([]byte, error) { return json.Marshal(c) }

// Request returns the UPDATE_AND_CREATE_SUBSCRIPTIONGROUP request.
func (c *SubscriptionGroupConfig) Request() (*remoting.Command, error) {
	body, err := c.Encode()
	if err != nil {
		return nil, fmt.Errorf("protocol: subscription group config: %w", err)
	}
	return remoting.NewRequest(remoting.UpdateAndCreateSubscriptionGroup, nil, body), nil
}

// DecodeSubscriptionGroupConfig decodes the body of 200 (or 352's
// answer): a JSON object, defaults for the fields it leaves out. Errors
// wrap ErrBadBody.
func DecodeSubscriptionGroupConfig(body []byte) (*SubscriptionGroupConfig, error) {
	var c defaultedConfig
	if err := decodeObject(body, &c, "subscription group config"); err != nil {
		return nil, err
	}
	out := SubscriptionGroupConfig(c)
	return &out, nil
}

// Metadata is the part of c the broker group replicates.
func (c *SubscriptionGroupConfig) Metadata() metadata.SubscriptionGroup {
	return metadata.SubscriptionGroup{GroupName: c.GroupName, ConsumeEnable: c.ConsumeEnable,
		ConsumeFromMinEnable: c.ConsumeFromMinEnable, ConsumeBroadcastEnable: c.ConsumeBroadcastEnable,
		RetryQueueNums: c.RetryQueueNums, RetryMaxTimes: c.RetryMaxTimes, BrokerID: c.BrokerID,
		WhichBrokerWhenConsumeSlowly: c.WhichBrokerWhenConsumeSlowly, NotifyConsumerIdsChangedEnable: c.NotifyConsumerIdsChangedEnable,
		ConsumeMessageOrderly: c.ConsumeMessageOrderly}
}

// SubscriptionGroupConfigOf is the config a replicated group answers with.
func SubscriptionGroupConfigOf(g metadata.SubscriptionGroup) SubscriptionGroupConfig {
	return SubscriptionGroupConfig{GroupName: g.GroupName, ConsumeEnable: g.ConsumeEnable,
		ConsumeFromMinEnable: g.ConsumeFromMinEnable, ConsumeBroadcastEnable: g.ConsumeBroadcastEnable,
		RetryQueueNums: g.RetryQueueNums, RetryMaxTimes: g.RetryMaxTimes, BrokerID: g.BrokerID,
		WhichBrokerWhenConsumeSlowly: g.WhichBrokerWhenConsumeSlowly, NotifyConsumerIdsChangedEnable: g.NotifyConsumerIdsChangedEnable,
		ConsumeMessageOrderly: g.ConsumeMessageOrderly}
}

// SubscriptionGroupWrapper is the body of 201's answer (Java
// SubscriptionGroupWrapper): the groups keyed by name, and the version of
// the table. Our brokers set DataVersion.Counter to the raft index of the
// metadata the answer was read from.
//
//	{"subscriptionGroupTable":{"g":{…config…}},"dataVersion":{"stateVersion":0,"timestamp":0,"counter":41}}
type SubscriptionGroupWrapper struct {
	SubscriptionGroupTable map[string]SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	DataVersion            DataVersion                        `json:"dataVersion"`
}

// AllSubscriptionGroupsRequest returns the GET_ALL_SUBSCRIPTIONGROUP_CONFIG
// request (no header).
func AllSubscriptionGroupsRequest() *remoting.Command {
	return remoting.NewRequest(remoting.GetAllSubscriptionGroupConfig, nil, nil)
}

// Encode returns the JSON body; a nil table is written {}.
func (w *SubscriptionGroupWrapper) Encode() ([]byte, error) {
	out := *w
	if out.SubscriptionGroupTable == nil {
		out.SubscriptionGroupTable = map[string]SubscriptionGroupConfig{}
	}
	return json.Marshal(&out)
}

// DecodeSubscriptionGroupWrapper decodes 201's answer; an absent or null
// table decodes as an empty one. Errors wrap ErrBadBody.
func DecodeSubscriptionGroupWrapper(body []byte) (*SubscriptionGroupWrapper, error) {
	var in struct {
		SubscriptionGroupTable map[string]defaultedConfig `json:"subscriptionGroupTable"`
		DataVersion            DataVersion                `json:"dataVersion"`
	}
	if err := decodeObject(body, &in, "GET_ALL_SUBSCRIPTIONGROUP_CONFIG answer"); err != nil {
		return nil, err
	}
	w := &SubscriptionGroupWrapper{SubscriptionGroupTable: make(map[string]SubscriptionGroupConfig, len(in.SubscriptionGroupTable)),
		DataVersion: in.DataVersion}
	for name, c := range in.SubscriptionGroupTable {
		w.SubscriptionGroupTable[name] = SubscriptionGroupConfig(c)
	}
	return w, nil
}
