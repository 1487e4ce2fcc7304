package protocol

import (
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

// BenchmarkDecodeSendRequestHeaderList is the send header of a request
// whose fields the remoting server left in a list, as our client writes
// them (SEND_MESSAGE, the long names).
func BenchmarkDecodeSendRequestHeaderList(b *testing.B) {
	h := SendMessageRequestHeader{ProducerGroup: "bench-producer", Topic: "RH", DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: 3, BornTimestamp: 1795975709351,
		Properties: "KEYS\x01order-1\x02TAGS\x01TagA\x02UNIQ_KEY\x01C00002024A2200000000941699480001\x02", BrokerName: "broker-a"}
	names := [...]string{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
		"bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes", "batch", "bname"}
	ext := h.Encode()
	list := make([]remoting.ExtField, len(names))
	for i, n := range names {
		list[i] = remoting.ExtField{Key: n, Value: ext[n]}
	}
	b.ReportAllocs()
	for b.Loop() {
		got, err := DecodeSendRequestHeaderList(remoting.SendMessage, list)
		if err != nil || got.QueueID != 3 {
			b.Fatal(got, err)
		}
	}
}
