//go:build unix

package compat

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
)

// TestRealClientRollingRestart restarts every node of a `ledgermq dev
// --restart` group with `ledgermq admin cluster rolling-restart` while
// real rocketmq-client-go producers send and a real push consumer
// receives. The drained leader keeps forwarding for --route-wait (the
// client re-reads routes every 30 s), so the standard client sees no
// failed send, and every acknowledged message is consumed.
func TestRealClientRollingRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs it as processes")
	}
	bin := devcluster.Build(t)
	d := devcluster.Start(t, bin, devcluster.Options{Args: []string{"--restart"}})
	ns := []string{d.Namesrv}
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()

	const topic, producers = "RollingTopic", 2
	p := startProducer(t, ns, "rolling-pg")
	log := &sendLog{acked: map[string]sendTimes{}}
	_, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("first")))
	log.record("first", time.Now(), err)
	if err != nil {
		t.Fatal(err)
	}
	ensureRetryTopic(t, ns, "rolling-cg")
	col := newCollector()
	c := startPush(t, ns, "rolling-cg", "rolling-c1", topic, consumer.Clustering, col.handler("c1"))
	defer c.Shutdown()

	stopProducers := keepSending(ctx, p, topic, producers, 10*time.Millisecond, log)
	defer stopProducers()
	waitFor(t, ctx, "100 acknowledged sends before the restart", func() bool {
		n, _ := log.startedSince(time.Time{})
		return n >= 100
	})

	start := time.Now()
	out, err := exec.CommandContext(ctx, bin, "admin", "-n", d.Namesrv, "cluster", "rolling-restart", "--dev", d.Dir,
		"--route-wait", "35s").CombinedOutput()
	if err != nil {
		t.Fatalf("rolling-restart: %v\n%s", err, out)
	}
	took := time.Since(start)
	done := time.Now()
	waitFor(t, ctx, "100 sends acknowledged after the restart", func() bool {
		n, _ := log.startedSince(done)
		return n >= 100
	})
	stopProducers()
	acked, failed, lastErr := log.snapshot()
	if failed > 0 {
		t.Fatalf("%d sends of the real client failed during the rolling restart, last: %v\n%s", failed, lastErr, out)
	}
	waitFor(t, ctx, "every acknowledged message consumed", func() bool { return col.consumedAll(acked) })
	dups := 0
	for _, n := range col.union() {
		if n > 1 {
			dups++
		}
	}
	t.Logf("rolling restart in %v under the real client: %d acknowledged, 0 failed, 0 lost, max-gap-ms=%d, %d delivered more than once\n%s",
		took.Round(time.Millisecond), len(acked), log.maxAckGap(start, done).Milliseconds(), dups, out)
}
