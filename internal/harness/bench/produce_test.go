package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/client"
)

// fakeSender stores messages in memory; every fifth send of a failing
// sender fails, every seventh has an unknown outcome that was stored.
type fakeSender struct {
	mu      sync.Mutex
	stored  map[string][]string // offset msgId -> key, key -> copies via byKey
	byKey   map[string]int
	n       atomic.Int64
	failing bool
	closed  atomic.Bool
}

func newFakeSender(failing bool) *fakeSender {
	return &fakeSender{stored: map[string][]string{}, byKey: map[string]int{}, failing: failing}
}

func (f *fakeSender) Send(_ context.Context, m *client.Message) (client.SendResult, error) {
	i := f.n.Add(1)
	if _, _, ok := DecodeHeader(m.Body); !ok {
		return client.SendResult{}, errors.New("no bench header")
	}
	key := ""
	if len(m.Keys) > 0 {
		key = m.Keys[0]
	}
	switch {
	case f.failing && i%5 == 0:
		return client.SendResult{}, fmt.Errorf("refused: %w", client.ErrSendFailed)
	case f.failing && i%7 == 0:
		f.put(key)
		return client.SendResult{}, fmt.Errorf("timed out: %w", client.ErrUnknownOutcome)
	}
	id := f.put(key)
	return client.SendResult{OffsetMsgID: id, Queue: client.Queue{Topic: m.Topic, BrokerName: "broker-a"}}, nil
}

func (f *fakeSender) put(key string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := fmt.Sprintf("off-%d", len(f.stored))
	f.stored[id] = []string{key}
	f.byKey[key]++
	return id
}

func (f *fakeSender) Close() error { f.closed.Store(true); return nil }

func (f *fakeSender) ByOffset(_ context.Context, broker, id string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k, ok := f.stored[id]
	if !ok || broker != "broker-a" {
		return "", errors.New("not found")
	}
	return k[0], nil
}

func (f *fakeSender) CountByKey(_ context.Context, _, key string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byKey[key], nil
}

func TestProduceCount(t *testing.T) {
	f := newFakeSender(true)
	var intervals atomic.Int64
	res, err := Produce(context.Background(), ProduceConfig{
		Topic: "T", Producers: 3, Inflight: 4, Size: 64, Count: 1000, Keep: true, RunID: "r1",
		NewSender: func(int) (Sender, error) { return f, nil },
		Report:    func(Interval) { intervals.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Sent != 1000 || s.Failed != 200 || s.Acked+s.Unknown != 800 || s.Unknown == 0 {
		t.Fatalf("summary %+v", s)
	}
	if !f.closed.Load() {
		t.Fatal("senders not closed")
	}
	if len(res.Sent) != 1000 {
		t.Fatalf("kept %d sends", len(res.Sent))
	}
	keys := map[string]bool{}
	for _, k := range res.Sent {
		keys[k.Key] = true
	}
	if len(keys) != 1000 {
		t.Fatalf("%d distinct keys", len(keys))
	}
	v := Verify(context.Background(), "T", res.Sent, f)
	if v.Lost != 0 || v.Duplicates != 0 || v.UnknownStored != s.Unknown || v.FailedStored != 0 || len(v.Errors) != 0 {
		t.Fatalf("verification %+v (unknown %d)", v, s.Unknown)
	}
	// A lost message and a duplicate are found.
	f.mu.Lock()
	for _, k := range res.Sent {
		if k.Outcome == OK {
			delete(f.stored, k.OffsetMsgID)
			break
		}
	}
	for _, k := range res.Sent {
		if k.Outcome == Unknown {
			f.byKey[k.Key] = 3
			break
		}
	}
	for _, k := range res.Sent {
		if k.Outcome == Failed {
			f.byKey[k.Key] = 1
			break
		}
	}
	f.mu.Unlock()
	v = Verify(context.Background(), "T", res.Sent, f)
	if v.Lost != 1 || v.Duplicates != 2 || v.FailedStored != 1 || len(v.Errors) != 1 {
		t.Fatalf("after damage: %+v", v)
	}
}

func TestProduceOpenLoop(t *testing.T) {
	f := newFakeSender(false)
	start := time.Now()
	res, err := Produce(context.Background(), ProduceConfig{
		Topic: "T", Producers: 1, Inflight: 2, Size: HeaderLen, Count: 50, Rate: 1000,
		NewSender: func(int) (Sender, error) { return f, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	// Send 49 was due 49 ms after the start: the run cannot end before.
	if res.Summary.Acked != 50 || time.Since(start) < 49*time.Millisecond {
		t.Fatalf("open loop: %+v after %v", res.Summary, time.Since(start))
	}
}

func TestProduceDurationAndErrors(t *testing.T) {
	f := newFakeSender(false)
	res, err := Produce(context.Background(), ProduceConfig{
		Topic: "T", Producers: 2, Inflight: 2, Size: 100, Duration: 20 * time.Millisecond,
		NewSender: func(int) (Sender, error) { return f, nil },
	})
	if err != nil || res.Summary.Acked == 0 || res.Summary.Acked != res.Summary.Sent {
		t.Fatalf("duration run: %+v %v", res.Summary, err)
	}
	for _, bad := range []ProduceConfig{
		{Producers: 1, Inflight: 1, Size: 64, Count: 1},
		{Topic: "T", Inflight: 1, Size: 64, Count: 1},
		{Topic: "T", Producers: 1, Inflight: 1, Size: 8, Count: 1},
		{Topic: "T", Producers: 1, Inflight: 1, Size: 64},
		{Topic: "T", Producers: 1, Inflight: 1, Size: 64, Count: 1, Rate: -1},
	} {
		bad.NewSender = func(int) (Sender, error) { return f, nil }
		if _, err := Produce(context.Background(), bad); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
	boom := errors.New("boom")
	if _, err := Produce(context.Background(), ProduceConfig{Topic: "T", Producers: 1, Inflight: 1, Size: 64, Count: 1,
		NewSender: func(int) (Sender, error) { return nil, boom }}); !errors.Is(err, boom) {
		t.Fatalf("sender error: %v", err)
	}
}

func TestHeader(t *testing.T) {
	b := make([]byte, HeaderLen)
	EncodeHeader(b, 7, 1<<40)
	if p, s, ok := DecodeHeader(b); !ok || p != 7 || s != 1<<40 {
		t.Fatalf("decode: %d %d %v", p, s, ok)
	}
	if _, _, ok := DecodeHeader(b[:HeaderLen-1]); ok {
		t.Fatal("short body decoded")
	}
	if _, _, ok := DecodeHeader(make([]byte, HeaderLen)); ok {
		t.Fatal("body without magic decoded")
	}
}
