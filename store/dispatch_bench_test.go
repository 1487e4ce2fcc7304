package store

import (
	"fmt"
	"testing"
)

// benchDispatch measures dispatchLocked of batches of n records spread
// round-robin over 8 queues of one topic, each with a tag, a UNIQ_KEY and
// one KEYS value: the ConsumeQueue units and IndexFile keys every stored
// message costs, on the leader and on every follower.
func benchDispatch(b *testing.B, n int) {
	s := mustOpen(b, benchConfig(b))
	defer s.Close()
	const topic, queues = "BenchTopic", 8
	states := make([]*queueState, n)
	reqs := make([]dispatchReq, n)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range reqs {
		st, err := s.queueLocked(topic, int32(i%queues))
		if err != nil {
			b.Fatal(err)
		}
		states[i] = st
		reqs[i] = dispatchReq{
			topic:     topic,
			queueID:   int32(i % queues),
			size:      1200,
			storeTime: 1_700_000_000_000,
			tags:      "TagA",
			keys:      []string{fmt.Sprintf("ORDER-%08d", i)},
			uniqKey:   indexKey(topic, fmt.Sprintf("7F0000010001%020X", i)),
		}
	}
	all := func(int) bool { return true }
	phy := int64(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range reqs {
			r := &reqs[j]
			r.phy = phy
			r.queueOffset = states[j].next + int64(j/queues)
			r.storeTime++
			phy += int64(r.size)
		}
		if err := s.dispatchLocked(reqs, states, all, all); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
}

// BenchmarkDispatch1 is one record per call: a raft entry of one send.
func BenchmarkDispatch1(b *testing.B) { benchDispatch(b, 1) }

// BenchmarkDispatch100 is a batch of 100 records over 8 queues.
func BenchmarkDispatch100(b *testing.B) { benchDispatch(b, 100) }
