package protocol

import (
	"encoding/binary"
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

// benchSendV2Header is a SEND_MESSAGE_V2 header as rocketmq-client-go
// writes it.
const benchSendV2Header = `{"code":310,"language":"GO","version":317,"opaque":4711,"flag":0,"remark":"","extFields":{"a":"bench-producer","b":"RH","c":"TBW102","d":"4","e":"3","f":"0","g":"1795975709351","h":"0","i":"UNIQ_KEY\u0001C00002024A2200000000941699480001\u0002WAIT\u0001true\u0002","j":"0","k":"false","l":"0","m":"false","n":"broker-a"}}`

// BenchmarkSendV2Request is what the broker spends on a send request's
// header: decoding the frame and then the send header.
func BenchmarkSendV2Request(b *testing.B) {
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(benchSendV2Header)))
	frame = append(frame, benchSendV2Header...)
	frame = append(frame, make([]byte, 1024)...)
	b.ReportAllocs()
	for b.Loop() {
		req, err := remoting.Decode(frame)
		if err != nil {
			b.Fatal(err)
		}
		h, err := DecodeSendRequestHeader(req.Code, req.ExtFields)
		if err != nil || h.QueueID != 3 {
			b.Fatal(h, err)
		}
	}
}

// BenchmarkSendResponse is the answer to a send: the header, the response
// and its frame.
func BenchmarkSendResponse(b *testing.B) {
	req := &remoting.Command{Code: remoting.SendMessageV2, Opaque: 4711}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		h := SendMessageResponseHeader{
			MsgID:         "7F00000100002A9F0000000000001F40",
			QueueID:       3,
			QueueOffset:   123456,
			TransactionID: "C00002024A2200000000941699480001",
			TraceOn:       true,
		}
		resp := h.Response(req, remoting.Success)
		var err error
		if buf, err = remoting.Encode(buf[:0], resp); err != nil {
			b.Fatal(err)
		}
	}
}
