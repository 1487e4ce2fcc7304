package compat

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/ledgermq/ledgermq/broker/brokertest"
)

// BenchmarkRealClientSend measures acknowledged 1 KiB SendSync calls per
// second from several real-client producers against a 3-node group, and
// then how fast one push consumer drains what was sent.
func BenchmarkRealClientSend(b *testing.B) {
	ns := startBenchGroup(b)
	ctx := context.Background()
	const producers, perProducerConns = 8, 1
	body := bytes.Repeat([]byte("x"), 1024)
	var ps []rocketmq.Producer
	for i := 0; i < producers; i++ {
		p, err := rocketmq.NewProducer(producer.WithNameServer(ns), producer.WithGroupName("bench-pg"),
			producer.WithInstanceName(fmt.Sprintf("bench-%d", i)), producer.WithRetry(2))
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Start(); err != nil {
			b.Fatal(err)
		}
		defer p.Shutdown()
		ps = append(ps, p)
	}
	// Create the topic before timing.
	if _, err := ps[0].SendSync(ctx, primitive.NewMessage("BenchTopic", body)); err != nil {
		b.Fatal(err)
	}
	timedSends(b, producers*16, "sends/s", func(i int) error {
		_, err := ps[i%producers].SendSync(ctx, primitive.NewMessage("BenchTopic", body))
		return err
	})

	total := int64(b.N) + 1
	var got atomic.Int64
	done := make(chan struct{})
	start := time.Now()
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer(ns), consumer.WithGroupName(fmt.Sprintf("bench-cg-%d", b.N)),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithConsumeMessageBatchMaxSize(32),
		consumer.WithPullBatchSize(32))
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Subscribe("BenchTopic", consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		if got.Add(int64(len(msgs))) >= total {
			select {
			case <-done:
			default:
				close(done)
			}
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		b.Fatal(err)
	}
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	defer c.Shutdown()
	select {
	case <-done:
		b.ReportMetric(float64(total)/time.Since(start).Seconds(), "consumed/s")
	case <-time.After(120 * time.Second):
		b.Fatalf("consumed %d of %d", got.Load(), total)
	}
}

// startBenchGroup starts a 3-node group and waits for its TBW102 route.
func startBenchGroup(b *testing.B) []string {
	b.Helper()
	tc := brokertest.StartCluster(b, 3, nil)
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if r, ok := tc.Namesrv.Table().Route("TBW102"); ok && len(r.BrokerDatas) > 0 {
			if _, ok := r.BrokerDatas[0].BrokerAddrs[0]; ok {
				return []string{tc.NamesrvAddr()}
			}
		}
		if wctx.Err() != nil {
			b.Fatal("no route")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// commitAll commits every local transaction.
type commitAll struct{}

func (commitAll) ExecuteLocalTransaction(*primitive.Message) primitive.LocalTransactionState {
	return primitive.CommitMessageState
}

func (commitAll) CheckLocalTransaction(*primitive.MessageExt) primitive.LocalTransactionState {
	return primitive.CommitMessageState
}

// BenchmarkRealClientTransaction measures committed 1 KiB transactions per
// second (half message, local transaction, END_TRANSACTION) from several
// real-client TransactionProducers, the same shape as
// BenchmarkRealClientSend, so the two can be read side by side.
func BenchmarkRealClientTransaction(b *testing.B) {
	ns := startBenchGroup(b)
	ctx := context.Background()
	const producers = 8
	body := bytes.Repeat([]byte("x"), 1024)
	var ps []rocketmq.TransactionProducer
	for i := 0; i < producers; i++ {
		p, err := rocketmq.NewTransactionProducer(commitAll{}, producer.WithNameServer(ns), producer.WithGroupName("bench-tx-pg"),
			producer.WithInstanceName(fmt.Sprintf("bench-tx-%d", i)), producer.WithRetry(2))
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Start(); err != nil {
			b.Fatal(err)
		}
		defer p.Shutdown()
		ps = append(ps, p)
	}
	if _, err := ps[0].SendMessageInTransaction(ctx, primitive.NewMessage("BenchTxTopic", body)); err != nil {
		b.Fatal(err)
	}
	timedSends(b, producers*16, "txns/s", func(i int) error {
		_, err := ps[i%producers].SendMessageInTransaction(ctx, primitive.NewMessage("BenchTxTopic", body))
		return err
	})
}

// timedSends runs b.N calls of send over workers goroutines (send gets the
// worker's number), times them as 1 KiB each and reports the rate as unit.
func timedSends(b *testing.B, workers int, unit string, send func(worker int) error) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.SetBytes(1024)
	b.ResetTimer()
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := send(i); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
}
