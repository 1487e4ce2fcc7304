package client

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// offsetFake is a name server and a one-node broker group that has no
// committed offset for anyone (QUERY_NOT_FOUND), min offset 3, max 7, and
// offset 5 for any timestamp; it records where pulls start.
type offsetFake struct {
	ns, b *remoting.Server

	mu     sync.Mutex
	pulls  map[string][]int64 // topic → queueOffset of each pull
	stamps []int64            // timestamps searched
}

func startOffsetFake(t *testing.T) *offsetFake {
	f := &offsetFake{pulls: map[string][]int64{}}
	offset := func(v int64) remoting.HandlerFunc {
		return func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
			if req.Code == remoting.SearchOffsetByTimestamp {
				ts, _ := remoting.ExtInt(req.ExtFields, "timestamp")
				f.mu.Lock()
				f.stamps = append(f.stamps, ts)
				f.mu.Unlock()
			}
			r := remoting.NewResponse(req, remoting.Success, "")
			r.SetExt("offset", strconv.FormatInt(v, 10))
			return r
		}
	}
	f.b = startServer(t, func(s *remoting.Server) {
		s.Handle(remoting.QueryConsumerOffset, "", remoting.HandlerFunc(func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
			return remoting.NewResponse(req, remoting.QueryNotFound, "no offset")
		}))
		s.Handle(remoting.GetMinOffset, "", offset(3))
		s.Handle(remoting.GetMaxOffset, "", offset(7))
		s.Handle(remoting.SearchOffsetByTimestamp, "", offset(5))
		s.Handle(remoting.PullMessage, "", remoting.HandlerFunc(func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
			off, _ := remoting.ExtInt(req.ExtFields, "queueOffset")
			f.mu.Lock()
			f.pulls[req.ExtFields["topic"]] = append(f.pulls[req.ExtFields["topic"]], off)
			f.mu.Unlock()
			r := remoting.NewResponse(req, remoting.PullNotFound, "")
			r.ExtFields = map[string]string{"nextBeginOffset": strconv.FormatInt(off, 10), "minOffset": "3", "maxOffset": "7"}
			return r
		}))
	})
	f.ns = startServer(t, func(s *remoting.Server) {
		s.Handle(remoting.GetRouteInfoByTopic, "", remoting.HandlerFunc(func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
			rd := protocol.TopicRouteData{
				QueueDatas:  []protocol.QueueData{{BrokerName: "broker-a", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
				BrokerDatas: []protocol.BrokerData{{Cluster: "fake", BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: f.b.Addr().String()}}},
			}
			body, _ := rd.Encode()
			r := remoting.NewResponse(req, remoting.Success, "")
			r.Body = body
			return r
		}))
	})
	return f
}

func (f *offsetFake) firstPull(topic string) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ps := f.pulls[topic]; len(ps) > 0 {
		return ps[0], true
	}
	return 0, false
}

// A group without a committed offset starts where ConsumeFromWhere says;
// a retry topic starts at 0 when consuming from the last offset.
func TestConsumeFromWhere(t *testing.T) {
	f := startOffsetFake(t)
	ts := time.UnixMilli(1_700_000_000_000)
	cases := []struct {
		topic string
		where ConsumeFromWhere
		want  int64
	}{
		{"FromLast", ConsumeFromLastOffset, 7},
		{"FromFirst", ConsumeFromFirstOffset, 3},
		{"FromTime", ConsumeFromTimestamp, 5},
		{"%RETRY%g", ConsumeFromLastOffset, 0},
	}
	for _, tc := range cases {
		c := newPullConsumer(t, WithNameServers(f.ns.Addr().String()), WithGroup("g"), WithConsumeFromWhere(tc.where),
			WithConsumeTimestamp(ts))
		qs, err := c.Queues(ctxGuard(t), tc.topic)
		if err != nil {
			t.Fatal(err)
		}
		c.Assign(qs)
		waitFor(t, "a pull of "+tc.topic, func() bool {
			pctx, cancel := context.WithTimeout(ctxGuard(t), 20*time.Millisecond)
			defer cancel()
			_, _ = c.Poll(pctx)
			_, ok := f.firstPull(tc.topic)
			return ok
		})
		if got, _ := f.firstPull(tc.topic); got != tc.want {
			t.Errorf("%s (%v): first pull at %d, want %d", tc.topic, tc.where, got, tc.want)
		}
		_ = c.Close()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.stamps, ts.UnixMilli()) {
		t.Errorf("searched timestamps %v, want %d", f.stamps, ts.UnixMilli())
	}
}

func TestAllocateStrategies(t *testing.T) {
	var qs []Queue
	for _, b := range []string{"a", "b"} {
		for id := range int32(5) {
			qs = append(qs, Queue{Topic: "T", BrokerName: b, QueueID: id})
		}
	}
	ids := []string{"c1", "c2", "c3"}
	for name, s := range map[string]AllocateStrategy{"average": AllocateAveragely, "circle": AllocateAveragelyByCircle,
		"hash": AllocateConsistentHash} {
		seen := map[Queue]int{}
		for _, id := range ids {
			for _, q := range s(id, qs, ids) {
				seen[q]++
			}
		}
		for _, q := range qs {
			if seen[q] != 1 {
				t.Fatalf("%s: %v allocated %d times", name, q, seen[q])
			}
		}
		if got := s("stranger", qs, ids); len(got) != 0 {
			t.Fatalf("%s: a non-member got %v", name, got)
		}
	}
	// RocketMQ's averaging: 10 queues over 3 members → 4, 3, 3, in blocks.
	if got := AllocateAveragely("c1", qs, ids); !slices.Equal(got, qs[:4]) {
		t.Fatalf("average c1: %v", got)
	}
	if got := AllocateAveragely("c3", qs, ids); !slices.Equal(got, qs[7:]) {
		t.Fatalf("average c3: %v", got)
	}
	if got := AllocateAveragelyByCircle("c2", qs, ids); !slices.Equal(got, []Queue{qs[1], qs[4], qs[7]}) {
		t.Fatalf("circle c2: %v", got)
	}
	// More members than queues: the last ones get nothing.
	if got := AllocateAveragely("c3", qs[:2], ids); len(got) != 0 {
		t.Fatalf("average with 2 queues, c3: %v", got)
	}
}

func TestSelectorTags(t *testing.T) {
	for expr, want := range map[string][]string{"": nil, "*": nil, " TagA || TagB ": {"TagA", "TagB"}, "A||": {"A"}} {
		if got := (Selector{Expression: expr}).tags(); !slices.Equal(got, want) {
			t.Errorf("tags(%q) = %v, want %v", expr, got, want)
		}
	}
	if (Selector{Type: SQL92, Expression: "a > 1"}).tags() != nil {
		t.Error("an SQL92 selector has tags")
	}
}

func TestConsumerOptionsValidate(t *testing.T) {
	ns := WithNameServers("127.0.0.1:9876")
	for name, opt := range map[string]Option{
		"goroutines": WithConsumeGoroutines(0), "batch": WithPullBatchSize(0), "limits": WithQueueLimits(0, 1),
		"group": WithGroup("bad group"), "where": WithConsumeFromWhere(9), "alloc": WithAllocateStrategy(nil),
	} {
		if _, err := NewPushConsumer(ns, opt); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	c, err := NewPushConsumer(ns)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err == nil {
		t.Error("start without a subscription")
	}
	if err := c.Subscribe("T", Selector{}, nil); err == nil {
		t.Error("nil handler accepted")
	}
	_ = c.Close()
	if err := c.Subscribe("T", Selector{}, func(context.Context, *MessageExt) ConsumeResult { return ConsumeSuccess }); err == nil {
		t.Error("subscribe after close accepted")
	}
}

// The process queue commits the lowest offset not consumed, the next
// pull's once it is empty, and reports itself full at either limit.
func TestProcessQueue(t *testing.T) {
	pq := newProcessQueue(context.Background(), Queue{Topic: "T"}, &subscription{})
	defer pq.drop()
	if pq.commitOffset() != -1 {
		t.Fatalf("unresolved queue commits %d", pq.commitOffset())
	}
	pq.setNext(10)
	msg := func(off int64, size int) *MessageExt {
		m := &MessageExt{}
		m.QueueOffset, m.Body = off, make([]byte, size)
		return m
	}
	pq.add([]*MessageExt{msg(10, 100), msg(11, 100), msg(13, 100)}, 14)
	if n, b := pq.cached(); n != 3 || b != 300 || pq.commitOffset() != 10 {
		t.Fatalf("cached %d/%d, commit %d", n, b, pq.commitOffset())
	}
	if !pq.full(3, 1000) || !pq.full(10, 300) || pq.full(4, 301) {
		t.Fatal("flow-control limits")
	}
	pq.consumed(11)
	pq.consumed(11) // twice: no effect
	if pq.commitOffset() != 10 {
		t.Fatalf("commit %d after a later message was consumed", pq.commitOffset())
	}
	pq.consumed(10)
	if pq.commitOffset() != 13 {
		t.Fatalf("commit %d, want 13", pq.commitOffset())
	}
	pq.consumed(13)
	if n, b := pq.cached(); n != 0 || b != 0 || pq.commitOffset() != 14 {
		t.Fatalf("empty queue: cached %d/%d, commit %d", n, b, pq.commitOffset())
	}
	select {
	case <-pq.space:
	default:
		t.Fatal("consuming did not signal space")
	}
}
