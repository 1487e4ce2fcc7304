package client

import (
	"context"
	"sync"
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

// BenchmarkPrepareRequest is a send's client-side encoding: validating
// and encoding a 1 KiB message (properties, UNIQ_KEY) and building its
// attempt's request, then encoding that request's frame header.
func BenchmarkPrepareRequest(b *testing.B) {
	p, err := NewProducer(WithNameServers("127.0.0.1:1"), WithCompression(0, 0))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	m := &Message{Topic: "BenchTopic", Body: make([]byte, 1024)}
	q := Queue{Topic: "BenchTopic", BrokerName: "broker-a", QueueID: 3}
	var frame []byte
	b.ReportAllocs()
	for b.Loop() {
		out, err := p.prepare(m)
		if err != nil {
			b.Fatal(err)
		}
		req := out.request(q)
		frame, err = remoting.Encode(frame[:0], &req.cmd)
		if err != nil {
			b.Fatal(err)
		}
		req.release()
	}
	_ = frame
}

// BenchmarkSend is Send end to end over loopback to a fake broker in the
// same process (so its figures include the broker side's), 64 sends in
// flight.
func BenchmarkSend(b *testing.B) {
	f := startFake(b, "broker-a")
	p := newProducer(b, WithNameServers(f.nsAddr()), WithCompression(0, 0))
	ctx := context.Background()
	m := &Message{Topic: "BenchTopic", Body: make([]byte, 1024)}
	if _, err := p.Send(ctx, m); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		m := &Message{Topic: "BenchTopic", Body: make([]byte, 1024)}
		for pb.Next() {
			if _, err := p.Send(ctx, m); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkSendFunc is BenchmarkSend through SendFunc: 64 sends kept in
// flight by their own callbacks, none waited for by a goroutine.
func BenchmarkSendFunc(b *testing.B) {
	f := startFake(b, "broker-a")
	p := newProducer(b, WithNameServers(f.nsAddr()), WithCompression(0, 0))
	ctx := context.Background()
	if _, err := p.Send(ctx, &Message{Topic: "BenchTopic", Body: make([]byte, 1024)}); err != nil {
		b.Fatal(err)
	}
	const inflight = 64
	left := int64(b.N)
	var mu sync.Mutex
	var slots sync.WaitGroup
	var send func(m *Message)
	send = func(m *Message) {
		mu.Lock()
		left--
		more := left >= 0
		mu.Unlock()
		if !more {
			slots.Done()
			return
		}
		if err := p.SendFunc(ctx, m, func(_ SendResult, err error) {
			if err != nil {
				b.Error(err)
			}
			send(m)
		}); err != nil {
			b.Error(err)
			slots.Done()
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range inflight {
		slots.Add(1)
		send(&Message{Topic: "BenchTopic", Body: make([]byte, 1024)})
	}
	slots.Wait()
}
