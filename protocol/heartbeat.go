package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Bounds applied by DecodeHeartbeat: a heartbeat is kept by the broker for
// as long as the client lives, so its size must not be the client's choice.
const (
	// MaxHeartbeatGroups bounds the producer and the consumer groups of
	// one heartbeat (each).
	MaxHeartbeatGroups = 1024
	// MaxHeartbeatSubscriptions bounds one consumer group's subscriptions.
	MaxHeartbeatSubscriptions = 4096
)

// Consume types and message models of ConsumerData (Java ConsumeType,
// MessageModel).
const (
	ConsumePassively       = "CONSUME_PASSIVELY" // push consumers
	ConsumeActively        = "CONSUME_ACTIVELY"  // pull consumers
	MessageModelClustering = "CLUSTERING"
	MessageModelBroadcast  = "BROADCASTING"
	ExpressionTypeTag      = "TAG"
	ExpressionTypeSQL92    = "SQL92"
)

// HeartbeatData is the body of HEART_BEAT (34), Java HeartbeatData: the
// client's id, the producer groups it sends for (the broker learns from
// them where to send CHECK_TRANSACTION_STATE) and its consumer groups with
// their subscriptions.
//
//	{"clientID":"192.0.2.2@18978","producerDataSet":[{"groupName":"pg1"}],
//	 "consumerDataSet":[{"groupName":"cg1","consumeType":"CONSUME_PASSIVELY",
//	   "messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",
//	   "subscriptionDataSet":[{"classFilterMode":false,"topic":"T","subString":"TagA || TagB",
//	     "tagsSet":["TagA","TagB"],"codeSet":[2598919,2598920],"subVersion":1795975709351000000,
//	     "expressionType":"TAG"}],"unitMode":false}]}
type HeartbeatData struct {
	ClientID        string         `json:"clientID"`
	ProducerDataSet []ProducerData `json:"producerDataSet"`
	ConsumerDataSet []ConsumerData `json:"consumerDataSet"`
}

// ProducerData is one producer group of a heartbeat.
type ProducerData struct {
	GroupName string `json:"groupName"`
}

// ConsumerData is one consumer group of a heartbeat.
type ConsumerData struct {
	GroupName           string             `json:"groupName"`
	ConsumeType         string             `json:"consumeType"`
	MessageModel        string             `json:"messageModel"`
	ConsumeFromWhere    string             `json:"consumeFromWhere"`
	SubscriptionDataSet []SubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool               `json:"unitMode"`
}

// TagCodes is SubscriptionData.CodeSet: the Java string hashes of the
// subscribed tags. Java writes them as numbers, rocketmq-client-go as
// strings; both decode. They are written as numbers.
type TagCodes []int32

// UnmarshalJSON accepts an array of numbers or of decimal strings (or
// null); items that are neither are dropped.
func (c *TagCodes) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*c = nil
		return nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(TagCodes, 0, len(raw))
	for _, r := range raw {
		// A code that is not a 32-bit number is left out: receivers derive
		// the codes from the subscription expression anyway.
		var n int32
		if len(r) > 0 && r[0] == '"' {
			var s string
			if json.Unmarshal(r, &s) != nil {
				continue
			}
			v, err := strconv.ParseInt(s, 10, 32)
			if err != nil {
				continue
			}
			n = int32(v)
		} else if json.Unmarshal(r, &n) != nil {
			continue
		}
		out = append(out, n)
	}
	*c = out
	return nil
}

// DecodeHeartbeat decodes and checks a heartbeat body: a JSON object with
// a clientID, named producer groups, consumer groups whose subscriptions
// name a topic (consumer group names are the receiver's to check, group
// by group), and at most MaxHeartbeatGroups groups of
// each kind and MaxHeartbeatSubscriptions subscriptions per group. Absent
// sets decode as empty ones. Errors wrap ErrBadBody. It never panics.
func DecodeHeartbeat(body []byte) (*HeartbeatData, error) {
	hb := &HeartbeatData{}
	if err := decodeObject(body, hb, "heartbeat"); err != nil {
		return nil, err
	}
	switch {
	case hb.ClientID == "":
		return nil, fmt.Errorf("%w: heartbeat without clientID", ErrBadBody)
	case len(hb.ProducerDataSet) > MaxHeartbeatGroups || len(hb.ConsumerDataSet) > MaxHeartbeatGroups:
		return nil, fmt.Errorf("%w: heartbeat of %d producer and %d consumer groups, limit %d each",
			ErrBadBody, len(hb.ProducerDataSet), len(hb.ConsumerDataSet), MaxHeartbeatGroups)
	}
	for _, p := range hb.ProducerDataSet {
		if p.GroupName == "" {
			return nil, fmt.Errorf("%w: heartbeat: producer without a group", ErrBadBody)
		}
	}
	for _, c := range hb.ConsumerDataSet {
		if len(c.SubscriptionDataSet) > MaxHeartbeatSubscriptions {
			return nil, fmt.Errorf("%w: heartbeat: group %s has %d subscriptions, limit %d",
				ErrBadBody, quote(c.GroupName), len(c.SubscriptionDataSet), MaxHeartbeatSubscriptions)
		}
		for _, s := range c.SubscriptionDataSet {
			if s.Topic == "" {
				return nil, fmt.Errorf("%w: heartbeat: group %s subscribes to an empty topic", ErrBadBody, quote(c.GroupName))
			}
		}
	}
	if hb.ProducerDataSet == nil {
		hb.ProducerDataSet = []ProducerData{}
	}
	if hb.ConsumerDataSet == nil {
		hb.ConsumerDataSet = []ConsumerData{}
	}
	return hb, nil
}

// Encode returns the heartbeat as JSON (empty sets as [], not null).
func (hb *HeartbeatData) Encode() ([]byte, error) {
	out := *hb
	if out.ProducerDataSet == nil {
		out.ProducerDataSet = []ProducerData{}
	}
	if out.ConsumerDataSet == nil {
		out.ConsumerDataSet = []ConsumerData{}
	}
	return json.Marshal(&out)
}
