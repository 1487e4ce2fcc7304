package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/ledgermq/ledgermq/internal/harness/bench"
)

// drainBound bounds the wait for the sends outstanding when DURATION ends.
const drainBound = 30 * time.Second

type options struct {
	namesrv   string
	topic     string
	producers int
	inflight  int
	size      int
	duration  time.Duration
}

func main() {
	var o options
	fs := flag.NewFlagSet("realsend", flag.ContinueOnError)
	fs.StringVar(&o.namesrv, "namesrv", "127.0.0.1:9876", "name server addresses, ';'-separated")
	fs.StringVar(&o.namesrv, "n", "127.0.0.1:9876", "shorthand for -namesrv")
	fs.StringVar(&o.topic, "topic", "BenchTopic", "topic (auto-created by the first send)")
	fs.IntVar(&o.producers, "producers", 4, "producers, each with its own connections")
	fs.IntVar(&o.inflight, "inflight", 128, "SendAsync calls each producer keeps outstanding")
	fs.IntVar(&o.size, "size", 1024, "body size in bytes")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "how long to send")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "realsend:", err)
		os.Exit(1)
	}
}

// run sends as o says and writes the summary line to out.
func run(o options, out io.Writer) error {
	if o.producers < 1 || o.inflight < 1 || o.size < 1 || o.duration <= 0 {
		return errors.New("producers, inflight, size and duration must be positive")
	}
	rlog.SetLogLevel("error")
	addrs := strings.Split(o.namesrv, ";")
	ps := make([]rocketmq.Producer, 0, o.producers)
	defer func() {
		for _, p := range ps {
			_ = p.Shutdown()
		}
	}()
	for i := 0; i < o.producers; i++ {
		p, err := rocketmq.NewProducer(producer.WithNameServer(addrs), producer.WithGroupName("realsend"),
			producer.WithInstanceName(fmt.Sprintf("realsend-%d-%d", os.Getpid(), i)), producer.WithRetry(2))
		if err != nil {
			return fmt.Errorf("new producer: %w", err)
		}
		if err := p.Start(); err != nil {
			return fmt.Errorf("start producer: %w", err)
		}
		ps = append(ps, p)
	}
	body := bytes.Repeat([]byte("x"), o.size)
	if err := firstSend(ps[0], o.topic, body); err != nil {
		return err
	}

	start := time.Now()
	rec := bench.NewRecorder(start)
	deadline := start.Add(o.duration)
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots := make(chan struct{}, o.inflight)
			for time.Now().Before(deadline) {
				slots <- struct{}{}
				due := time.Now()
				err := p.SendAsync(context.Background(), func(_ context.Context, r *primitive.SendResult, err error) {
					out := bench.OK
					if err != nil || r == nil || r.Status != primitive.SendOK {
						// The client may have stored it before it gave up.
						out = bench.Unknown
					}
					rec.Record(due, time.Now(), out, o.size)
					<-slots
				}, primitive.NewMessage(o.topic, body))
				if err != nil {
					rec.Record(due, time.Now(), bench.Failed, o.size)
					<-slots
				}
			}
			// Wait for the outstanding sends: every slot back, or the bound.
			drain := time.NewTimer(drainBound)
			defer drain.Stop()
			for i := 0; i < o.inflight; i++ {
				select {
				case slots <- struct{}{}:
				case <-drain.C:
					return
				}
			}
		}()
	}
	wg.Wait()
	_, err := fmt.Fprintln(out, rec.Finish(time.Now()))
	return err
}

// firstSend sends one message, retrying for up to 30 s while the topic's
// route appears (the broker auto-creates it and registers it with the name
// servers).
func firstSend(p rocketmq.Producer, topic string, body []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		_, err := p.SendSync(ctx, primitive.NewMessage(topic, body))
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("first send to %s: %w", topic, err)
		case <-t.C:
		}
	}
}
