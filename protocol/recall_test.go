package protocol

import (
	"encoding/base64"
	"errors"
	"maps"
	"strings"
	"testing"
)

// A handle built as Java's RecallMessageHandle.HandleV1.buildHandle builds
// it (URL-safe base64 with padding) decodes, and ours encodes to the same
// text.
func TestRecallHandleJavaForm(t *testing.T) {
	const java = "djEgb3JkZXJzIGJyb2tlci1hIDE4ODg4MjU2MDAwMDAgb3JpZ2luYWwtbWVzc2FnZQ=="
	want := RecallHandle{Topic: "orders", BrokerName: "broker-a", Timestamp: "1888825600000", MessageID: "original-message"}
	h, err := DecodeRecallHandle(java)
	if err != nil || h != want {
		t.Fatalf("decode: %+v %v", h, err)
	}
	if got := want.String(); got != java {
		t.Fatalf("encode: %s, want %s", got, java)
	}
	if h.TimestampMS() != 1888825600000 {
		t.Fatalf("timestamp %d", h.TimestampMS())
	}
	// Without padding too; extra items ignored, as Java.
	if h, err := DecodeRecallHandle(strings.TrimRight(java, "=")); err != nil || h != want {
		t.Fatalf("unpadded: %+v %v", h, err)
	}
	extra := base64.URLEncoding.EncodeToString([]byte("v1 orders broker-a 1888825600000 original-message more "))
	if h, err := DecodeRecallHandle(extra); err != nil || h != want {
		t.Fatalf("extra items: %+v %v", h, err)
	}
	if h := NewRecallHandle("t", "b", 41, "id"); h.Timestamp != "42" {
		t.Fatalf("NewRecallHandle wrote %s for due 41, want Java's due+1", h.Timestamp)
	}
	if (RecallHandle{Timestamp: "x"}).TimestampMS() != -1 {
		t.Fatal("a timestamp that is not a number reads as -1")
	}
}

func TestRecallHandleRefused(t *testing.T) {
	enc := func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }
	for _, s := range []string{
		"", "v1 a b c d", "!!!!", enc("v2 a b c d"), enc("v1 a b c"), enc("v1 a b c d")[1:],
		enc(""), enc("v1  b c d"), enc("v1 a  c d"), enc("v1 a b c  "), strings.Repeat("A", 5000),
	} {
		if h, err := DecodeRecallHandle(s); !errors.Is(err, ErrBadRecallHandle) {
			t.Errorf("%q: %+v %v, want ErrBadRecallHandle", s, h, err)
		}
	}
}

func TestRecallHeaders(t *testing.T) {
	h := RecallMessageRequestHeader{ProducerGroup: "pg", Topic: "t", RecallHandle: "x", BrokerName: "b"}
	req := h.Request()
	if !maps.Equal(req.ExtFields, map[string]string{"producerGroup": "pg", "topic": "t", "recallHandle": "x", "bname": "b"}) {
		t.Fatalf("fields %v", req.ExtFields)
	}
	var back RecallMessageRequestHeader
	if err := back.Decode(req.ExtFields); err != nil || back != h {
		t.Fatalf("decode: %+v %v", back, err)
	}
	if err := back.Decode(map[string]string{"topic": "t"}); err == nil {
		t.Fatal("a header without recallHandle decoded")
	}
	var rh RecallMessageResponseHeader
	if err := rh.Decode((&RecallMessageResponseHeader{MsgID: "m"}).Encode()); err != nil || rh.MsgID != "m" {
		t.Fatalf("response: %+v %v", rh, err)
	}
}

// FuzzDecodeRecallHandle: the decoder never panics, and what it accepts
// encodes back to a handle that decodes to the same.
func FuzzDecodeRecallHandle(f *testing.F) {
	f.Add("djEgb3JkZXJzIGJyb2tlci1hIDE4ODg4MjU2MDAwMDAgb3JpZ2luYWwtbWVzc2FnZQ==")
	f.Add("djEgYSBiIGMgZA")
	f.Add("")
	f.Add("====")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := DecodeRecallHandle(s)
		if err != nil {
			if !errors.Is(err, ErrBadRecallHandle) {
				t.Fatalf("%q: error %v does not wrap ErrBadRecallHandle", s, err)
			}
			return
		}
		if strings.Contains(h.Topic+h.BrokerName+h.Timestamp+h.MessageID, " ") {
			t.Fatalf("%q: an item holds a space: %+v", s, h)
		}
		again, err := DecodeRecallHandle(h.String())
		if err != nil || again != h {
			t.Fatalf("%q: %+v encodes to %q, which decodes to %+v %v", s, h, h.String(), again, err)
		}
	})
}
