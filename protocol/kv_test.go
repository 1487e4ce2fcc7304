package protocol

import (
	"errors"
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

func TestKVConfigHeaders(t *testing.T) {
	var h KVConfigRequestHeader
	if err := h.DecodePut(map[string]string{"namespace": "n", "key": "k"}); !errors.Is(err, remoting.ErrMissingField) {
		t.Fatalf("put without value: %v", err)
	}
	if err := h.Decode(map[string]string{"namespace": "n", "key": "k"}); err != nil || h.Value != "" {
		t.Fatalf("get: %+v %v", h, err)
	}
	if err := h.Decode(map[string]string{"namespace": "n"}); !errors.Is(err, remoting.ErrMissingField) {
		t.Fatalf("get without key: %v", err)
	}
	if got := WritePermCountField(remoting.AddWritePermOfBroker); got != "addTopicCount" {
		t.Fatal(got)
	}
	if got := WritePermCountField(remoting.WipeWritePermOfBroker); got != "wipeTopicCount" {
		t.Fatal(got)
	}
}

func FuzzKVConfigRequestHeader(f *testing.F) {
	fuzzHeader[KVConfigRequestHeader](f, map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "broker-a:4"})
}

// FuzzKVConfigPutHeader: DecodePut never panics, and what it accepts
// survives Encode and Decode.
func FuzzKVConfigPutHeader(f *testing.F) {
	f.Add(extBytes(map[string]string{"namespace": "n", "key": "k", "value": "v"}))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got KVConfigRequestHeader
		if err := got.DecodePut(extFromBytes(data)); err != nil {
			return
		}
		var again KVConfigRequestHeader
		if err := again.Decode(got.Encode()); err != nil || again != got {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, got)
		}
	})
}

func FuzzGetKVListByNamespaceRequestHeader(f *testing.F) {
	fuzzHeader[GetKVListByNamespaceRequestHeader](f, map[string]string{"namespace": "ORDER_TOPIC_CONFIG"})
}

func FuzzBrokerPermRequestHeader(f *testing.F) {
	fuzzHeader[BrokerPermRequestHeader](f, map[string]string{"brokerName": "broker-a"})
}

func FuzzGetKVConfigResponseHeader(f *testing.F) {
	fuzzHeader[GetKVConfigResponseHeader](f, map[string]string{"value": "broker-a:4"})
}
