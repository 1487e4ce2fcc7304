package protocol

import (
	"reflect"
	"testing"
)

func FuzzViewBrokerStatsDataRequestHeader(f *testing.F) {
	fuzzHeader[ViewBrokerStatsDataRequestHeader](f,
		map[string]string{"statsName": "TOPIC_PUT_NUMS", "statsKey": "T"},
		map[string]string{"statsName": "GROUP_GET_NUMS", "statsKey": "T@g"},
		map[string]string{"statsName": ""})
}

// A stats body decodes, encodes, and decodes to the same; anything else
// is an error, never a panic.
func FuzzBrokerStatsData(f *testing.F) {
	f.Add([]byte(`{"statsDay":{"avgpt":3,"sum":30,"tps":0.00034},"statsHour":{"avgpt":3,"sum":30,"tps":0.008},"statsMinute":{"avgpt":0,"sum":0,"tps":0}}`))
	f.Add([]byte(`{"statsMinute":{"sum":"12"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := DecodeBrokerStatsData(data)
		if err != nil {
			return
		}
		again, err := DecodeBrokerStatsData(d.Encode())
		if err != nil || again != d {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, d)
		}
	})
}

// An ACL config body decodes, encodes, and decodes to the same.
func FuzzClusterACLConfig(f *testing.F) {
	f.Add([]byte(`{"globalWhiteAddrs":["10.0.0.*"],"plainAccessConfigs":[{"accessKey":"ak","secretKey":"sk","whiteRemoteAddress":"","admin":false,"defaultTopicPerm":"PUB","defaultGroupPerm":"SUB","topicPerms":["t=PUB"],"groupPerms":["g=SUB"]}]}`))
	f.Add([]byte(`{"plainAccessConfigs":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeClusterACLConfig(data)
		if err != nil {
			return
		}
		raw, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeClusterACLConfig(raw)
		if err != nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, c)
		}
	})
}
