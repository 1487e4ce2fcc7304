package dledger_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/internal/testwait"
	"github.com/ledgermq/ledgermq/message"
)

// BenchmarkSendVerifier measures acknowledged 1 KiB sends per second with
// the replica verifier off and on (a checkpoint every 100 ms, 50 times the
// default rate, so that its cost shows), alternating in one run so both
// see the same machine: verifier=off/round=1, on/1, off/2, on/2.
func BenchmarkSendVerifier(b *testing.B) {
	// off, the default interval (0: 5 s), and 50 times the default rate.
	for round := 1; round <= 2; round++ {
		for _, interval := range []time.Duration{-1, 0, 100 * time.Millisecond} {
			name := fmt.Sprintf("verifier=%v/round=%d", interval, round)
			switch interval {
			case -1:
				name = fmt.Sprintf("verifier=off/round=%d", round)
			case 0:
				name = fmt.Sprintf("verifier=default/round=%d", round)
			}
			b.Run(name, func(b *testing.B) {
				c := dledgertest.MakeCluster(b, 3, func(i int, cfg *dledger.Config) {
					cfg.Timing = dledger.TimingLAN
					cfg.VerifyInterval = interval
				})
				leader, err := c.Leader(ctxT(b, 30*time.Second))
				if err != nil {
					b.Fatal(err)
				}
				g := leader.Group()
				// Both settle the same way: the version is raised whether
				// the verifier runs or not.
				testwait.Ctx(b, ctxT(b, 30*time.Second), "version 2", func() bool { return g.FormatVersion() >= 2 })
				body := benchBody()
				var next atomic.Int64
				b.SetBytes(1024)
				b.ResetTimer()
				var wg sync.WaitGroup
				for p := 0; p < 64; p++ {
					wg.Add(1)
					go func(p int) {
						defer wg.Done()
						for next.Add(1) <= int64(b.N) {
							m := &message.Ext{Message: message.Message{Topic: "Bench", Body: body}, QueueID: int32(p % 8), BornHost: dledger.TestBorn}
							if _, err := g.Propose(context.Background(), []*message.Ext{m}); err != nil {
								b.Error(err)
								return
							}
						}
					}(p)
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
				v := g.Verifier()
				b.ReportMetric(float64(v.Matched), "checkpoints")
				if v.Mismatched != 0 {
					b.Fatalf("mismatch: %+v", v)
				}
			})
		}
	}
}
