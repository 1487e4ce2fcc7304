package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

// extFromBytes turns fuzz input into ext fields: NUL-separated key, value,
// key, value, … (a trailing key gets an empty value).
func extFromBytes(data []byte) map[string]string {
	parts := bytes.Split(data, []byte{0})
	ext := make(map[string]string, len(parts)/2+1)
	for i := 0; i < len(parts); i += 2 {
		v := ""
		if i+1 < len(parts) {
			v = string(parts[i+1])
		}
		ext[string(parts[i])] = v
	}
	return ext
}

// extBytes is the inverse of extFromBytes, for seeds.
func extBytes(ext map[string]string) []byte {
	keys := make([]string, 0, len(ext))
	for k := range ext {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k, ext[k])
	}
	return []byte(strings.Join(parts, "\x00"))
}

// FuzzSendMessageRequestHeader: Decode never panics, and a header it
// accepts survives Encode and Decode unchanged, in both name forms.
func FuzzSendMessageRequestHeader(f *testing.F) {
	f.Add(extBytes(capturedSend), false)
	h := fullHeader()
	f.Add(extBytes(h.Encode()), false)
	f.Add(extBytes((*SendMessageRequestHeaderV2)(&h).Encode()), true)
	f.Add([]byte("a\x00g\x00b\x00\x00c\x00TBW102\x00d\x00-4\x00e\x00+1\x00f\x000\x00g\x000\x00h\x00-0"), true)
	f.Fuzz(func(t *testing.T, data []byte, short bool) {
		ext := extFromBytes(data)
		var got SendMessageRequestHeader
		var err error
		if short {
			err = (*SendMessageRequestHeaderV2)(&got).Decode(ext)
		} else {
			err = got.Decode(ext)
		}
		if err != nil {
			return
		}
		var again SendMessageRequestHeader
		if short {
			err = (*SendMessageRequestHeaderV2)(&again).Decode((*SendMessageRequestHeaderV2)(&got).Encode())
		} else {
			err = again.Decode(got.Encode())
		}
		if err != nil || again != got {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, got)
		}
	})
}

// FuzzSendMessageResponseHeader: as FuzzSendMessageRequestHeader for the
// answer's header.
func FuzzSendMessageResponseHeader(f *testing.F) {
	f.Add(extBytes(map[string]string{"msgId": "7F00000100002A9F0000000000000000", "queueId": "1", "queueOffset": "0",
		"transactionId": "x", "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}))
	f.Add([]byte("msgId\x00a,b\x00queueId\x00-1\x00queueOffset\x009223372036854775807\x00TRACE_ON\x00no"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got SendMessageResponseHeader
		if err := got.Decode(extFromBytes(data)); err != nil {
			return
		}
		var again SendMessageResponseHeader
		if err := again.Decode(got.Encode()); err != nil || again != got {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, got)
		}
		if ids := got.MsgIDs(); strings.Join(ids, ",") != got.MsgID {
			t.Fatalf("MsgIDs %q of %q", ids, got.MsgID)
		}
	})
}

// FuzzGetRouteInfoRequestHeader: as above for GET_ROUTEINFO_BY_TOPIC.
func FuzzGetRouteInfoRequestHeader(f *testing.F) {
	f.Add([]byte("topic\x00T"))
	f.Add([]byte("topic\x00T\x00acceptStandardJsonOnly\x00True"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got GetRouteInfoRequestHeader
		if err := got.Decode(extFromBytes(data)); err != nil {
			return
		}
		var again GetRouteInfoRequestHeader
		if err := again.Decode(got.Encode()); err != nil || again != got {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, got)
		}
	})
}

// FuzzDecodeTopicRouteData: the decoder never panics, and a route it
// accepts re-encodes to a body that decodes to the same route.
func FuzzDecodeTopicRouteData(f *testing.F) {
	f.Add([]byte(capturedRoute))
	f.Add([]byte(`{"orderTopicConf":"a:1","queueDatas":[{"brokerName":"a","readQueueNums":1,"writeQueueNums":1,"perm":7}],"brokerDatas":[{"cluster":"c","brokerName":"a","brokerAddrs":{"0":"x","-3":"y"}}],"filterServerTable":{"x":["y"]}}`))
	f.Add([]byte(`{"queueDatas":null,"brokerDatas":[{"brokerName":"b","brokerAddrs":null}]}`))
	f.Add([]byte(`{"brokerDatas":[{"brokerName":"\xff\u0000","brokerAddrs":{"1":"\ud800"}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeTopicRouteData(body)
		if err != nil {
			return
		}
		out, err := r.Encode()
		if err != nil {
			t.Fatalf("encode %+v: %v", r, err)
		}
		again, err := DecodeTopicRouteData(out)
		if err != nil {
			t.Fatalf("re-decode %s: %v", out, err)
		}
		if !reflect.DeepEqual(again, r) {
			t.Fatalf("round trip:\n%+v\nwant\n%+v", again, r)
		}
	})
}

// FuzzDecodeClusterInfo: as FuzzDecodeTopicRouteData for cluster info.
func FuzzDecodeClusterInfo(f *testing.F) {
	f.Add([]byte(`{"brokerAddrTable":{"broker-a":{"cluster":"c","brokerName":"broker-a","brokerAddrs":{"0":"127.0.0.1:1"}}},"clusterAddrTable":{"c":["broker-a"]}}`))
	f.Add([]byte(`{"brokerAddrTable":{"b":{"brokerName":"b","brokerAddrs":null}},"clusterAddrTable":{"c":null}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := DecodeClusterInfo(body)
		if err != nil {
			return
		}
		out, err := c.Encode()
		if err != nil {
			t.Fatalf("encode %+v: %v", c, err)
		}
		again, err := DecodeClusterInfo(out)
		if err != nil {
			t.Fatalf("re-decode %s: %v", out, err)
		}
		if !reflect.DeepEqual(again, c) {
			t.Fatalf("round trip:\n%+v\nwant\n%+v", again, c)
		}
	})
}

// FuzzDecodeHeartbeat: DecodeHeartbeat never panics, and what it accepts
// encodes and decodes again to the same value.
func FuzzDecodeHeartbeat(f *testing.F) {
	f.Add([]byte(`{"clientID":"192.0.2.2@1","producerDataSet":[{"groupName":"pg"}],"consumerDataSet":[{"groupName":"cg",` +
		`"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",` +
		`"subscriptionDataSet":[{"topic":"T","subString":"A || B","tagsSet":["A","B"],"codeSet":["65",66],"subVersion":1795975709351000000,"expressionType":"TAG"}]}]}`))
	f.Add([]byte(`{"clientID":"c"}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":""}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		hb, err := DecodeHeartbeat(body)
		if err != nil {
			return
		}
		enc, err := hb.Encode()
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeHeartbeat(enc)
		if err != nil {
			t.Fatalf("re-decode %s: %v", enc, err)
		}
		if !reflect.DeepEqual(normalizeHB(hb), normalizeHB(again)) {
			t.Fatalf("round trip:\n%+v\n%+v", hb, again)
		}
	})
}

// normalizeHB maps empty and nil slices alike, for comparisons.
func normalizeHB(hb *HeartbeatData) *HeartbeatData {
	out := *hb
	out.ConsumerDataSet = nil
	for _, c := range hb.ConsumerDataSet {
		var subs []SubscriptionData
		for _, s := range c.SubscriptionDataSet {
			if len(s.TagsSet) == 0 {
				s.TagsSet = nil
			}
			if len(s.CodeSet) == 0 {
				s.CodeSet = nil
			}
			subs = append(subs, s)
		}
		c.SubscriptionDataSet = subs
		out.ConsumerDataSet = append(out.ConsumerDataSet, c)
	}
	return &out
}

// FuzzEndTransactionRequestHeader: as above for END_TRANSACTION.
func FuzzEndTransactionRequestHeader(f *testing.F) {
	f.Add(extBytes(map[string]string{"producerGroup": "pg", "tranStateTableOffset": "0", "commitLogOffset": "1241",
		"commitOrRollback": "8", "fromTransactionCheck": "true", "msgId": "C0A8", "transactionId": "C0A8", "bname": ""}))
	f.Add([]byte("producerGroup\x00pg\x00tranStateTableOffset\x00-1\x00commitLogOffset\x000\x00commitOrRollback\x0012\x00msgId\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got EndTransactionRequestHeader
		if err := got.Decode(extFromBytes(data)); err != nil {
			return
		}
		var again EndTransactionRequestHeader
		if err := again.Decode(got.Encode()); err != nil || again != got {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, got)
		}
	})
}

// FuzzCheckTransactionStateRequestHeader: as above for
// CHECK_TRANSACTION_STATE.
func FuzzCheckTransactionStateRequestHeader(f *testing.F) {
	f.Add(extBytes(map[string]string{"tranStateTableOffset": "3", "commitLogOffset": "1241", "msgId": "C0A8",
		"transactionId": "C0A8", "offsetMsgId": "7F00", "topic": "T", "bname": "broker-a"}))
	f.Add([]byte("tranStateTableOffset\x00+0\x00commitLogOffset\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got CheckTransactionStateRequestHeader
		if err := got.Decode(extFromBytes(data)); err != nil {
			return
		}
		var again CheckTransactionStateRequestHeader
		if err := again.Decode(got.Encode()); err != nil || again != got {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, got)
		}
	})
}

// FuzzDecodeRegisterBody feeds arbitrary REGISTER_BROKER bodies to the
// decoder: it must never panic, and what it accepts must survive a round
// trip through Encode in the same form.
func FuzzDecodeRegisterBody(f *testing.F) {
	f.Add([]byte(javaBody), false)
	f.Add([]byte(`{}`), false)
	f.Add([]byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"readQueueNums":1}}}}`), false)
	f.Add([]byte(`null`), false)
	f.Add([]byte{}, false)
	f.Add(javaCompressed(f, `{"counter":2,"stateVersion":5,"timestamp":7}`,
		[]string{"A 4 4 6 SINGLE_TAG {}", "B 2 1 6 MULTI_TAG "}, `[]`, []string{`{}`}, nil), true)
	f.Add(javaCompressed(f, `{}`, nil, `[]`, nil, nil), true)
	f.Add(deflate(f, []byte{0, 0, 0, 2, '{', '}', 0x7f, 0xff, 0xff, 0xff}), true)
	f.Add([]byte("x\x9c\x03\x00\x00\x00\x00\x01"), true)
	for _, compressed := range []bool{false, true} {
		b := &RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigWrapper{
			DataVersion:      DataVersion{StateVersion: 1, Timestamp: 2, Counter: 3},
			TopicConfigTable: topicMap(topic("A", 4), topic("TBW102", 8)),
		}}
		raw, err := b.Encode(compressed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw, compressed)
	}

	f.Fuzz(func(t *testing.T, data []byte, compressed bool) {
		b, err := decodeRegisterBody(data, compressed, 1<<20)
		if err != nil {
			if !errors.Is(err, ErrBadBody) {
				t.Fatalf("error %v does not wrap ErrBadBody", err)
			}
			return
		}
		for name, tc := range b.TopicConfigSerializeWrapper.TopicConfigTable {
			if name == "" || tc.TopicName != name || CheckTopicConfig(tc) != nil {
				t.Fatalf("decoder accepted topic %q: %+v", name, tc)
			}
		}
		enc, err := b.Encode(compressed)
		if err != nil {
			// Only the compressed form has names it cannot carry.
			if compressed && errors.Is(err, ErrBadBody) {
				return
			}
			t.Fatalf("encode what was decoded: %v", err)
		}
		b2, err := DecodeRegisterBody(enc, compressed)
		if err != nil {
			t.Fatalf("decode what was encoded: %v\n%q", err, enc)
		}
		enc2, err := b2.Encode(compressed)
		if err != nil {
			t.Fatal(err)
		}
		if !compressed && !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the body:\n%s\n%s", enc, enc2)
		}
		if compressed && !reflect.DeepEqual(normalized(b), normalized(b2)) {
			t.Fatalf("round trip changed the body:\n%+v\n%+v", b, b2)
		}
	})
}

// normalized keeps what the compressed form carries.
func normalized(b *RegisterBrokerBody) map[string]TopicConfig {
	out := make(map[string]TopicConfig)
	for name, tc := range b.TopicConfigSerializeWrapper.TopicConfigTable {
		out[name] = TopicConfig{TopicName: tc.TopicName, ReadQueueNums: tc.ReadQueueNums,
			WriteQueueNums: tc.WriteQueueNums, Perm: tc.Perm, TopicFilterType: tc.TopicFilterType}
	}
	return out
}

// FuzzParseTopicText fuzzes the compressed form's topic text, and checks
// that what it parses formats back to an equal topic.
func FuzzParseTopicText(f *testing.F) {
	for _, s := range []string{"A 4 4 6 SINGLE_TAG {}", "B 2 1 6 MULTI_TAG ", "C 1 1 2 SINGLE_TAG {not json",
		"D 8 8 6 SINGLE_TAG", "E -1 1 6 SINGLE_TAG", "F 1 1 6", "", "G  1 1 6 SINGLE_TAG", `H 1 1 6 SINGLE_TAG {"a":"b c"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tc, err := parseTopicText(s)
		if err != nil {
			if !errors.Is(err, ErrBadBody) {
				t.Fatalf("error %v does not wrap ErrBadBody", err)
			}
			return
		}
		text := fmt.Sprintf("%s %d %d %d %s ", tc.TopicName, tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm, tc.TopicFilterType)
		back, err := parseTopicText(text)
		if err != nil {
			t.Fatalf("reparse %q: %v", text, err)
		}
		tc.Attributes = nil
		if !reflect.DeepEqual(back, tc) {
			t.Fatalf("round trip %q: %+v != %+v", s, back, tc)
		}
	})
}

// FuzzPullMessageRequestHeader: as above for PULL_MESSAGE.
func FuzzPullMessageRequestHeader(f *testing.F) {
	h := PullMessageRequestHeader{ConsumerGroup: "g", Topic: "T", QueueID: 1, QueueOffset: 7, MaxMsgNums: 32, SysFlag: 6,
		SuspendTimeoutMillis: 20000, Subscription: "A || B", SubVersion: 1795975709349293848, ExpressionType: "TAG"}
	f.Add(extBytes(h.Encode()))
	f.Add([]byte("consumerGroup\x00g\x00topic\x00\x00queueId\x00-1\x00queueOffset\x00x"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got PullMessageRequestHeader
		if err := got.Decode(extFromBytes(data)); err != nil {
			return
		}
		var again PullMessageRequestHeader
		if err := again.Decode(got.Encode()); err != nil || again != got {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, got)
		}
	})
}

// FuzzPullMessageResponseHeader: as above for the answer.
func FuzzPullMessageResponseHeader(f *testing.F) {
	f.Add([]byte("nextBeginOffset\x0012\x00minOffset\x000\x00maxOffset\x0012\x00suggestWhichBrokerId\x000"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got PullMessageResponseHeader
		if err := got.Decode(extFromBytes(data)); err != nil {
			return
		}
		var again PullMessageResponseHeader
		if err := again.Decode(got.Encode()); err != nil || again != got {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, got)
		}
	})
}

// FuzzSendHeaderList: a send header decoded from a list of fields (a
// server leaves a send's fields in remoting.Command.ExtList) is the one
// decoded from the map of those fields, the last value of a repeated key
// included, and so is the error.
func FuzzSendHeaderList(f *testing.F) {
	h := fullHeader()
	f.Add(extBytes(capturedSend), int32(remoting.SendMessage))
	f.Add(extBytes(h.Encode()), int32(remoting.SendMessage))
	f.Add(extBytes((*SendMessageRequestHeaderV2)(&h).Encode()), int32(remoting.SendMessageV2))
	f.Add(extBytes((*SendMessageRequestHeaderV2)(&h).Encode()), int32(remoting.SendBatchMessage))
	f.Add([]byte("a\x00g\x00b\x00\x00c\x00TBW102\x00d\x00-4\x00e\x00+1\x00f\x000\x00g\x000\x00h\x00-0\x00a\x00h"), int32(remoting.SendMessageV2))
	f.Add([]byte{}, int32(remoting.PullMessage))
	f.Fuzz(func(t *testing.T, data []byte, code int32) {
		var list []remoting.ExtField
		m := map[string]string{}
		parts := bytes.Split(data, []byte{0})
		for i := 0; i < len(parts); i += 2 {
			v := ""
			if i+1 < len(parts) {
				v = string(parts[i+1])
			}
			list = append(list, remoting.ExtField{Key: string(parts[i]), Value: v})
			m[string(parts[i])] = v
		}
		byMap, errMap := DecodeSendRequestHeader(code, m)
		byList, errList := DecodeSendRequestHeaderList(code, list)
		if byMap != byList || (errMap == nil) != (errList == nil) || (errMap != nil && errMap.Error() != errList.Error()) {
			t.Fatalf("map: %+v, %v; list: %+v, %v", byMap, errMap, byList, errList)
		}
	})
}
