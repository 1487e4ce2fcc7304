package grpcapi

import (
	"bytes"
	"compress/gzip"
	"net/netip"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/message"
)

func seedMessage() *v2pb.Message {
	tag, group := "TagA", "g1"
	return &v2pb.Message{
		Topic:          &v2pb.Resource{Name: "T"},
		UserProperties: map[string]string{"a": "b"},
		Body:           []byte("body"),
		SystemProperties: &v2pb.SystemProperties{
			Tag: &tag, Keys: []string{"k"}, MessageId: "01ABCDEF", MessageType: v2pb.MessageType_FIFO,
			MessageGroup: &group, BornTimestamp: timestamppb.Now(),
			DeliveryTimestamp: timestamppb.New(time.Unix(1700000000, 0)),
		},
	}
}

func TestConvertGzipBody(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(bytes.Repeat([]byte("x"), 1000))
	_ = zw.Close()
	m := seedMessage()
	m.Body = buf.Bytes()
	m.SystemProperties.BodyEncoding = v2pb.Encoding_GZIP
	out, err := convert(m, 4<<20)
	if err != nil || len(out.body) != 1000 {
		t.Fatalf("%v %d", err, len(out.body))
	}
	if _, err := convert(m, 999); err == nil || statusOfError(err).Code != v2pb.Code_MESSAGE_BODY_TOO_LARGE {
		t.Fatalf("inflated over the limit: %v", err)
	}
}

// FuzzConvert: a Message decoded from any bytes converts without a panic,
// and a converted one carries its id as UNIQ_KEY in properties that
// decode.
func FuzzConvert(f *testing.F) {
	seed, _ := proto.Marshal(seedMessage())
	f.Add(seed)
	txn := seedMessage()
	txn.SystemProperties.MessageType = v2pb.MessageType_TRANSACTION
	txn.SystemProperties.MessageGroup = nil
	txn.SystemProperties.DeliveryTimestamp = nil
	b, _ := proto.Marshal(txn)
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var m v2pb.Message
		if err := proto.Unmarshal(data, &m); err != nil {
			return
		}
		out, err := convert(&m, 1<<16)
		if err != nil {
			if statusOfError(err).Code == v2pb.Code_OK {
				t.Fatal("a refusal with status OK")
			}
			return
		}
		props, err := message.DecodeProperties([]byte(out.header.Properties))
		if err != nil {
			t.Fatalf("properties do not decode: %v", err)
		}
		if props[message.PropertyUniqKey] != m.GetSystemProperties().GetMessageId() || out.header.Topic == "" || len(out.body) == 0 {
			t.Fatalf("converted %+v from %v", out, &m)
		}
		if out.half != (out.header.SysFlag&message.SysFlagTransactionPrepared != 0) {
			t.Fatal("half message flag and sysflag disagree")
		}
	})
}

// FuzzParseTxnID: any string parses or is refused without a panic; what
// parses formats back to itself.
func FuzzParseTxnID(f *testing.F) {
	f.Add(formatTxnID(message.OffsetMsgID(netipAddr(), 4096), 7, ""))
	f.Add(formatTxnID(message.OffsetMsgID(netipAddr(), 4096), 7, "broker-a"))
	f.Add("")
	f.Add("-1")
	f.Add("AB-")
	f.Fuzz(func(t *testing.T, id string) {
		tx, err := parseTxnID(id)
		if err != nil {
			return
		}
		if tx.commitLogOffset < 0 || tx.queueOffset < 0 {
			t.Fatalf("negative offsets from %q: %+v", id, tx)
		}
	})
}

func netipAddr() netip.AddrPort { return netip.MustParseAddrPort("127.0.0.1:10911") }
