package protocol

import (
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

// The headers of PEEK_MESSAGE, NOTIFICATION and POLLING_INFO as a Java
// client's JSON frame carries them (numbers as JSON numbers, fields of
// TopicQueueRequestHeader the broker does not read), and round trips.
func TestPopMoreHeaders(t *testing.T) {
	c := popFrame(t, `{"code":200052,"extFields":{"consumerGroup":"g","topic":"T","queueId":-1,"maxMsgNums":32,"lo":null,"bname":"broker-a"}}`)
	var p PeekMessageRequestHeader
	if err := p.Decode(c.ExtFields); err != nil || p != (PeekMessageRequestHeader{ConsumerGroup: "g", Topic: "T", QueueID: -1, MaxMsgNums: 32}) {
		t.Fatalf("peek: %+v %v", p, err)
	}
	if req := p.Request(); req.Code != remoting.PeekMessage {
		t.Fatalf("peek code %d", req.Code)
	}

	c = popFrame(t, `{"code":200054,"extFields":{"consumerGroup":"g","topic":"T","queueId":2,"pollTime":"15000","bornTime":1700000000000,"order":true,"attemptId":"a-1"}}`)
	var n NotificationRequestHeader
	want := NotificationRequestHeader{ConsumerGroup: "g", Topic: "T", QueueID: 2, PollTime: 15000, BornTime: 1700000000000, Order: true, AttemptID: "a-1"}
	if err := n.Decode(c.ExtFields); err != nil || n != want {
		t.Fatalf("notification: %+v %v", n, err)
	}
	var again NotificationRequestHeader
	if err := again.Decode(n.Request().ExtFields); err != nil || again != n {
		t.Fatalf("notification round trip: %+v %v", again, err)
	}
	// Java's broker fills bornTime in when a client leaves it out.
	if err := n.Decode(map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "-1", "pollTime": "0"}); err != nil || n.BornTime != 0 {
		t.Fatalf("notification without bornTime: %+v %v", n, err)
	}

	var pi PollingInfoRequestHeader
	if err := pi.Decode((&PollingInfoRequestHeader{ConsumerGroup: "g", Topic: "T", QueueID: -1}).Request().ExtFields); err != nil || pi.QueueID != -1 {
		t.Fatalf("polling info: %+v %v", pi, err)
	}

	for name, decode := range map[string]func(map[string]string) error{
		"peek":         (&PeekMessageRequestHeader{}).Decode,
		"notification": (&NotificationRequestHeader{}).Decode,
		"polling info": (&PollingInfoRequestHeader{}).Decode,
	} {
		full := map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "0", "maxMsgNums": "1", "pollTime": "0"}
		for _, k := range []string{"consumerGroup", "topic", "queueId"} {
			m := clone(full)
			delete(m, k)
			if err := decode(m); !errors.Is(err, remoting.ErrMissingField) {
				t.Errorf("%s without %s: %v", name, k, err)
			}
		}
		for k, v := range map[string]string{"queueId": "x", "topic": "", "consumerGroup": ""} {
			m := clone(full)
			m[k] = v
			if err := decode(m); !errors.Is(err, remoting.ErrBadHeader) {
				t.Errorf("%s with %s=%q: %v", name, k, v, err)
			}
		}
	}
	if err := (&PeekMessageRequestHeader{}).Decode(map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "0"}); !errors.Is(err, remoting.ErrMissingField) {
		t.Errorf("peek without maxMsgNums: %v", err)
	}
	if err := (&NotificationRequestHeader{}).Decode(map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "0"}); !errors.Is(err, remoting.ErrMissingField) {
		t.Errorf("notification without pollTime: %v", err)
	}
}

func TestPopMoreResponseHeaders(t *testing.T) {
	var nr NotificationResponseHeader
	if err := nr.Decode(map[string]string{"hasMsg": "TRUE"}); err != nil || !nr.HasMsg || nr.PollingFull {
		t.Fatalf("%+v %v", nr, err)
	}
	if err := nr.Decode(map[string]string{"pollingFull": "true"}); !errors.Is(err, remoting.ErrMissingField) {
		t.Fatalf("without hasMsg: %v", err)
	}
	full := NotificationResponseHeader{PollingFull: true}
	if err := nr.Decode(full.Encode()); err != nil || nr != full {
		t.Fatalf("round trip %+v %v", nr, err)
	}
	var pr PollingInfoResponseHeader
	if err := pr.Decode((&PollingInfoResponseHeader{PollingNum: 3}).Encode()); err != nil || pr.PollingNum != 3 {
		t.Fatalf("%+v %v", pr, err)
	}
	if err := pr.Decode(map[string]string{}); !errors.Is(err, remoting.ErrMissingField) {
		t.Fatalf("without pollingNum: %v", err)
	}
}

// javaBatchAck is the body a Java 5.x client sends for offsets 101, 103
// and 105 of a POP answer that started at 100 (fastjson: keys sorted,
// Java's short names, BitSet.toByteArray [0x2a] as base64).
const javaBatchAck = `{"acks":[{"b":"Kg==","c":"cg","it":5000,"pt":1700000000000,"q":1,"r":"0","rq":2,"so":100,"t":"myTopic"}],"brokerName":"broker-a"}`

func TestBatchAckBody(t *testing.T) {
	b, err := DecodeBatchAckMessageRequestBody([]byte(javaBatchAck))
	if err != nil {
		t.Fatal(err)
	}
	want := &BatchAckMessageRequestBody{BrokerName: "broker-a", Acks: []BatchAck{{ConsumerGroup: "cg", Topic: "myTopic", Retry: "0",
		StartOffset: 100, QueueID: 1, ReviveQueueID: 2, PopTime: 1700000000000, InvisibleTime: 5000, Offsets: []int64{101, 103, 105}}}}
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("got %+v\nwant %+v", b, want)
	}
	out, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"b":"Kg=="`) || !strings.Contains(string(out), `"so":100`) || !strings.Contains(string(out), `"brokerName":"broker-a"`) {
		t.Fatalf("encoded %s", out)
	}
	req, err := b.Request()
	if err != nil || req.Code != remoting.BatchAckMessage {
		t.Fatalf("request %+v %v", req, err)
	}
	if again, err := DecodeBatchAckMessageRequestBody(req.Body); err != nil || !reflect.DeepEqual(again, want) {
		t.Fatalf("round trip %+v %v", again, err)
	}

	// The long names fastjson reads too; an empty bit set (Java writes "")
	// acknowledges nothing; bit 8 is byte 1's lowest.
	long := `{"acks":[{"consumerGroup":"cg","topic":"T","retry":"0","startOffset":7,"queueId":0,"reviveQueueId":0,"popTime":1,"invisibleTime":2,"bitSet":"AAE="},` +
		`{"c":"cg","t":"T","so":0,"b":""}]}`
	b, err = DecodeBatchAckMessageRequestBody([]byte(long))
	if err != nil || len(b.Acks) != 2 || !reflect.DeepEqual(b.Acks[0].Offsets, []int64{15}) || b.Acks[0].PopTime != 1 || b.Acks[1].Offsets != nil {
		t.Fatalf("%+v %v", b, err)
	}

	many := make([]byte, MaxBatchAckOffsets/8+1)
	for i := range many {
		many[i] = 0xff
	}
	entries := strings.Repeat(`{"c":"g","t":"T"},`, MaxBatchAckOffsets)
	for name, body := range map[string]string{
		"not JSON":         `{"acks":`,
		"not an object":    `[1]`,
		"no group":         `{"acks":[{"t":"T","b":"AQ=="}]}`,
		"no topic":         `{"acks":[{"c":"g","b":"AQ=="}]}`,
		"negative start":   `{"acks":[{"c":"g","t":"T","so":-1}]}`,
		"queue over int32": `{"acks":[{"c":"g","t":"T","q":2147483648}]}`,
		"bit set not b64":  `{"acks":[{"c":"g","t":"T","b":"%%%"}]}`,
		"offset overflow":  `{"acks":[{"c":"g","t":"T","so":9223372036854775807,"b":"Ag=="}]}`,
		"too many offsets": fmt.Sprintf(`{"acks":[{"c":"g","t":"T","b":%q}]}`, base64.StdEncoding.EncodeToString(many)),
		"too many entries": `{"acks":[` + entries + `{"c":"g","t":"T"}]}`,
	} {
		if _, err := DecodeBatchAckMessageRequestBody([]byte(body)); !errors.Is(err, ErrBadBody) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := (&BatchAckMessageRequestBody{Acks: []BatchAck{{ConsumerGroup: "g", Topic: "T", StartOffset: 5, Offsets: []int64{4}}}}).Encode(); err == nil {
		t.Error("an offset below the start offset encoded")
	}
}

func FuzzPeekMessageRequestHeader(f *testing.F) {
	h := PeekMessageRequestHeader{ConsumerGroup: "g", Topic: "T", QueueID: -1, MaxMsgNums: 32}
	fuzzPopDecoder(f, []map[string]string{h.Encode(), {"consumerGroup": "g", "topic": "T", "queueId": "+1", "maxMsgNums": "-0"}},
		(*PeekMessageRequestHeader).Decode, (*PeekMessageRequestHeader).Encode)
}

func FuzzNotificationRequestHeader(f *testing.F) {
	h := NotificationRequestHeader{ConsumerGroup: "g", Topic: "T", QueueID: -1, PollTime: 15000, BornTime: 1, Order: true, AttemptID: "a"}
	fuzzPopDecoder(f, []map[string]string{h.Encode(), {"consumerGroup": "g", "topic": "T", "queueId": "0", "pollTime": "0", "order": "TRUE"}},
		(*NotificationRequestHeader).Decode, (*NotificationRequestHeader).Encode)
}

func FuzzNotificationResponseHeader(f *testing.F) {
	h := NotificationResponseHeader{HasMsg: true}
	fuzzPopDecoder(f, []map[string]string{h.Encode(), {"hasMsg": "TrUe", "pollingFull": "1"}},
		(*NotificationResponseHeader).Decode, (*NotificationResponseHeader).Encode)
}

func FuzzPollingInfoRequestHeader(f *testing.F) {
	h := PollingInfoRequestHeader{ConsumerGroup: "g", Topic: "T", QueueID: 3}
	fuzzPopDecoder(f, []map[string]string{h.Encode()}, (*PollingInfoRequestHeader).Decode, (*PollingInfoRequestHeader).Encode)
}

func FuzzPollingInfoResponseHeader(f *testing.F) {
	h := PollingInfoResponseHeader{PollingNum: 7}
	fuzzPopDecoder(f, []map[string]string{h.Encode()}, (*PollingInfoResponseHeader).Decode, (*PollingInfoResponseHeader).Encode)
}

// FuzzDecodeBatchAckMessageRequestBody: no body makes the decoder panic,
// its errors wrap ErrBadBody, and what it accepts encodes (as a Java
// client writes it) to a body that decodes to the same offsets.
func FuzzDecodeBatchAckMessageRequestBody(f *testing.F) {
	fuzzBody(f, DecodeBatchAckMessageRequestBody, (*BatchAckMessageRequestBody).Encode,
		javaBatchAck,
		`{"acks":[{"consumerGroup":"g","topic":"T","retry":"1","startOffset":0,"bitSet":"/w=="},{"c":"g","t":"T","so":3,"b":""}]}`,
		`{"acks":[],"brokerName":""}`,
		`{"acks":[{"c":"g","C":"h","t":"T","q":-1,"rq":999,"b":"AAAAAAAB"}]}`)
}
