package protocol

import (
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

func TestReplyMessageRequestHeaderRoundTrip(t *testing.T) {
	h := ReplyMessageRequestHeader{ProducerGroup: "pg", Topic: ReplyTopic("DefaultCluster"), DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: 0, SysFlag: 0, BornTimestamp: 1700000000000, Flag: 0,
		Properties: "CORRELATION_ID\x01c1\x02", ReconsumeTimes: 0, BornHost: "/127.0.0.1:1234",
		StoreHost: "/127.0.0.1:10911", StoreTimestamp: 1700000000001}
	req := h.Request([]byte("b"))
	if req.Code != remoting.PushReplyMessageToClient {
		t.Fatalf("code %d", req.Code)
	}
	var got ReplyMessageRequestHeader
	if err := got.Decode(req.ExtFields); err != nil || got != h {
		t.Fatalf("decode: %+v, %v; want %+v", got, err, h)
	}
	if h.Topic != "DefaultCluster_REPLY_TOPIC" {
		t.Fatalf("reply topic %q", h.Topic)
	}
	delete(req.ExtFields, "storeHost")
	if err := got.Decode(req.ExtFields); err == nil {
		t.Fatal("a header without storeHost decoded")
	}
}

func TestDecodeSendRequestHeaderReply(t *testing.T) {
	h := fullHeader()
	got, err := DecodeSendRequestHeader(remoting.SendReplyMessage, h.Encode())
	if err != nil || got != h {
		t.Fatalf("324: %+v, %v", got, err)
	}
	got, err = DecodeSendRequestHeader(remoting.SendReplyMessageV2, (*SendMessageRequestHeaderV2)(&h).Encode())
	if err != nil || got != h {
		t.Fatalf("325: %+v, %v", got, err)
	}
}

// FuzzReplyMessageRequestHeader: Decode never panics, and a header it
// accepts survives Encode and Decode unchanged.
func FuzzReplyMessageRequestHeader(f *testing.F) {
	h := ReplyMessageRequestHeader{ProducerGroup: "pg", Topic: "c_REPLY_TOPIC", DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, BornTimestamp: 1, Properties: "a\x01b\x02", BornHost: "/1.2.3.4:5", StoreHost: "/1.2.3.4:6"}
	fuzzHeader[ReplyMessageRequestHeader](f, h.Encode())
}
