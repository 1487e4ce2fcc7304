package dledger_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/message"
)

func benchBody() []byte {
	b := make([]byte, 1024)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

// BenchmarkReplicatedPropose measures acknowledged 1 KiB messages per
// second through a 3-node loopback group, each proposal one message, with
// 1, 16 and 256 concurrent proposers. Every raft batch is fsynced by the
// raft log (raft-wal) before it is acknowledged.
func BenchmarkReplicatedPropose(b *testing.B) {
	for _, proposers := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("proposers=%d", proposers), func(b *testing.B) {
			c := dledgertest.MakeCluster(b, 3, func(i int, cfg *dledger.Config) { cfg.Timing = dledger.TimingLAN })
			ctx := context.Background()
			leader, err := c.Leader(ctxT(b, 30*time.Second))
			if err != nil {
				b.Fatal(err)
			}
			g := leader.Group()
			body := benchBody()
			var next atomic.Int64
			var lat []time.Duration
			var latMu sync.Mutex
			b.SetBytes(1024)
			cpu0 := processCPU()
			b.ResetTimer()
			var wg sync.WaitGroup
			for p := 0; p < proposers; p++ {
				wg.Add(1)
				go func(p int) {
					defer wg.Done()
					var mine []time.Duration
					for next.Add(1) <= int64(b.N) {
						m := &message.Ext{Message: message.Message{Topic: "Bench", Body: body}, QueueID: int32(p % 8), BornHost: dledger.TestBorn}
						start := time.Now()
						if _, err := g.Propose(ctx, []*message.Ext{m}); err != nil {
							b.Error(err)
							return
						}
						if proposers == 1 {
							mine = append(mine, time.Since(start))
						}
					}
					latMu.Lock()
					lat = append(lat, mine...)
					latMu.Unlock()
				}(p)
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/msg")
			entries, messages := g.ProposerStatsForTest()
			if e := entries.Load(); e > 0 {
				b.ReportMetric(float64(messages.Load())/float64(e), "msgs/entry")
			}
			if len(lat) > 0 {
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			}
		})
	}
}

// processCPU is the CPU time (user and system) this process has used: the
// three nodes share it, so per message it is the cost of replication.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFailover measures, per timing profile, the time from killing the
// leader (in process: its connections cut, its files left as a crash
// leaves them) to the next proposal committed by the new leader, while a
// writer keeps trying. Run with -benchtime=10x for the median of 10.
func BenchmarkFailover(b *testing.B) {
	for _, timing := range []dledger.Timing{dledger.TimingDefault, dledger.TimingLAN} {
		b.Run(timing.Name, func(b *testing.B) {
			c := dledgertest.MakeCluster(b, 3, func(i int, cfg *dledger.Config) { cfg.Timing = timing })
			body := benchBody()
			var took []time.Duration
			for i := 0; i < b.N; i++ {
				ctx := ctxT(b, 60*time.Second)
				leader, err := c.Leader(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Kill(leader.ID); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				for {
					var g *dledger.Group
					for _, n := range c.Up() {
						if ng := n.Group(); ng != nil && ng.IsLeader() {
							g = ng
						}
					}
					if g != nil {
						m := &message.Ext{Message: message.Message{Topic: "Bench", Body: body}, BornHost: dledger.TestBorn}
						pctx, cancel := context.WithTimeout(ctx, time.Second)
						_, err := g.Propose(pctx, []*message.Ext{m})
						cancel()
						if err == nil {
							break
						}
					}
					if ctx.Err() != nil {
						b.Fatal("no leader after kill")
					}
					time.Sleep(time.Millisecond)
				}
				took = append(took, time.Since(start))
				if err := c.Restart(leader.ID); err != nil {
					b.Fatal(err)
				}
				if err := c.WaitConverged(ctx); err != nil {
					b.Fatal(err)
				}
			}
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "median-ms")
			b.ReportMetric(float64(took[len(took)-1].Milliseconds()), "max-ms")
		})
	}
}
