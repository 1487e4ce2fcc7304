package remoting

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
)

// benchSend is a SEND_MESSAGE request as the Go client sends it, with a
// 1 KiB body.
func benchSend(b *testing.B) *Command {
	c, err := Decode(jsonFrame(capturedSend, bytes.Repeat([]byte("m"), 1024)))
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func BenchmarkEncodeJSON(b *testing.B) {
	c := benchSend(b)
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = Encode(buf[:0], c); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkDecodeJSON(b *testing.B) {
	frame, err := Encode(nil, benchSend(b))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(frame[4:]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeBinary(b *testing.B) {
	c := benchSend(b)
	c.SerializeType = SerializeRocketMQ
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = Encode(buf[:0], c); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkDecodeBinary(b *testing.B) {
	c := benchSend(b)
	c.SerializeType = SerializeRocketMQ
	frame, err := Encode(nil, c)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(frame[4:]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundTripLoopback measures one caller doing request/response
// against an echo handler over loopback TCP: the latency path.
func BenchmarkRoundTripLoopback(b *testing.B) {
	s := startServer(b, ServerConfig{}, func(s *Server) { s.Handle(SendMessage, "", echo) })
	c := newClient(b, ClientConfig{})
	addr := s.Addr().String()
	req := benchSend(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Invoke(ctx, addr, req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkRoundTripLoopbackParallel measures many callers sharing one
// connection: the throughput path, where writes combine into fewer
// syscalls.
func BenchmarkRoundTripLoopbackParallel(b *testing.B) {
	for _, perCPU := range []int{16, 64} {
		b.Run(fmt.Sprintf("callers=%d", perCPU*runtime.GOMAXPROCS(0)), func(b *testing.B) {
			s := startServer(b, ServerConfig{Pools: map[string]PoolConfig{DefaultPool: {Workers: 16, QueueSize: 4096}}},
				func(s *Server) { s.Handle(SendMessage, "", echo) })
			c := newClient(b, ClientConfig{})
			addr := s.Addr().String()
			req := benchSend(b)
			ctx := context.Background()
			b.SetParallelism(perCPU)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Invoke(ctx, addr, req); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

// BenchmarkDecodeManyExtFields decodes the costliest header the default
// limits accept (DefaultMaxExtFields one-byte fields) and one they refuse
// (100 000 fields, the shape of the 1.2 M-field attack): alloc-B/hdr-B is
// what decoding costs per header byte.
func BenchmarkDecodeManyExtFields(b *testing.B) {
	for _, n := range []int{DefaultMaxExtFields, 100_000} {
		frame := jsonFrame(string(hugeExtHeader(n)), nil)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Decode(frame)
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(len(frame)), "alloc-B/hdr-B")
		})
	}
}

// capturedSendV2 is a SEND_MESSAGE_V2 header in the shape
// rocketmq-client-go writes it: code 310, the one-letter ext names of
// SendMessageRequestHeaderV2, every value a string, the properties with
// their \u0001 and \u0002 separators escaped.
const capturedSendV2 = `{"code":310,"language":"GO","version":317,"opaque":4711,"flag":0,"remark":"","extFields":{"a":"bench-producer","b":"RH","c":"TBW102","d":"4","e":"3","f":"0","g":"1795975709351","h":"0","i":"UNIQ_KEY\u0001C00002024A2200000000941699480001\u0002WAIT\u0001true\u0002","j":"0","k":"false","l":"0","m":"false","n":"broker-a"}}`

// goClientCommand is the struct rocketmq-client-go unmarshals a header
// into with encoding/json: the reference the hand-written decoder is
// measured against.
type goClientCommand struct {
	Code      int32             `json:"code"`
	Language  string            `json:"language"`
	Version   int16             `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int32             `json:"flag"`
	Remark    string            `json:"remark"`
	ExtFields map[string]string `json:"extFields"`
}

// BenchmarkDecodeSendV2 decodes a SEND_MESSAGE_V2 frame with a 1 KiB body:
// the header decoder of this package against encoding/json on the same
// header bytes.
func BenchmarkDecodeSendV2(b *testing.B) {
	frame := jsonFrame(capturedSendV2, bytes.Repeat([]byte("m"), 1024))
	b.Run("remoting", func(b *testing.B) {
		b.SetBytes(int64(len(frame)))
		b.ReportAllocs()
		for b.Loop() {
			c, err := Decode(frame)
			if err != nil || len(c.ExtFields) != 14 {
				b.Fatal(c, err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		header := []byte(capturedSendV2)
		b.SetBytes(int64(len(frame)))
		b.ReportAllocs()
		for b.Loop() {
			var c goClientCommand
			if err := json.Unmarshal(header, &c); err != nil || len(c.ExtFields) != 14 {
				b.Fatal(c, err)
			}
		}
	})
}

// BenchmarkEncodeSendResponse encodes the answer to a send as the broker
// builds it: a JSON response with the five ext fields of
// SendMessageResponseHeader and no body.
func BenchmarkEncodeSendResponse(b *testing.B) {
	req := &Command{Code: SendMessageV2, Opaque: 4711}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		resp := NewResponse(req, Success, "")
		resp.ExtFields = map[string]string{
			"msgId":         "7F00000100002A9F0000000000001F40",
			"queueId":       "3",
			"queueOffset":   "123456",
			"transactionId": "C00002024A2200000000941699480001",
			"TRACE_ON":      "true",
		}
		var err error
		if buf, err = appendFrame(buf[:0], resp, resp.SerializeType, req.Opaque, FlagResponse); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}
