package protocol

import (
	"encoding/json"
	"testing"
)

func TestQueryConsumeQueueBody(t *testing.T) {
	b := QueryConsumeQueueResponseBody{QueueData: []ConsumeQueueData{{PhysicOffset: 10, PhysicSize: 200, TagsCode: 7, Eval: true}},
		MaxQueueIndex: 5, MinQueueIndex: 1}
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"queueData":[{"physicOffset":10,"physicSize":200,"tagsCode":7,"eval":true}],"maxQueueIndex":5,"minQueueIndex":1}`; string(raw) != want {
		t.Fatalf("body %s, want %s", raw, want)
	}
	got, err := DecodeQueryConsumeQueueBody(raw)
	if err != nil || len(got.QueueData) != 1 || got.QueueData[0] != b.QueueData[0] || got.MaxQueueIndex != 5 {
		t.Fatalf("decode: %+v %v", got, err)
	}
}

func FuzzQueryConsumeQueueRequestHeader(f *testing.F) {
	fuzzHeader[QueryConsumeQueueRequestHeader](f, map[string]string{"topic": "T", "queueId": "0", "index": "0", "count": "10", "consumerGroup": "g"})
}

// FuzzDecodeQueryConsumeQueueBody: the decoder never panics, and what it
// accepts encodes and decodes to the same.
func FuzzDecodeQueryConsumeQueueBody(f *testing.F) {
	f.Add([]byte(`{"filterData":"g@T is not online!","maxQueueIndex":3,"minQueueIndex":0,"queueData":[{"eval":false,"physicOffset":0,"physicSize":180,"tagsCode":0}]}`))
	f.Add([]byte(`{"subscriptionData":{"topic":"T","subString":"*","tagsSet":[],"codeSet":[]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeQueryConsumeQueueBody(data)
		if err != nil {
			return
		}
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeQueryConsumeQueueBody(raw); err != nil {
			t.Fatalf("re-decode of %s: %v", raw, err)
		}
	})
}
