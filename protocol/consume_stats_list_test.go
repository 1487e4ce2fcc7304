package protocol

import (
	"reflect"
	"testing"
)

func TestConsumeStatsListRoundTrip(t *testing.T) {
	mq := func(topic string, q int32) MessageQueue {
		return MessageQueue{Topic: topic, BrokerName: "broker-a", QueueID: q}
	}
	in := ConsumeStatsList{
		BrokerAddr: "127.0.0.1:10911",
		TotalDiff:  7,
		Groups: []GroupConsumeStats{
			{Group: "g1", Stats: []ConsumeStats{
				{ConsumeTps: 1.5, OffsetTable: map[MessageQueue]OffsetWrapper{
					mq("T", 0): {BrokerOffset: 10, ConsumerOffset: 4, PullOffset: 4, LastTimestamp: 1700000000000},
					mq("T", 1): {BrokerOffset: 3, ConsumerOffset: 2, PullOffset: 2},
				}},
			}},
			{Group: "idle", Stats: []ConsumeStats{}},
		},
	}
	body := in.Encode()
	want := `{"brokerAddr":"127.0.0.1:10911","consumeStatsList":[{"g1":[{"consumeTps":1.5,"offsetTable":{{"topic":"T","brokerName":"broker-a","queueId":0}:{"brokerOffset":10,"consumerOffset":4,"pullOffset":4,"lastTimestamp":1700000000000},{"topic":"T","brokerName":"broker-a","queueId":1}:{"brokerOffset":3,"consumerOffset":2,"pullOffset":2,"lastTimestamp":0}}}]},{"idle":[]}],"totalDiff":7}`
	if string(body) != want {
		t.Fatalf("encoded\n%s\nwant\n%s", body, want)
	}
	out, err := DecodeConsumeStatsList(body)
	if err != nil {
		t.Fatal(err)
	}
	in.Groups[1].Stats = nil // decoded from [] as none
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("round trip:\n%+v\nwant\n%+v", out, in)
	}
	for _, bad := range []string{``, `[]`, `{"consumeStatsList":{}}`, `{"consumeStatsList":[{"g":[{"offsetTable":[]}]}]}`, `{"totalDiff":"x"}`} {
		if _, err := DecodeConsumeStatsList([]byte(bad)); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

func FuzzConsumeStatsList(f *testing.F) {
	f.Add([]byte(`{"brokerAddr":"a","consumeStatsList":[{"g":[{"consumeTps":0,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":1,"consumerOffset":0,"pullOffset":0,"lastTimestamp":0}}}]}],"totalDiff":1}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := DecodeConsumeStatsList(data)
		if err != nil {
			return
		}
		again, err := DecodeConsumeStatsList(l.Encode())
		if err != nil {
			t.Fatalf("re-decode of %s: %v", l.Encode(), err)
		}
		if len(again.Groups) != len(l.Groups) || again.TotalDiff != l.TotalDiff || again.BrokerAddr != l.BrokerAddr {
			t.Fatalf("round trip: %+v, want %+v", again, l)
		}
	})
}

func FuzzBrokerConsumeStatsRequestHeader(f *testing.F) {
	fuzzHeader[BrokerConsumeStatsRequestHeader](f, map[string]string{"isOrder": "true"}, map[string]string{"isOrder": "false"})
}
