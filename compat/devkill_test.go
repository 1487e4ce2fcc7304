//go:build unix

package compat

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/remoting"
)

// sendLog records the outcome of every send of a test's producers.
type sendLog struct {
	mu      sync.Mutex
	acked   map[string]sendTimes
	failed  int
	lastErr error
}

// sendTimes are when a send started and when it was acknowledged.
type sendTimes struct{ start, ack time.Time }

func (l *sendLog) record(body string, start time.Time, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failed++
		l.lastErr = err
		return
	}
	l.acked[body] = sendTimes{start, time.Now()}
}

// startedSince counts acknowledged sends that started at or after t and
// returns the earliest acknowledgement among them.
func (l *sendLog) startedSince(t time.Time) (n int, first time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, st := range l.acked {
		if !st.start.Before(t) {
			n++
			if first.IsZero() || st.ack.Before(first) {
				first = st.ack
			}
		}
	}
	return n, first
}

// keepSending runs n goroutines sending unique bodies to topic through p,
// pace apart (0: back to back), each outcome recorded in log, until the
// returned stop is called (it waits for them; calling it again does
// nothing). A failed send is followed by a pause of 100 ms, so a client
// that still routes to a dead address does not spin.
func keepSending(ctx context.Context, p rocketmq.Producer, topic string, n int, pace time.Duration, log *sendLog) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				case <-time.After(pace):
				}
				body := fmt.Sprintf("p%d-%d", g, i)
				start := time.Now()
				sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := p.SendSync(sctx, primitive.NewMessage(topic, []byte(body)))
				scancel()
				log.record(body, start, err)
				if err != nil {
					select {
					case <-done:
						return
					case <-time.After(100 * time.Millisecond):
					}
				}
			}
		}(g)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

// maxAckGap is the longest time between from and to in which no send was
// acknowledged.
func (l *sendLog) maxAckGap(from, to time.Time) time.Duration {
	l.mu.Lock()
	acks := make([]time.Time, 0, len(l.acked)+2)
	for _, st := range l.acked {
		if !st.ack.Before(from) && !st.ack.After(to) {
			acks = append(acks, st.ack)
		}
	}
	l.mu.Unlock()
	acks = append(acks, from, to)
	sort.Slice(acks, func(i, j int) bool { return acks[i].Before(acks[j]) })
	var gap time.Duration
	for i := 1; i < len(acks); i++ {
		gap = max(gap, acks[i].Sub(acks[i-1]))
	}
	return gap
}

func (l *sendLog) snapshot() (acked map[string]bool, failed int, lastErr error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	acked = make(map[string]bool, len(l.acked))
	for b := range l.acked {
		acked[b] = true
	}
	return acked, l.failed, l.lastErr
}

// TestRealClientThroughProcessKill9 runs the group as real OS processes
// (`ledgermq dev`), keeps real producers and a push consumer busy, kill -9s
// the leader's process, and checks that sends resume, that every message
// acknowledged before or after the kill is consumed, and reports how many
// were delivered more than once.
func TestRealClientThroughProcessKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs it as processes")
	}
	d := devcluster.Start(t, devcluster.Build(t), devcluster.Options{})
	ns := []string{d.Namesrv}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	leader, err := d.Leader(ctx, rc)
	if err != nil || leader == "" {
		t.Fatalf("leader: %q %v", leader, err)
	}
	victim, ok := d.File.NodeByAddr(leader)
	if !ok {
		t.Fatalf("leader %s is not in %+v", leader, d.File)
	}

	const topic, producers = "Kill9Topic", 4
	p := startProducer(t, ns, "kill9-pg")
	log := &sendLog{acked: map[string]sendTimes{}}
	// The first send creates the topic (from TBW102), which the consumer
	// needs to subscribe.
	_, err = p.SendSync(ctx, primitive.NewMessage(topic, []byte("first")))
	log.record("first", time.Now(), err)
	if err != nil {
		t.Fatal(err)
	}
	col := newCollector()
	c := startPush(t, ns, fmt.Sprintf("kill9-cg-%d", time.Now().UnixNano()), "kill9-c1", topic, consumer.Clustering, col.handler("c1"))
	defer c.Shutdown()

	stopProducers := keepSending(ctx, p, topic, producers, 0, log)
	defer stopProducers()

	waitFor(t, ctx, "200 acknowledged sends before the kill", func() bool {
		n, _ := log.startedSince(time.Time{})
		return n >= 200
	})
	waitFor(t, ctx, "the consumer to receive messages before the kill", func() bool { return col.per("c1") > 0 })
	if err := d.Kill9(victim.PID); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var next string
	waitFor(t, ctx, "a new leader in the name server", func() bool {
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		defer rcancel()
		next, err = d.Leader(rctx, rc)
		return err == nil && next != "" && next != leader
	})
	newLeaderAfter := time.Since(killed)
	// The Go client reads routes every 30 s, so it keeps dialling the dead
	// address until then; the bound leaves room for one missed refresh.
	describe = func() string {
		_, failed, lastErr := log.snapshot()
		return fmt.Sprintf("%d failed sends, last error %v", failed, lastErr)
	}
	defer func() { describe = func() string { return "" } }()
	waitFor(t, ctx, "200 sends started after the kill acknowledged", func() bool {
		n, _ := log.startedSince(killed)
		return n >= 200
	})
	stopProducers()
	_, firstAfter := log.startedSince(killed)
	acked, failed, _ := log.snapshot()
	waitFor(t, ctx, "every acknowledged message consumed", func() bool { return col.consumedAll(acked) })
	dups, unacked := 0, 0
	for b, n := range col.union() {
		if n > 1 {
			dups++
		}
		if !acked[b] {
			unacked++ // a send whose outcome the client never learned
		}
	}
	t.Logf("kill -9 of leader process %d (%s): name server lists %s %v later; first send started after the kill acknowledged %v after it; "+
		"%d acknowledged, %d sends failed, %d consumed without an ack (unknown outcome), %d delivered more than once",
		victim.PID, leader, next, newLeaderAfter.Round(time.Millisecond), firstAfter.Sub(killed).Round(time.Millisecond),
		len(acked), failed, unacked, dups)
}
