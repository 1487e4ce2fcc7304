package broker

import (
	"maps"
	"testing"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// newSendResponse answers what NewResponse and protocol's Encode answer,
// on the wire too (both serialize types).
func TestSendResponseMatchesEncode(t *testing.T) {
	req := &remoting.Command{Code: remoting.SendMessageV2, Opaque: 42, Language: "GO", SerializeType: remoting.SerializeJSON}
	for _, h := range []protocol.SendMessageResponseHeader{
		{MsgID: "7F00000100002A9F0000000000000000", QueueID: 3, QueueOffset: 1 << 40, TransactionID: "AB", Region: defaultRegion, TraceOn: true},
		{MsgID: "a,b", QueueID: -1, QueueOffset: 0, TransactionID: "x,y"},
		{MsgID: "m", QueueID: 1, TransactionID: "u", Region: defaultRegion, TraceOn: true, RecallHandle: "djEgdCBiIDEgdQ=="},
		{MsgID: "d", QueueID: 2, QueueOffset: 7, TransactionID: "k", Region: defaultRegion, TraceOn: true, DedupWindowMs: 120000, Duplicate: true},
		{MsgID: "e", QueueID: 2, QueueOffset: 8, TransactionID: "k2", DedupWindowMs: 30000},
		{},
	} {
		got := newSendResponse(req, &h)
		want := remoting.NewResponse(req, remoting.Success, "")
		want.ExtFields = h.Encode()
		if got.ExtFields != nil || !maps.Equal(got.ExtMap(), want.ExtFields) || len(got.ExtList) != len(want.ExtFields) {
			t.Fatalf("header %+v: fields %v, want %v", h, got.ExtList, want.ExtFields)
		}
		if got.Code != want.Code || got.Opaque != want.Opaque || got.Flag != want.Flag ||
			got.Language != want.Language || got.Version != want.Version || got.Remark != want.Remark {
			t.Fatalf("response %+v, want %+v", got, want)
		}
		for _, typ := range []byte{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
			got.SerializeType, want.SerializeType = typ, typ
			gb, err := remoting.Encode(nil, got)
			if err != nil {
				t.Fatal(err)
			}
			wb, err := remoting.Encode(nil, want)
			if err != nil {
				t.Fatal(err)
			}
			gd, err1 := remoting.Decode(gb[4:])
			wd, err2 := remoting.Decode(wb[4:])
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if !maps.Equal(gd.ExtFields, wd.ExtFields) || gd.Code != wd.Code || gd.Opaque != wd.Opaque || gd.Flag != wd.Flag {
				t.Fatalf("type %d: decoded %+v, want %+v", typ, gd, wd)
			}
		}
	}
}
