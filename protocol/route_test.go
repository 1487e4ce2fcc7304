package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

// capturedRoute is a route body the real client decoded.
const capturedRoute = `{"queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],"brokerDatas":[{"cluster":"DefaultCluster","brokerName":"broker-a","brokerAddrs":{"0":"127.0.0.1:10911"}}],"filterServerTable":{}}`

func TestTopicRouteDataCaptured(t *testing.T) {
	r, err := DecodeTopicRouteData([]byte(capturedRoute))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.QueueDatas) != 1 || !r.QueueDatas[0].Writable() || !r.QueueDatas[0].Readable() || r.QueueDatas[0].WriteQueueNums != 4 {
		t.Fatalf("queueDatas %+v", r.QueueDatas)
	}
	bd, ok := r.Broker("broker-a")
	if !ok {
		t.Fatal("broker-a missing")
	}
	if addr, ok := bd.LeaderAddr(); !ok || addr != "127.0.0.1:10911" {
		t.Fatalf("leader %q %v", addr, ok)
	}
	out, err := r.Encode()
	if err != nil || string(out) != capturedRoute {
		t.Fatalf("re-encoded %s (%v)\nwant         %s", out, err, capturedRoute)
	}
}

// TestTopicRouteDataMatchesRouting: what our name server marshals decodes
// here and re-encodes to the same bytes, for the shapes it produces.
func TestTopicRouteDataMatchesRouting(t *testing.T) {
	for _, rr := range []TopicRouteData{
		{QueueDatas: []QueueData{}, BrokerDatas: []BrokerData{}, FilterServerTable: map[string][]string{}},
		{
			OrderTopicConf: "broker-a:4;broker-b:2",
			QueueDatas: []QueueData{
				{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6},
				{BrokerName: "broker-b", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 7, TopicSysFlag: 1},
			},
			BrokerDatas: []BrokerData{
				{Cluster: "c", BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: "127.0.0.1:1", 1: "127.0.0.1:2", 2: "127.0.0.1:3"}},
				{Cluster: "c", BrokerName: "broker-b", BrokerAddrs: map[int64]string{}},
			},
			FilterServerTable: map[string][]string{},
		},
	} {
		body, err := json.Marshal(&rr)
		if err != nil {
			t.Fatal(err)
		}
		r, err := DecodeTopicRouteData(body)
		if err != nil {
			t.Fatal(err)
		}
		out, err := r.Encode()
		if err != nil || !bytes.Equal(out, body) {
			t.Fatalf("re-encoded %s (%v)\nrouting      %s", out, err, body)
		}
	}

	ci := ClusterInfo{
		BrokerAddrTable: map[string]BrokerData{
			"broker-a": {Cluster: "c", BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: "127.0.0.1:1"}},
			"broker-b": {Cluster: "d", BrokerName: "broker-b", BrokerAddrs: map[int64]string{}},
		},
		ClusterAddrTable: map[string][]string{"c": {"broker-a"}, "d": {"broker-b"}},
	}
	body, err := json.Marshal(&ci)
	if err != nil {
		t.Fatal(err)
	}
	c, err := DecodeClusterInfo(body)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Encode()
	if err != nil || !bytes.Equal(out, body) {
		t.Fatalf("cluster info re-encoded %s (%v)\nrouting      %s", out, err, body)
	}
	if req := ClusterInfoRequest(); req.Code != remoting.GetBrokerClusterInfo || len(req.ExtFields) != 0 {
		t.Fatalf("cluster info request %v", req)
	}
}

func TestTopicRouteDataNormalizes(t *testing.T) {
	r, err := DecodeTopicRouteData([]byte(`{"brokerDatas":[{"brokerName":"b","brokerAddrs":null}],"queueDatas":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.QueueDatas == nil || r.FilterServerTable == nil || r.BrokerDatas[0].BrokerAddrs == nil {
		t.Fatalf("nil lists or maps left: %+v", r)
	}
	// Encode never writes null for brokerAddrs, even for a hand-built route.
	out, err := (&TopicRouteData{BrokerDatas: []BrokerData{{BrokerName: "b"}}}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"brokerAddrs":{}`) || strings.Contains(string(out), "null") {
		t.Fatalf("encoded %s", out)
	}
	// Keys match case-insensitively, as the Go client's decoder does.
	r, err = DecodeTopicRouteData([]byte(`{"QueueDatas":[{"BROKERNAME":"b","writeQueueNums":2,"perm":2}]}`))
	if err != nil || r.QueueDatas[0].BrokerName != "b" || r.QueueDatas[0].WriteQueueNums != 2 {
		t.Fatalf("case-insensitive keys: %+v %v", r, err)
	}
}

func TestTopicRouteDataErrors(t *testing.T) {
	for _, body := range []string{
		``, `null`, `[]`, `"x"`, `{`, `{"queueDatas":{}}`,
		`{"queueDatas":[{"brokerName":""}]}`,
		`{"queueDatas":[{"brokerName":"b","writeQueueNums":-1}]}`,
		`{"queueDatas":[{"brokerName":"b","readQueueNums":65537}]}`,
		`{"queueDatas":[{"brokerName":"b","perm":2147483648}]}`,
		`{"queueDatas":[{"brokerName":"b","perm":"6"}]}`,
		`{"brokerDatas":[{"brokerName":"b","brokerAddrs":{"zero":"a"}}]}`,
		`{"brokerDatas":[{"brokerName":"b","brokerAddrs":{0:"a"}}]}`,
		`{"brokerDatas":[{"brokerAddrs":{}}]}`,
	} {
		if r, err := DecodeTopicRouteData([]byte(body)); !errors.Is(err, ErrBadBody) {
			t.Errorf("%s: %+v, %v; want ErrBadBody", body, r, err)
		}
	}
	for _, body := range []string{
		`null`, `{"brokerAddrTable":[]}`,
		`{"brokerAddrTable":{"a":{"brokerName":"b"}}}`,
		`{"brokerAddrTable":{"a":{"brokerName":""}}}`,
		`{"clusterAddrTable":{"c":"a"}}`,
	} {
		if c, err := DecodeClusterInfo([]byte(body)); !errors.Is(err, ErrBadBody) {
			t.Errorf("cluster info %s: %+v, %v; want ErrBadBody", body, c, err)
		}
	}
}

func TestGetRouteInfoRequestHeader(t *testing.T) {
	for _, h := range []GetRouteInfoRequestHeader{{Topic: "T"}, {Topic: "", AcceptStandardJSONOnly: true}} {
		var got GetRouteInfoRequestHeader
		if err := got.Decode(h.Encode()); err != nil || got != h {
			t.Fatalf("round trip %+v: %+v %v", h, got, err)
		}
	}
	if ext := (&GetRouteInfoRequestHeader{Topic: "T"}).Encode(); !reflect.DeepEqual(ext, map[string]string{"topic": "T"}) {
		t.Fatalf("ext %v: the Go client sends only topic", ext)
	}
	req := (&GetRouteInfoRequestHeader{Topic: "T"}).Request()
	if req.Code != remoting.GetRouteInfoByTopic || req.ExtFields["topic"] != "T" {
		t.Fatalf("request %v", req)
	}
	if err := new(GetRouteInfoRequestHeader).Decode(map[string]string{}); !errors.Is(err, remoting.ErrMissingField) {
		t.Fatalf("no topic: %v", err)
	}
}
