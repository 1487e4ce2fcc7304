package protocol

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

// popFrame decodes a JSON header as the broker's remoting port does.
func popFrame(t *testing.T, header string) *remoting.Command {
	t.Helper()
	f := binary.BigEndian.AppendUint32(nil, uint32(len(header)))
	c, err := remoting.Decode(append(f, header...))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A POP_MESSAGE header as fastjson reads it: numbers as JSON numbers or
// strings, booleans as JSON booleans, unknown fields ignored, the code
// above int16.
func TestPopMessageHeaderLenient(t *testing.T) {
	c := popFrame(t, `{"code":200050,"language":"JAVA","version":479,"opaque":3,"flag":0,"serializeTypeCurrentRPC":"JSON",`+
		`"extFields":{"consumerGroup":"g","topic":"T","queueId":-1,"maxMsgNums":"32","invisibleTime":60000,`+
		`"pollTime":"15000","bornTime":1700000000000,"initMode":0,"order":true,"expType":"TAG","exp":"a || b",`+
		`"attemptId":"x-1","someFutureField":{"n":[1,2]}}}`)
	if c.Code != remoting.PopMessage {
		t.Fatalf("code %d", c.Code)
	}
	var h PopMessageRequestHeader
	if err := h.Decode(c.ExtFields); err != nil {
		t.Fatal(err)
	}
	want := PopMessageRequestHeader{ConsumerGroup: "g", Topic: "T", QueueID: -1, MaxMsgNums: 32, InvisibleTime: 60000,
		PollTime: 15000, BornTime: 1700000000000, InitMode: 0, ExpType: "TAG", Exp: "a || b", Order: true, AttemptID: "x-1"}
	if h != want {
		t.Fatalf("got %+v\nwant %+v", h, want)
	}
	var again PopMessageRequestHeader
	if err := again.Decode(h.Request().ExtFields); err != nil || again != h {
		t.Fatalf("round trip: %+v %v", again, err)
	}
}

func TestPopHeadersRefused(t *testing.T) {
	full := map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "0", "maxMsgNums": "1", "invisibleTime": "1",
		"pollTime": "0", "bornTime": "0", "initMode": "0"}
	for _, k := range []string{"consumerGroup", "topic", "queueId", "maxMsgNums", "invisibleTime", "pollTime", "bornTime", "initMode"} {
		m := clone(full)
		delete(m, k)
		var h PopMessageRequestHeader
		if err := h.Decode(m); !errors.Is(err, remoting.ErrMissingField) {
			t.Errorf("without %s: %v", k, err)
		}
	}
	for k, v := range map[string]string{"queueId": "x", "invisibleTime": "1.5", "topic": "", "maxMsgNums": "4294967296"} {
		m := clone(full)
		m[k] = v
		var h PopMessageRequestHeader
		if err := h.Decode(m); !errors.Is(err, remoting.ErrBadHeader) {
			t.Errorf("%s=%q: %v", k, v, err)
		}
	}
	var a AckMessageRequestHeader
	if err := a.Decode(map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "1", "offset": "2"}); !errors.Is(err, remoting.ErrMissingField) {
		t.Errorf("ack without extraInfo: %v", err)
	}
	var ch ChangeInvisibleTimeRequestHeader
	if err := ch.Decode(map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "1", "offset": "2", "extraInfo": "e"}); !errors.Is(err, remoting.ErrMissingField) {
		t.Errorf("change without invisibleTime: %v", err)
	}
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestAckAndChangeHeaders(t *testing.T) {
	c := popFrame(t, `{"code":200053,"extFields":{"consumerGroup":"g","topic":"T","queueId":3,"offset":"17",`+
		`"extraInfo":"5 1700000000000 30000 0 0 broker-a 3 17","invisibleTime":"10000","lo":null}}`)
	var h ChangeInvisibleTimeRequestHeader
	if err := h.Decode(c.ExtFields); err != nil {
		t.Fatal(err)
	}
	if h.QueueID != 3 || h.Offset != 17 || h.InvisibleTime != 10000 || h.ConsumerGroup != "g" {
		t.Fatalf("%+v", h)
	}
	x, err := ParseExtraInfo(h.ExtraInfo)
	want := ExtraInfo{StartOffset: 5, PopTime: 1700000000000, InvisibleTime: 30000, Retry: "0", BrokerName: "broker-a", QueueID: 3, QueueOffset: 17}
	if err != nil || x != want || x.String() != h.ExtraInfo {
		t.Fatalf("%+v %v", x, err)
	}
	var again ChangeInvisibleTimeRequestHeader
	if err := again.Decode(h.Request().ExtFields); err != nil || again != h {
		t.Fatalf("round trip %+v %v", again, err)
	}
	var a AckMessageRequestHeader
	if err := a.Decode(h.AckMessageRequestHeader.Request().ExtFields); err != nil || a != h.AckMessageRequestHeader {
		t.Fatalf("ack round trip %+v %v", a, err)
	}
	// The 7-field form of older clients.
	if x, err := ParseExtraInfo("5 1 2 3 1 b 0"); err != nil || x.QueueOffset != -1 || x.Retry != "1" || x.String() != "5 1 2 3 1 b 0" {
		t.Fatalf("7 fields: %+v %v", x, err)
	}
	for _, bad := range []string{"", "1 2 3", "a 1 2 3 0 b 0 1", "1 2 3 4 0 b 0 1 9", "1 2 3 4  b 0 1", strings.Repeat("1", 600)} {
		if _, err := ParseExtraInfo(bad); !errors.Is(err, remoting.ErrBadHeader) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestPopResponseHeaders(t *testing.T) {
	rh := PopMessageResponseHeader{PopTime: 10, InvisibleTime: 20, ReviveQid: 999, RestNum: 3,
		StartOffsetInfo: JoinPopQueueInfo([]PopQueueInfo{{"0", 1, "5"}, {"0", 2, "7"}}), MsgOffsetInfo: "0 1 5,6;0 2 7"}
	if rh.StartOffsetInfo != "0 1 5;0 2 7" {
		t.Fatal(rh.StartOffsetInfo)
	}
	var got PopMessageResponseHeader
	if err := got.Decode(rh.Encode()); err != nil || got != rh {
		t.Fatalf("%+v %v", got, err)
	}
	if err := got.Decode(map[string]string{"popTime": "1", "invisibleTime": "2", "reviveQid": "3"}); !errors.Is(err, remoting.ErrMissingField) {
		t.Fatalf("without restNum: %v", err)
	}
	ch := ChangeInvisibleTimeResponseHeader{PopTime: 1, InvisibleTime: 2, ReviveQid: 3}
	var cg ChangeInvisibleTimeResponseHeader
	if err := cg.Decode(ch.Encode()); err != nil || cg != ch {
		t.Fatalf("%+v %v", cg, err)
	}
}

// fuzzPopDecoder runs decode on the ext fields data spells (key\0value\0…):
// it never panics, and what it accepts re-decodes from its own encoding
// to the same value.
func fuzzPopDecoder[H comparable](f *testing.F, seeds []map[string]string, decode func(*H, map[string]string) error, encode func(*H) map[string]string) {
	for _, s := range seeds {
		f.Add(extBytes(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := map[string]string{}
		parts := strings.Split(string(data), "\x00")
		for i := 0; i+1 < len(parts); i += 2 {
			m[parts[i]] = parts[i+1]
		}
		var h H
		if decode(&h, m) != nil {
			return
		}
		var again H
		if err := decode(&again, encode(&h)); err != nil || again != h {
			t.Fatalf("round trip: %+v %v, want %+v", again, err, h)
		}
	})
}

func FuzzPopMessageRequestHeader(f *testing.F) {
	h := PopMessageRequestHeader{ConsumerGroup: "g", Topic: "T", QueueID: -1, MaxMsgNums: 32, InvisibleTime: 60000, Exp: "*", Order: true}
	fuzzPopDecoder(f, []map[string]string{h.Encode(), {"consumerGroup": "g", "order": "TRUE"}},
		(*PopMessageRequestHeader).Decode, (*PopMessageRequestHeader).Encode)
}

func FuzzPopMessageResponseHeader(f *testing.F) {
	h := PopMessageResponseHeader{PopTime: 1, InvisibleTime: 2, ReviveQid: 3, RestNum: 4, StartOffsetInfo: "0 1 2", MsgOffsetInfo: "0 1 2,3"}
	fuzzPopDecoder(f, []map[string]string{h.Encode()}, (*PopMessageResponseHeader).Decode, (*PopMessageResponseHeader).Encode)
}

func FuzzAckMessageRequestHeader(f *testing.F) {
	h := AckMessageRequestHeader{ConsumerGroup: "g", Topic: "T", QueueID: 1, ExtraInfo: "0 1 2 0 0 b 1 5", Offset: 5}
	fuzzPopDecoder(f, []map[string]string{h.Encode()}, (*AckMessageRequestHeader).Decode, (*AckMessageRequestHeader).Encode)
}

func FuzzChangeInvisibleTimeRequestHeader(f *testing.F) {
	h := ChangeInvisibleTimeRequestHeader{AckMessageRequestHeader: AckMessageRequestHeader{ConsumerGroup: "g", Topic: "T", ExtraInfo: "e"}, InvisibleTime: 9}
	fuzzPopDecoder(f, []map[string]string{h.Encode()}, (*ChangeInvisibleTimeRequestHeader).Decode, (*ChangeInvisibleTimeRequestHeader).Encode)
}

func FuzzChangeInvisibleTimeResponseHeader(f *testing.F) {
	h := ChangeInvisibleTimeResponseHeader{PopTime: 1, InvisibleTime: 2, ReviveQid: 999}
	fuzzPopDecoder(f, []map[string]string{h.Encode()}, (*ChangeInvisibleTimeResponseHeader).Decode, (*ChangeInvisibleTimeResponseHeader).Encode)
}

// FuzzParseExtraInfo: no input makes it panic, and what it accepts prints
// back to the same ExtraInfo.
func FuzzParseExtraInfo(f *testing.F) {
	for _, s := range []string{"5 1700000000000 30000 0 0 broker-a 3 17", "5 1 2 3 1 b 0", "", "1 2 3 4 0 b 0 -1", "-0 +1 2 3 x y 4 5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		x, err := ParseExtraInfo(s)
		if err != nil {
			return
		}
		again, err := ParseExtraInfo(x.String())
		if err != nil || again != x {
			t.Fatalf("%q: %+v, printed %q, again %+v %v", s, x, x.String(), again, err)
		}
	})
}
