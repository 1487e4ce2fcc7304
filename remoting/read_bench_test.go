package remoting

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// streamConn is a connection whose peer sends the same frames over and
// over: each Read returns what a socket would, as much of the endless
// stream as fits.
type streamConn struct {
	net.Conn
	stream []byte
	at     int
}

func (s *streamConn) Read(p []byte) (int, error) {
	n := copy(p, s.stream[s.at:])
	s.at = (s.at + n) % len(s.stream)
	return n, nil
}

func (s *streamConn) SetReadDeadline(time.Time) error { return nil }
func (s *streamConn) RemoteAddr() net.Addr            { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (s *streamConn) Close() error                    { return nil }

// prefixed returns frame with its length prefix.
func prefixed(frame []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)
}

// benchReadSends reads send requests as a broker's server connection
// does (a read budget, the sends' fields listed) from a peer that keeps
// sending header with a 1 KiB body.
func benchReadSends(b *testing.B, header string, code int32) {
	benchReadFrames(b, jsonFrame(header, bytes.Repeat([]byte("m"), 1024)), code)
}

// binaryFrame is the frame of header's command and body with its header
// in RocketMQ's binary form (SerializeRocketMQ).
func binaryFrame(b *testing.B, header string, body []byte) []byte {
	c, err := Decode(jsonFrame(header, body))
	if err != nil {
		b.Fatal(err)
	}
	c.SerializeType = SerializeRocketMQ
	frame, err := Encode(nil, c)
	if err != nil {
		b.Fatal(err)
	}
	return frame[4:] // without its length prefix
}

// benchReadFrames is benchReadSends for a frame given whole.
func benchReadFrames(b *testing.B, frame []byte, code int32) {
	frame = prefixed(frame)
	var stream []byte
	for len(stream) < 256<<10 {
		stream = append(stream, frame...)
	}
	c := newConn(&streamConn{stream: stream}, connConfig{
		maxFrame:     DefaultMaxFrameSize,
		idleTimeout:  time.Minute,
		logger:       hclog.NewNullLogger(),
		listCodes:    []int32{SendMessage, SendMessageV2, SendBatchMessage},
		budget:       newBudget(256<<20, 32<<20, 64<<20),
		frameTimeout: 10 * time.Second,
		minRate:      512 << 10,
	})
	br := bufio.NewReaderSize(c.nc, 32<<10)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		cmd, held, err := c.readCommand(br)
		if err != nil || cmd.Code != code || len(cmd.ExtList) != 14 || len(cmd.Body) != 1024 {
			b.Fatal(cmd, err)
		}
		c.release(held)
	}
}

// BenchmarkServerReadSend is a server connection's read of a send
// request: the length prefix, the budget, the frame's bytes and its
// decoding, for SEND_MESSAGE_V2 (the Go client's sends) and SEND_MESSAGE
// (its long field names), and SEND_MESSAGE with its header in RocketMQ's
// binary form (ledgermq's own client).
func BenchmarkServerReadSend(b *testing.B) {
	b.Run("v2", func(b *testing.B) { benchReadSends(b, capturedSendV2, SendMessageV2) })
	b.Run("v1", func(b *testing.B) { benchReadSends(b, capturedSend, SendMessage) })
	b.Run("v1-binary", func(b *testing.B) {
		benchReadFrames(b, binaryFrame(b, capturedSend, bytes.Repeat([]byte("m"), 1024)), SendMessage)
	})
}

// BenchmarkDecodeSendV1 decodes a SEND_MESSAGE frame with a 1 KiB body.
func BenchmarkDecodeSendV1(b *testing.B) {
	frame := jsonFrame(capturedSend, bytes.Repeat([]byte("m"), 1024))
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		c, err := Decode(frame)
		if err != nil || len(c.ExtFields) != 14 {
			b.Fatal(c, err)
		}
	}
}

// BenchmarkEncodeSendResponseList encodes the answer to a send as the
// broker builds it: its six fields in ExtList.
func BenchmarkEncodeSendResponseList(b *testing.B) {
	req := &Command{Code: SendMessageV2, Opaque: 4711}
	resp := NewResponse(req, Success, "")
	resp.ExtList = []ExtField{
		{"msgId", "7F00000100002A9F0000000000001F40"},
		{"queueId", "3"},
		{"queueOffset", "123456"},
		{"transactionId", "C00002024A2200000000941699480001"},
		{"TRACE_ON", "true"},
		{"MSG_REGION", "DefaultRegion"},
	}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = appendFrame(buf[:0], resp, resp.SerializeType, req.Opaque, FlagResponse); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkJSONHeaderParse parses send headers into a list, without the
// map or the command Decode builds: the parser alone.
func BenchmarkJSONHeaderParse(b *testing.B) {
	for _, h := range []struct{ name, header string }{{"v2", capturedSendV2}, {"v1", capturedSend}} {
		b.Run(h.name, func(b *testing.B) {
			header := []byte(h.header)
			var small [24]ExtField
			b.SetBytes(int64(len(header)))
			b.ReportAllocs()
			for b.Loop() {
				var c Command
				pairs, err := decodeJSONHeader(header, &c, DefaultHeaderLimits, small[:0])
				if err != nil || len(pairs) != 14 {
					b.Fatal(err)
				}
			}
		})
	}
}
