package client

import (
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// TestSendRequestFrames checks that a recycled send request encodes to a
// frame that decodes to the command protocol's headers build, for single
// messages, replies and batches, and after the request was signed (its
// fields moved to a map with a signature's).
func TestSendRequestFrames(t *testing.T) {
	h := protocol.SendMessageRequestHeader{
		ProducerGroup: "pg", Topic: "T", DefaultTopic: protocol.DefaultTopic, DefaultTopicQueueNums: 4,
		SysFlag: message.SysFlagCompressed, BornTimestamp: 1764662400123, Flag: 7,
		Properties: "TAGS\x01a\x02UNIQ_KEY\x01X\x02", ReconsumeTimes: 2, UnitMode: true, MaxReconsumeTimes: 16,
	}
	q := Queue{Topic: "T", BrokerName: "broker-b", QueueID: 3}
	body := []byte("body")
	want := func(o *outgoing) *remoting.Command {
		w := o.header
		w.QueueID, w.BrokerName = q.QueueID, q.BrokerName
		switch {
		case o.batch:
			return (*protocol.SendMessageRequestHeaderV2)(&w).Request(o.body)
		case o.reply:
			return remoting.NewRequest(remoting.SendReplyMessage, w.Encode(), o.body)
		}
		return w.Request(o.body)
	}
	batch := h
	batch.Batch = true
	for _, o := range []*outgoing{
		{header: h, body: body},
		{header: h, body: body, reply: true},
		{header: batch, body: body, batch: true},
		{header: h, body: body},
	} {
		for range 2 {
			r := o.request(q)
			if got := r.cmd.ExtMap(); !maps.Equal(got, want(o).ExtFields) {
				t.Fatalf("ext fields %v, protocol's %v", got, want(o).ExtFields)
			}
			frame, err := remoting.Encode(nil, &r.cmd)
			if err != nil {
				t.Fatal(err)
			}
			got, err := remoting.Decode(frame[4:])
			if err != nil {
				t.Fatal(err)
			}
			// The header travels in RocketMQ's binary form.
			if frame[4] != remoting.SerializeRocketMQ {
				t.Fatalf("serialize type %d, want %d", frame[4], remoting.SerializeRocketMQ)
			}
			w := want(o)
			w.SerializeType = remoting.SerializeRocketMQ
			exp, err := remoting.Encode(nil, w)
			if err != nil {
				t.Fatal(err)
			}
			wantCmd, err := remoting.Decode(exp[4:])
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, wantCmd) {
				t.Fatalf("frame decodes to\n%v\nprotocol's to\n%v", got, wantCmd)
			}
			r.cmd.ExtFields = r.cmd.ExtMap() // as signing leaves it
			r.cmd.ExtFields["AccessKey"], r.cmd.ExtFields["Signature"] = "ak", "sig"
			r.cmd.ExtList = nil
			r.release()
		}
	}
}

// TestSystemProperties checks the direct encoding of a message without
// user properties against the map's, and that every message it cannot
// encode goes to the map's checks.
func TestSystemProperties(t *testing.T) {
	const uniq = "7F00000100002A9F0000000000000001"
	for _, m := range []*Message{
		{},
		{Tag: "TagA"},
		{Keys: []string{"k1"}},
		{Keys: []string{"k1", "k2", ""}},
		{Keys: []string{""}},
		{ShardingKey: "order-1"},
		{DelayLevel: 3},
		{DelayLevel: 18, Tag: "t", Keys: []string{"a", "b"}, ShardingKey: "s"},
		{Tag: "ünïcode \"quoted\""},
	} {
		got, ok := m.systemProperties(uniq)
		if !ok {
			t.Fatalf("%+v: not encoded directly", m)
		}
		props, err := m.properties(uniq, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := string(message.EncodeProperties(props)); got != want {
			t.Fatalf("%+v: %q, the map's %q", m, got, want)
		}
	}
	for _, m := range []*Message{
		{Properties: map[string]string{"a": "b"}},
		{DelayLevel: -1},
		{Tag: "a\x01b"},
		{Keys: []string{"ok", "a\x02"}},
		{ShardingKey: "\x01"},
		{Tag: strings.Repeat("t", message.MaxPropertiesLength)},
	} {
		if p, ok := m.systemProperties(uniq); ok {
			t.Fatalf("%+v: encoded directly as %q", m, p)
		}
	}
}
