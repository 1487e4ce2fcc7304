package protocol

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

// capturedSend is the ext of a SEND_MESSAGE the real rocketmq-client-go
// sent, captured on the wire.
var capturedSend = map[string]string{
	"producerGroup": "pg1", "topic": "TestTopic", "queueId": "1", "sysFlag": "0",
	"bornTimestamp": "1795975709351", "flag": "0", "reconsumeTimes": "0", "unitMode": "false",
	"maxReconsumeTimes": "0", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "batch": "false",
	"properties": "TAGS\x01TagA\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01C00002024A2200000000941699480001\x02",
	"bname":      "broker-a",
}

func fullHeader() SendMessageRequestHeader {
	return SendMessageRequestHeader{
		ProducerGroup: "pg", Topic: "T", DefaultTopic: DefaultTopic, DefaultTopicQueueNums: DefaultTopicQueueNums,
		QueueID: 3, SysFlag: 1, BornTimestamp: 1795975709351, Flag: -7, Properties: "TAGS\x01a\x02",
		ReconsumeTimes: 2, UnitMode: true, MaxReconsumeTimes: 16, Batch: true, BrokerName: "broker-b",
	}
}

func TestSendRequestHeaderCaptured(t *testing.T) {
	var h SendMessageRequestHeader
	if err := h.Decode(capturedSend); err != nil {
		t.Fatal(err)
	}
	want := SendMessageRequestHeader{
		ProducerGroup: "pg1", Topic: "TestTopic", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: 1,
		BornTimestamp: 1795975709351, Properties: capturedSend["properties"], BrokerName: "broker-a",
	}
	if h != want {
		t.Fatalf("decoded %+v\nwant    %+v", h, want)
	}
	// Encode writes exactly the fields the Go client writes.
	if got := h.Encode(); !maps.Equal(got, capturedSend) {
		t.Fatalf("encoded %v\nwant    %v", got, capturedSend)
	}
}

func TestSendRequestHeaderRoundTrip(t *testing.T) {
	for _, h := range []SendMessageRequestHeader{{}, fullHeader()} {
		var long SendMessageRequestHeader
		if err := long.Decode(h.Encode()); err != nil || long != h {
			t.Fatalf("long names: %+v, %v; want %+v", long, err, h)
		}
		v2 := SendMessageRequestHeaderV2(h)
		ext := v2.Encode()
		if ext["b"] != h.Topic || ext["m"] != boolString(h.Batch) || ext["n"] != h.BrokerName {
			t.Fatalf("V2 ext %v", ext)
		}
		var short SendMessageRequestHeaderV2
		if err := short.Decode(ext); err != nil || SendMessageRequestHeader(short) != h {
			t.Fatalf("short names: %+v, %v; want %+v", short, err, h)
		}
	}
}

func TestSendRequestCodes(t *testing.T) {
	h := fullHeader()
	if req := h.Request([]byte("b")); req.Code != remoting.SendMessage || string(req.Body) != "b" || req.ExtFields["topic"] != "T" {
		t.Fatalf("SEND_MESSAGE request %v", req)
	}
	v2 := SendMessageRequestHeaderV2(h)
	if req := v2.Request(nil); req.Code != remoting.SendBatchMessage || req.ExtFields["m"] != "true" {
		t.Fatalf("batch request %v", req)
	}
	v2.Batch = false
	if req := v2.Request(nil); req.Code != remoting.SendMessageV2 {
		t.Fatalf("V2 request %v", req)
	}
	for _, tt := range []struct {
		code int32
		ext  map[string]string
	}{
		{remoting.SendMessage, h.Encode()},
		{remoting.SendMessageV2, (*SendMessageRequestHeaderV2)(&h).Encode()},
		{remoting.SendBatchMessage, (*SendMessageRequestHeaderV2)(&h).Encode()},
	} {
		got, err := DecodeSendRequestHeader(tt.code, tt.ext)
		if err != nil || got != h {
			t.Fatalf("code %d: %+v, %v", tt.code, got, err)
		}
	}
	// The long names are not the V2 ones.
	if _, err := DecodeSendRequestHeader(remoting.SendBatchMessage, h.Encode()); !errors.Is(err, remoting.ErrMissingField) {
		t.Fatalf("long names under 320: %v", err)
	}
	if _, err := DecodeSendRequestHeader(remoting.PullMessage, h.Encode()); !errors.Is(err, remoting.ErrBadHeader) {
		t.Fatalf("pull code: %v", err)
	}
}

func TestSendRequestHeaderErrors(t *testing.T) {
	with := func(k, v string) map[string]string {
		ext := maps.Clone(capturedSend)
		ext[k] = v
		return ext
	}
	without := func(k string) map[string]string {
		ext := maps.Clone(capturedSend)
		delete(ext, k)
		return ext
	}
	for _, tt := range []struct {
		name  string
		ext   map[string]string
		want  error
		field string
	}{
		{"no topic", without("topic"), remoting.ErrMissingField, "topic"},
		{"no producerGroup", without("producerGroup"), remoting.ErrMissingField, "producerGroup"},
		{"no defaultTopic", without("defaultTopic"), remoting.ErrMissingField, "defaultTopic"},
		{"empty queueId", with("queueId", ""), remoting.ErrMissingField, "queueId"},
		{"no bornTimestamp", without("bornTimestamp"), remoting.ErrMissingField, "bornTimestamp"},
		{"queueId text", with("queueId", "one"), remoting.ErrBadHeader, "queueId"},
		{"queueId over int32", with("queueId", "2147483648"), remoting.ErrBadHeader, "queueId"},
		{"sysFlag spaces", with("sysFlag", " 1"), remoting.ErrBadHeader, "sysFlag"},
		{"bornTimestamp over int64", with("bornTimestamp", "9223372036854775808"), remoting.ErrBadHeader, "bornTimestamp"},
		{"optional but bad", with("reconsumeTimes", "x"), remoting.ErrBadHeader, "reconsumeTimes"},
		{"long bad value", with("flag", strings.Repeat("9", 10000)), remoting.ErrBadHeader, "flag"},
		{"nil map", nil, remoting.ErrMissingField, "producerGroup"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := fullHeader()
			err := h.Decode(tt.ext)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), `"`+tt.field+`"`) {
				t.Fatalf("error %v, want %v naming %q", err, tt.want, tt.field)
			}
			if len(err.Error()) > 300 {
				t.Fatalf("error of %d bytes repeats the input: %.100s…", len(err.Error()), err)
			}
			if h != fullHeader() {
				t.Fatalf("a failed Decode changed the header: %+v", h)
			}
		})
	}
	// Optional fields may be absent or empty; booleans read Java's way.
	ext := maps.Clone(capturedSend)
	for _, k := range []string{"properties", "reconsumeTimes", "maxReconsumeTimes", "batch", "bname"} {
		delete(ext, k)
	}
	ext["unitMode"] = "TRUE"
	ext["maxReconsumeTimes"] = ""
	var h SendMessageRequestHeader
	if err := h.Decode(ext); err != nil {
		t.Fatal(err)
	}
	if !h.UnitMode || h.Batch || h.MaxReconsumeTimes != 0 || h.Properties != "" {
		t.Fatalf("optional fields: %+v", h)
	}
}

func TestSendResponseHeader(t *testing.T) {
	captured := map[string]string{"msgId": "7F00000100002A9F0000000000000000", "queueId": "1", "queueOffset": "0",
		"transactionId": "C000…0001", "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
	var h SendMessageResponseHeader
	if err := h.Decode(captured); err != nil {
		t.Fatal(err)
	}
	want := SendMessageResponseHeader{MsgID: "7F00000100002A9F0000000000000000", QueueID: 1, TransactionID: "C000…0001",
		Region: "DefaultRegion", TraceOn: true}
	if h != want {
		t.Fatalf("decoded %+v", h)
	}
	if got := h.Encode(); !maps.Equal(got, captured) {
		t.Fatalf("encoded %v\nwant    %v", got, captured)
	}
	if ids := h.MsgIDs(); len(ids) != 1 || ids[0] != h.MsgID {
		t.Fatalf("MsgIDs %v", ids)
	}
	h.MsgID = "A,B,C"
	if ids := h.MsgIDs(); len(ids) != 3 || ids[2] != "C" {
		t.Fatalf("batch MsgIDs %v", ids)
	}
	resp := h.Response(remoting.NewRequest(remoting.SendMessage, nil, nil), remoting.FlushDiskTimeout)
	if resp.Code != remoting.FlushDiskTimeout || !resp.IsResponse() || resp.ExtFields["queueId"] != "1" {
		t.Fatalf("response %v", resp)
	}

	for _, tt := range []struct {
		trace string
		on    bool
	}{{"", false}, {"false", false}, {"true", true}, {"yes", true}} {
		ext := maps.Clone(captured)
		ext["TRACE_ON"] = tt.trace
		var h SendMessageResponseHeader
		if err := h.Decode(ext); err != nil || h.TraceOn != tt.on {
			t.Fatalf("TRACE_ON %q: %v %v", tt.trace, h.TraceOn, err)
		}
	}
	for _, k := range []string{"msgId", "queueId", "queueOffset"} {
		ext := maps.Clone(captured)
		delete(ext, k)
		if err := new(SendMessageResponseHeader).Decode(ext); !errors.Is(err, remoting.ErrMissingField) || !strings.Contains(err.Error(), k) {
			t.Fatalf("without %s: %v", k, err)
		}
	}
	ext := maps.Clone(captured)
	ext["queueOffset"] = "0x10"
	if err := new(SendMessageResponseHeader).Decode(ext); !errors.Is(err, remoting.ErrBadHeader) {
		t.Fatalf("hex offset: %v", err)
	}
}

// TestSendSlots: the slots of the list decoding are the fields' names.
func TestSendSlots(t *testing.T) {
	fields := []sendField{fProducerGroup, fTopic, fDefaultTopic, fDefaultQueueNums, fQueueID, fSysFlag, fBornTimestamp,
		fFlag, fProperties, fReconsumeTimes, fUnitMode, fMaxReconsumeTimes, fBatch, fBrokerName}
	for i, f := range fields {
		if sendSlotLong(f.long) != i || sendSlotShort(f.short) != i || sendSlotLong(f.short) != -1 || sendSlotShort(f.long) != -1 {
			t.Errorf("%v: slots %d %d, want %d", f, sendSlotLong(f.long), sendSlotShort(f.short), i)
		}
	}
	if sendSlotShort("o") != -1 || sendSlotLong("") != -1 {
		t.Error("a key of no field has a slot")
	}
}
