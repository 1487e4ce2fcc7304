package protocol

import (
	"errors"
	"reflect"
	"testing"
)

// extHeader is a header type with the package's Encode and Decode.
type extHeader[T any] interface {
	*T
	Encode() map[string]string
	Decode(map[string]string) error
}

// fuzzHeader is the round-trip check of the simple headers: Decode never
// panics, and a header it accepts survives Encode and Decode unchanged.
func fuzzHeader[T comparable, P extHeader[T]](f *testing.F, seeds ...map[string]string) {
	for _, s := range seeds {
		f.Add(extBytes(s))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var got T
		if err := P(&got).Decode(extFromBytes(data)); err != nil {
			return
		}
		var again T
		if err := P(&again).Decode(P(&got).Encode()); err != nil || again != got {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, got)
		}
	})
}

func FuzzQueryConsumerOffsetRequestHeader(f *testing.F) {
	fuzzHeader[QueryConsumerOffsetRequestHeader](f,
		map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "3", "bname": "broker-a"},
		map[string]string{"consumerGroup": "", "topic": "", "queueId": "-1"},
		map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "0", "setZeroIfNotFound": "false"})
}

func FuzzUpdateConsumerOffsetRequestHeader(f *testing.F) {
	fuzzHeader[UpdateConsumerOffsetRequestHeader](f,
		map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "3", "commitOffset": "77", "bname": "broker-a"},
		map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "0", "commitOffset": "+1", "forwardedBy": "n1"})
}

func FuzzQueueOffsetRequestHeader(f *testing.F) {
	fuzzHeader[QueueOffsetRequestHeader](f,
		map[string]string{"topic": "T", "queueId": "3", "bname": "broker-a"},
		map[string]string{"topic": "T", "queueId": "2147483648"})
}

func FuzzSearchOffsetRequestHeader(f *testing.F) {
	fuzzHeader[SearchOffsetRequestHeader](f,
		map[string]string{"topic": "T", "queueId": "3", "timestamp": "1700000000000", "bname": "broker-a"},
		map[string]string{"topic": "T", "queueId": "1", "timestamp": ""})
}

func FuzzOffsetResponseHeader(f *testing.F) {
	fuzzHeader[OffsetResponseHeader](f, map[string]string{"offset": "12"}, map[string]string{"offset": "-0"})
}

func FuzzStoreTimeResponseHeader(f *testing.F) {
	fuzzHeader[StoreTimeResponseHeader](f, map[string]string{"timestamp": "-1"})
}

// fuzzBody is the round-trip check of the JSON bodies: decode never
// panics, errors wrap ErrBadBody, and what it accepts encodes to a body
// that decodes to the same value.
func fuzzBody[T any](f *testing.F, decode func([]byte) (*T, error), encode func(*T) ([]byte, error), seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`null`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		v, err := decode(body)
		if err != nil {
			if !errors.Is(err, ErrBadBody) {
				t.Fatalf("error %v does not wrap ErrBadBody", err)
			}
			return
		}
		out, err := encode(v)
		if err != nil {
			t.Fatalf("encode %+v: %v", v, err)
		}
		again, err := decode(out)
		if err != nil {
			t.Fatalf("re-decode %s: %v", out, err)
		}
		if !reflect.DeepEqual(again, v) {
			t.Fatalf("round trip:\n%+v\nwant\n%+v", again, v)
		}
	})
}

func FuzzGetConsumerListByGroupRequestHeader(f *testing.F) {
	fuzzHeader[GetConsumerListByGroupRequestHeader](f, map[string]string{"consumerGroup": "g"})
}

func FuzzDecodeConsumerListBody(f *testing.F) {
	fuzzBody(f, DecodeConsumerListBody, (*ConsumerListBody).Encode,
		`{"consumerIdList":["192.0.2.1@1","192.0.2.2@2"]}`, `{"consumerIdList":[]}`, `{"consumerIdList":null}`)
}

func FuzzUnregisterClientRequestHeader(f *testing.F) {
	fuzzHeader[UnregisterClientRequestHeader](f, map[string]string{"clientID": "c", "consumerGroup": "g"},
		map[string]string{"clientID": "c", "producerGroup": "", "consumerGroup": ""})
}

func FuzzConsumerSendMsgBackRequestHeader(f *testing.F) {
	fuzzHeader[ConsumerSendMsgBackRequestHeader](f,
		map[string]string{"group": "g", "offset": "1241", "delayLevel": "3", "originMsgId": "C0A8", "originTopic": "T",
			"unitMode": "false", "maxReconsumeTimes": "16", "bname": "broker-a"},
		map[string]string{"group": "g", "offset": "0", "delayLevel": "-1"})
}

func FuzzNotifyConsumerIdsChangedRequestHeader(f *testing.F) {
	fuzzHeader[NotifyConsumerIdsChangedRequestHeader](f, map[string]string{"consumerGroup": "g"})
}

func FuzzResetConsumerClientOffsetRequestHeader(f *testing.F) {
	fuzzHeader[ResetConsumerClientOffsetRequestHeader](f,
		map[string]string{"topic": "T", "group": "g", "timestamp": "-1", "isForce": "true"})
}

func FuzzDecodeLockBatchBody(f *testing.F) {
	fuzzBody(f, DecodeLockBatchBody, (*LockBatchBody).Encode,
		`{"consumerGroup":"g","clientId":"c","mqSet":[{"topic":"T","brokerName":"broker-a","queueId":1}]}`,
		`{"consumerGroup":"g","clientId":"c","mqSet":[]}`)
}

func FuzzDecodeLockBatchResult(f *testing.F) {
	fuzzBody(f, DecodeLockBatchResult, (*LockBatchResult).Encode,
		`{"lockOKMQSet":[{"topic":"T","brokerName":"broker-a","queueId":1}]}`)
}

func FuzzQueryMessageRequestHeader(f *testing.F) {
	fuzzHeader[QueryMessageRequestHeader](f,
		map[string]string{"topic": "T", "key": "k", "maxNum": "64", "beginTimestamp": "0", "endTimestamp": "9223372036854775807"},
		map[string]string{"topic": "T", "key": "C0A8", "maxNum": "1", "beginTimestamp": "0", "endTimestamp": "1", "_UNIQUE_KEY_QUERY": "TRUE"})
}

func FuzzQueryMessageResponseHeader(f *testing.F) {
	fuzzHeader[QueryMessageResponseHeader](f,
		map[string]string{"indexLastUpdateTimestamp": "1700000000000", "indexLastUpdatePhyoffset": "1241"})
}

func FuzzViewMessageRequestHeader(f *testing.F) {
	fuzzHeader[ViewMessageRequestHeader](f, map[string]string{"offset": "1241"})
}

func FuzzCreateTopicRequestHeader(f *testing.F) {
	fuzzHeader[CreateTopicRequestHeader](f,
		map[string]string{"topic": "T", "defaultTopic": "TBW102", "readQueueNums": "8", "writeQueueNums": "8", "perm": "6",
			"topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"},
		map[string]string{"topic": "T", "readQueueNums": "", "perm": "0"})
}

func FuzzDeleteTopicRequestHeader(f *testing.F) {
	fuzzHeader[DeleteTopicRequestHeader](f, map[string]string{"topic": "T"})
}

func FuzzDeleteTopicFromNamesrvRequestHeader(f *testing.F) {
	fuzzHeader[DeleteTopicFromNamesrvRequestHeader](f, map[string]string{"topic": "T", "clusterName": "c"})
}

func FuzzCloneGroupOffsetRequestHeader(f *testing.F) {
	fuzzHeader[CloneGroupOffsetRequestHeader](f, map[string]string{"srcGroup": "a", "destGroup": "b", "topic": "T", "offline": "true"},
		map[string]string{"srcGroup": "a", "destGroup": "b"})
}

func FuzzQueryConsumeTimeSpanRequestHeader(f *testing.F) {
	fuzzHeader[QueryConsumeTimeSpanRequestHeader](f, map[string]string{"topic": "T", "group": "g"})
}

func FuzzConsumerRelayRequestHeader(f *testing.F) {
	fuzzHeader[ConsumerRelayRequestHeader](f, map[string]string{"consumerGroup": "g", "clientId": "127.0.0.1@1", "msgId": "C0A8"})
}

func FuzzQueryTopicConsumeByWhoRequestHeader(f *testing.F) {
	fuzzHeader[QueryTopicConsumeByWhoRequestHeader](f, map[string]string{"topic": "T"})
}

func FuzzGetTopicsByClusterRequestHeader(f *testing.F) {
	fuzzHeader[GetTopicsByClusterRequestHeader](f, map[string]string{"cluster": "DefaultCluster"})
}

func FuzzDeleteSubscriptionGroupRequestHeader(f *testing.F) {
	fuzzHeader[DeleteSubscriptionGroupRequestHeader](f, map[string]string{"groupName": "g", "cleanOffset": "true"})
}

func FuzzGetSubscriptionGroupConfigRequestHeader(f *testing.F) {
	fuzzHeader[GetSubscriptionGroupConfigRequestHeader](f, map[string]string{"group": "g"})
}

func FuzzRegisterBrokerRequestHeader(f *testing.F) {
	fuzzHeader[RegisterBrokerRequestHeader](f,
		map[string]string{"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "c", "haServerAddr": "",
			"brokerId": "0", "enableActingMaster": "false", "compressed": "false", "bodyCrc32": "12345", "heartbeatTimeoutMillis": "30000"},
		map[string]string{"brokerName": "b", "brokerAddr": "a", "clusterName": "c", "haServerAddr": "", "brokerId": "1", "bodyCrc32": ""})
}

func FuzzRegisterBrokerResponseHeader(f *testing.F) {
	fuzzHeader[RegisterBrokerResponseHeader](f, map[string]string{"masterAddr": "127.0.0.1:10911", "haServerAddr": ""},
		map[string]string{"haServerAddr": "x"})
}

func FuzzUnregisterBrokerRequestHeader(f *testing.F) {
	fuzzHeader[UnregisterBrokerRequestHeader](f,
		map[string]string{"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "c", "brokerId": "0"})
}

func FuzzDecodeTopicList(f *testing.F) {
	fuzzBody(f, DecodeTopicList, (*TopicList).Encode, `{"topicList":["T","%RETRY%g"]}`, `{"topicList":[]}`)
}

func FuzzTopicStatsInfoRequestHeader(f *testing.F) {
	fuzzHeader[TopicStatsInfoRequestHeader](f, map[string]string{"topic": "T"})
}

func FuzzConsumerConnectionListRequestHeader(f *testing.F) {
	fuzzHeader[ConsumerConnectionListRequestHeader](f, map[string]string{"consumerGroup": "g"})
}

func FuzzProducerConnectionListRequestHeader(f *testing.F) {
	fuzzHeader[ProducerConnectionListRequestHeader](f, map[string]string{"producerGroup": "pg"})
}

func FuzzConsumeStatsRequestHeader(f *testing.F) {
	fuzzHeader[ConsumeStatsRequestHeader](f, map[string]string{"consumerGroup": "g", "topic": "T"},
		map[string]string{"consumerGroup": "g", "topic": ""})
}

func FuzzDecodeSubscriptionGroupConfig(f *testing.F) {
	fuzzBody(f, DecodeSubscriptionGroupConfig, (*SubscriptionGroupConfig).Encode,
		`{"groupName":"g","consumeEnable":true,"consumeFromMinEnable":true,"consumeBroadcastEnable":true,"consumeMessageOrderly":false,`+
			`"retryQueueNums":1,"retryMaxTimes":16,"brokerId":0,"whichBrokerWhenConsumeSlowly":1,"notifyConsumerIdsChangedEnable":true}`,
		`{"groupName":"g","consumeEnable":false}`,
		`{"groupName":"g","groupRetryPolicy":{"type":"CUSTOMIZED"},"subscriptionDataSet":null,"attributes":{},"groupSysFlag":0}`,
		`{"retryQueueNums":2147483648}`)
}

func FuzzDecodeSubscriptionGroupWrapper(f *testing.F) {
	fuzzBody(f, DecodeSubscriptionGroupWrapper, (*SubscriptionGroupWrapper).Encode,
		`{"subscriptionGroupTable":{"g":{"groupName":"g","consumeEnable":true,"retryMaxTimes":16}},"dataVersion":{"stateVersion":0,"timestamp":0,"counter":41}}`,
		`{"subscriptionGroupTable":{"g":null,"h":{}}}`, `{"subscriptionGroupTable":null}`)
}

func FuzzDecodeKVTable(f *testing.F) {
	fuzzBody(f, DecodeKVTable, (*KVTable).Encode,
		`{"table":{"brokerVersionDesc":"V5_3_3","commitLogMaxOffset":"1241","raftRole":"leader"}}`, `{"table":null}`, `{}`)
}

func FuzzDecodeConsumerConnection(f *testing.F) {
	fuzzBody(f, DecodeConsumerConnection, (*ConsumerConnection).Encode,
		`{"connectionSet":[{"clientId":"192.0.2.2@1","clientAddr":"127.0.0.1:5","language":"GO","version":479}],`+
			`"subscriptionTable":{"T":{"classFilterMode":false,"topic":"T","subString":"A || B","tagsSet":["A","B"],"codeSet":[65,"66"],`+
			`"subVersion":1,"expressionType":"TAG"}},"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",`+
			`"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET"}`,
		`{"connectionSet":null,"subscriptionTable":{"T":null}}`)
}

func FuzzDecodeProducerConnection(f *testing.F) {
	fuzzBody(f, DecodeProducerConnection, (*ProducerConnection).Encode,
		`{"connectionSet":[{"clientId":"c","clientAddr":"127.0.0.1:5","language":"JAVA","version":479}]}`, `{"connectionSet":[]}`)
}

func FuzzDecodeTopicConfigWrapper(f *testing.F) {
	fuzzBody(f, DecodeTopicConfigWrapper, (*TopicConfigWrapper).Encode,
		`{"topicConfigTable":{"T":{"topicName":"T","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicFilterType":"SINGLE_TAG",`+
			`"topicSysFlag":0,"order":false,"attributes":{}}},"dataVersion":{"stateVersion":3,"timestamp":1700000000000,"counter":7}}`,
		`{"topicConfigTable":{"T":null}}`)
}
