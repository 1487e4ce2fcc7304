package broker_test

import (
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/store"
)

// BenchmarkTimerMillionPending parks LEDGERMQ_TIMER_BENCH_N (default
// 1 000 000) timer messages on a 3-node group in this process, all due
// within a window of LEDGERMQ_TIMER_BENCH_WINDOW (default 30 s), reports
// the Go heap and the process RSS while they are pending, then lets them
// fall due and reports the delivery lateness (store time of the delivered
// copy minus due time) at p50, p99 and max. It runs once whatever b.N is.
// The parked records are proposed directly in entries of 1 000 (the send
// path is measured elsewhere); the index, the scheduler and the raft
// replication of the deliveries are the real ones.
//
//	go test ./broker -run '^$' -bench TimerMillion -benchtime 1x -timeout 30m
func BenchmarkTimerMillionPending(b *testing.B) {
	n := envInt("LEDGERMQ_TIMER_BENCH_N", 1_000_000)
	window := time.Duration(envInt("LEDGERMQ_TIMER_BENCH_WINDOW", 30)) * time.Second
	clk := &testClock{}
	tc := brokertest.StartCluster(b, 3, func(_ int, c *broker.Config) { c.Clock = clk.now })
	c := newProdClient(b)
	_, addr, g := leaderOf(b, tc)
	for _, topic := range []string{"BenchTimer", "BenchTimerProbe"} {
		mustOK(b, invoke(b, c, addr, broker.SendRequest(topic, 0, nil, "create")))
	}
	// One real timer send creates the timer topic.
	mustOK(b, invoke(b, c, addr, broker.SendRequest("BenchTimerProbe", 0, timerProps(message.PropertyTimerDelayMS, 100), "probe")))
	runtime.GC()
	heap0, rss0 := memNow()

	base := clk.ms() + int64(time.Hour/time.Millisecond)
	body := []byte(strings.Repeat("x", 100))
	start := time.Now()
	const perEntry = 1000
	for i := 0; i < n; i += perEntry {
		msgs := make([]*message.Ext, 0, perEntry)
		for j := i; j < min(n, i+perEntry); j++ {
			due := base + int64(j)*window.Milliseconds()/int64(n)
			msgs = append(msgs, &message.Ext{
				Message: message.Message{Topic: broker.TimerTopic, Body: body, Properties: map[string]string{
					message.PropertyRealTopic: "BenchTimer", message.PropertyRealQueueID: strconv.Itoa(j % 8),
					broker.TimerOutMS: strconv.FormatInt(due, 10), message.PropertyTimerDeliverMS: strconv.FormatInt(due, 10)}},
				BornTimestamp: time.Now().UnixMilli(),
			})
		}
		// Elections happen on a busy machine: propose again at the next
		// leader (an unknown outcome may park a batch twice; what counts
		// is the parked queue).
		for try := 0; ; try++ {
			_, err := g.Propose(testCtx(b), msgs)
			if err == nil {
				break
			}
			if try == 10 {
				b.Fatal(err)
			}
			_, _, g = leaderOf(b, tc)
		}
	}
	parked := time.Since(start)
	total := queueLen(g, broker.TimerTopic, 0)
	for _, nd := range tc.Raft.Up() {
		id := nd.ID
		broker.WaitUntil(b, 10*time.Minute, "every node indexed every timer", func() bool {
			br := tc.Broker(id)
			return br != nil && br.TimerIndexLenForTest() == total
		})
	}
	indexed := time.Since(start)
	runtime.GC()
	heap1, rss1 := memNow()
	b.Logf("%d timers parked in %v, indexed on 3 nodes after %v", n, parked.Round(time.Millisecond), indexed.Round(time.Millisecond))
	b.Logf("pending: Go heap %.1f MiB (before parking %.1f MiB), process RSS %.1f MiB (before %.1f MiB); 3 nodes in one process",
		mib(heap1), mib(heap0), mib(rss1), mib(rss0))

	// Fall due: the first one a second from now.
	off := time.Duration(base-clk.ms())*time.Millisecond - time.Second
	clk.advance(off)
	broker.WaitUntil(b, 20*time.Minute, "every timer delivered", func() bool {
		_, _, g = leaderOf(b, tc)
		return allDelivered(g)
	})
	b.Logf("all delivered %v after the first fell due", (time.Since(start) - indexed - time.Second).Round(time.Millisecond))

	// Lateness: store time (the raft group's real clock) moved onto the
	// brokers' clock, minus the due time.
	var late []int64
	for q := int32(0); q < 8; q++ {
		from := int64(0)
		if q == 0 {
			from = 1 // the message that created the topic
		}
		for {
			res, err := messagestore.Of(g).Get("BenchTimer", q, from, 512, nil)
			if err != nil {
				b.Fatal(err)
			}
			if res.Status != store.Found {
				res.Release()
				break
			}
			for _, r := range res.Records {
				m, _, err := message.DecodeRecord(r.Bytes)
				if err != nil {
					b.Fatal(err)
				}
				due, _ := strconv.ParseInt(m.Properties[broker.TimerOutMS], 10, 64)
				late = append(late, m.StoreTimestamp+clk.off.Load()/int64(time.Millisecond)-due)
			}
			from = res.NextBeginOffset
			res.Release()
		}
	}
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	if len(late) == 0 {
		b.Fatal("nothing delivered")
	}
	pct := func(p float64) int64 { return late[min(len(late)-1, int(p*float64(len(late))))] }
	b.Logf("lateness over %d deliveries: p50 %d ms, p99 %d ms, max %d ms, min %d ms", len(late), pct(0.5), pct(0.99), late[len(late)-1], late[0])
	b.ReportMetric(float64(pct(0.5)), "p50-late-ms")
	b.ReportMetric(float64(pct(0.99)), "p99-late-ms")
	b.ReportMetric(mib(heap1), "heap-MiB")
	b.ReportMetric(mib(rss1), "rss-MiB")
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return def
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// memNow is the Go heap in use and the process's resident set.
func memNow() (heap, rss uint64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseUint(f[1], 10, 64)
				rss = kb << 10
			}
		}
	}
	return ms.HeapInuse, rss
}
