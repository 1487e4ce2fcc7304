package remoting

import (
	"bytes"
	"context"
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
