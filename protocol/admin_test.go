package protocol

import (
	"bytes"
	"errors"
	"maps"
	"math"
	"reflect"
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

// The admin bodies use Java's fastjson form, with queues as object keys:
// this checks the codec on a body as a Java broker writes it, the round
// trips, and that broken bodies are errors.
func TestAdminBodies(t *testing.T) {
	java := []byte(`{"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":1700000000000,"maxOffset":9,"minOffset":2},` +
		`{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0}}}`)
	ts, err := DecodeTopicStatsTable(java)
	if err != nil {
		t.Fatal(err)
	}
	q1 := MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 1}
	if len(ts.OffsetTable) != 2 || ts.OffsetTable[q1] != (TopicOffset{MinOffset: 2, MaxOffset: 9, LastUpdateTimestamp: 1700000000000}) {
		t.Fatalf("decoded %+v", ts)
	}
	again, err := DecodeTopicStatsTable(ts.Encode())
	if err != nil || !reflect.DeepEqual(again, ts) {
		t.Fatalf("round trip %+v %v", again, err)
	}

	cs := ConsumeStats{ConsumeTps: 12.5, OffsetTable: map[MessageQueue]OffsetWrapper{q1: {BrokerOffset: 9, ConsumerOffset: 4, PullOffset: 5, LastTimestamp: 3}}}
	gotCS, err := DecodeConsumeStats(cs.Encode())
	if err != nil || !reflect.DeepEqual(gotCS, cs) {
		t.Fatalf("consume stats round trip %+v %v", gotCS, err)
	}
	rb := ResetOffsetBody{OffsetTable: map[MessageQueue]int64{q1: 7, {Topic: "U", BrokerName: "b", QueueID: 3}: -1}}
	gotRB, err := DecodeResetOffsetBody(rb.Encode())
	if err != nil || !reflect.DeepEqual(gotRB, rb) {
		t.Fatalf("reset body round trip %+v %v", gotRB, err)
	}

	for _, bad := range []string{"", "{", `{"offsetTable":{{"topic":"T"}:}}`, `{"offsetTable":{{"topic":"T"}:{"minOffset":"x"}}}`,
		`{"offsetTable":[1]}`, `{"offsetTable":{{"topic":"T"`, `[`} {
		if _, err := DecodeTopicStatsTable([]byte(bad)); !errors.Is(err, remoting.ErrBadHeader) {
			t.Errorf("DecodeTopicStatsTable(%q): %v, want ErrBadHeader", bad, err)
		}
	}
	for _, bad := range []string{"", `{"consumeTps":"fast"}`, `{"offsetTable":{{"topic":"T"}:{"brokerOffset":"x"}}}`, `{"offsetTable":5}`} {
		if _, err := DecodeConsumeStats([]byte(bad)); !errors.Is(err, remoting.ErrBadHeader) {
			t.Errorf("DecodeConsumeStats(%q): %v, want ErrBadHeader", bad, err)
		}
		if _, err := DecodeResetOffsetBody([]byte(bad)); bad != `{"consumeTps":"fast"}` && !errors.Is(err, remoting.ErrBadHeader) {
			t.Errorf("DecodeResetOffsetBody(%q): %v, want ErrBadHeader", bad, err)
		}
	}
}

func TestResetOffsetHeader(t *testing.T) {
	h := ResetOffsetHeader{Topic: "T", Group: "G", Timestamp: 1700000000000, IsForce: true, QueueID: 2, Offset: math.MaxInt64}
	got, err := DecodeResetOffsetHeader(h.Request().ExtFields)
	if err != nil || got != h {
		t.Fatalf("round trip %+v %v", got, err)
	}
	old, err := DecodeResetOffsetHeader(map[string]string{"topic": "T", "group": "G", "timestamp": "-1", "isForce": "false"})
	if err != nil || old.QueueID != -1 || old.Offset != -1 || old.Timestamp != -1 {
		t.Fatalf("Java 4 header %+v %v", old, err)
	}
	for _, ext := range []map[string]string{
		{"group": "G", "timestamp": "1"},
		{"topic": "T", "group": "G", "timestamp": "soon"},
		{"topic": "T", "group": "G", "timestamp": "1", "queueId": "99999999999"},
	} {
		if _, err := DecodeResetOffsetHeader(ext); err == nil {
			t.Errorf("accepted %v", ext)
		}
	}
}

// FuzzDecodeAdminBodies: no panic on any body, and what decodes encodes
// to a fixed point (a nil and an empty table encode alike).
func FuzzDecodeAdminBodies(f *testing.F) {
	f.Add([]byte(`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"minOffset":1,"maxOffset":2,"lastUpdateTimestamp":3}}}`))
	f.Add([]byte(`{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":1}}}`))
	f.Add([]byte(`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5}}`))
	f.Add([]byte(`{"offsetTable":{{`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if ts, err := DecodeTopicStatsTable(body); err == nil {
			if again, err := DecodeTopicStatsTable(ts.Encode()); err != nil || !bytes.Equal(again.Encode(), ts.Encode()) {
				t.Fatalf("topic stats re-decode: %+v %v, want %+v", again, err, ts)
			}
		}
		if cs, err := DecodeConsumeStats(body); err == nil && !math.IsNaN(cs.ConsumeTps) && !math.IsInf(cs.ConsumeTps, 0) {
			if again, err := DecodeConsumeStats(cs.Encode()); err != nil || !bytes.Equal(again.Encode(), cs.Encode()) {
				t.Fatalf("consume stats re-decode: %+v %v, want %+v", again, err, cs)
			}
		}
		if rb, err := DecodeResetOffsetBody(body); err == nil {
			if again, err := DecodeResetOffsetBody(rb.Encode()); err != nil || !bytes.Equal(again.Encode(), rb.Encode()) {
				t.Fatalf("reset body re-decode: %+v %v, want %+v", again, err, rb)
			}
		}
	})
}

func FuzzDecodeResetOffsetHeader(f *testing.F) {
	f.Add("T", "G", "1700000000000", "true", "2", "5")
	f.Add("", "", "", "", "", "")
	f.Fuzz(func(t *testing.T, topic, group, ts, force, qid, off string) {
		h, err := DecodeResetOffsetHeader(map[string]string{"topic": topic, "group": group, "timestamp": ts, "isForce": force, "queueId": qid, "offset": off})
		if err != nil {
			return
		}
		again, err := DecodeResetOffsetHeader(h.Request().ExtFields)
		if err != nil || again != h {
			t.Fatalf("round trip %+v %v, want %+v", again, err, h)
		}
	})
}

// FuzzDecodeBrokerConfig: any body decodes without panic, and what
// EncodeBrokerConfig writes of plain settings decodes to them.
func FuzzDecodeBrokerConfig(f *testing.F) {
	f.Add([]byte("brokerName=broker-a\nlisten_port=10911\n"))
	f.Add([]byte("# comment\n! also\n a : b \nflag\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = DecodeBrokerConfig(body)
	})
}

func TestBrokerConfigRoundTrip(t *testing.T) {
	in := map[string]string{"brokerName": "broker-a", "raft.peers": "n0-127.0.0.1:1;n1-127.0.0.1:2", "empty": ""}
	body := EncodeBrokerConfig(in)
	if string(body) != "brokerName=broker-a\nempty=\nraft.peers=n0-127.0.0.1:1;n1-127.0.0.1:2\n" {
		t.Fatalf("encoded %q", body)
	}
	if got := DecodeBrokerConfig(body); !maps.Equal(got, in) {
		t.Fatalf("decoded %v", got)
	}
	if got := DecodeBrokerConfig([]byte("# c\n a : b \nflag\n")); !maps.Equal(got, map[string]string{"a": "b", "flag": ""}) {
		t.Fatalf("lenient %v", got)
	}
}
