package client

import (
	"sync"
	"time"
)

// Latency fault tolerance after RocketMQ's MQFaultStrategy: the latency of
// each send to a broker group decides how long the group is avoided.
//
//	last send took  >= 50 ms  100 ms  550 ms  1 s   2 s    3 s    15 s   failed
//	avoided for        0      0       30 s    60 s  120 s  180 s  600 s  600 s
//
// A failed attempt counts as a latency of failedLatency (Java: 30 000 ms,
// isolation). Raft refinement: a fault is recorded against the address
// the group's leader had; once the route names another leader for the
// group, the fault no longer applies, so a group that failed over is used
// again at once rather than ten minutes later.
var (
	faultLatencies = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 550 * time.Millisecond,
		time.Second, 2 * time.Second, 3 * time.Second, 15 * time.Second}
	faultDurations = []time.Duration{0, 0, 30 * time.Second, 60 * time.Second, 120 * time.Second,
		180 * time.Second, 600 * time.Second}
)

const failedLatency = 30 * time.Second

// avoidFor returns how long a group whose last send took latency is
// avoided.
func avoidFor(latency time.Duration) time.Duration {
	for i := len(faultLatencies) - 1; i >= 0; i-- {
		if latency >= faultLatencies[i] {
			return faultDurations[i]
		}
	}
	return 0
}

// faultTable records, per broker group, when it may be used again. Safe
// for concurrent use.
type faultTable struct {
	now func() time.Time

	mu    sync.Mutex
	items map[string]faultItem // by broker name
}

type faultItem struct {
	addr    string // the leader address the latency was measured on
	latency time.Duration
	until   time.Time // avoided before this instant (zero: not avoided)
}

func newFaultTable(now func() time.Time) *faultTable {
	return &faultTable{now: now, items: map[string]faultItem{}}
}

// update records a send to broker at addr that took latency, or failed.
func (f *faultTable) update(broker, addr string, latency time.Duration, failed bool) {
	if failed {
		latency = failedLatency
	}
	it := faultItem{addr: addr, latency: latency}
	if d := avoidFor(latency); d > 0 {
		it.until = f.now().Add(d)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items[broker] = it
}

// available reports whether broker, led from addr now, may be used.
func (f *faultTable) available(broker, addr string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	it, ok := f.items[broker]
	// A zero until (a send fast enough to avoid nothing) needs no clock.
	return !ok || it.addr != addr || it.until.IsZero() || !f.now().Before(it.until)
}

// leastBad returns, among brokers (each with its current leader address
// in leaders), the one to use when all are avoided: the first to become
// available, then the lowest latency (Java's pickOneAtLeast in spirit).
// It returns "" for an empty list.
func (f *faultTable) leastBad(brokers []string, leaders map[string]string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	best := ""
	var bestItem faultItem
	for _, b := range brokers {
		it, ok := f.items[b]
		if !ok || it.addr != leaders[b] {
			return b // not avoided after all (the route changed meanwhile)
		}
		if best == "" || it.until.Before(bestItem.until) ||
			it.until.Equal(bestItem.until) && it.latency < bestItem.latency {
			best, bestItem = b, it
		}
	}
	return best
}
