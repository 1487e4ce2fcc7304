package compat

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/remoting"
)

// TestRealClientTwoGroupsLeaderKill runs two broker groups behind one name
// server, as a production cluster would, with a topic on both. The real
// producer retries a failed send on the other group, so while one group
// loses its leader (and the client still routes to the dead address until
// its 30 s route refresh) no send fails; every acknowledged message is
// consumed.
func TestRealClientTwoGroupsLeaderKill(t *testing.T) {
	a := brokertest.StartCluster(t, 3, nil)
	b := brokertest.StartCluster(t, 3, func(_ int, c *broker.Config) {
		c.BrokerName = "broker-b"
		c.NamesrvAddrs = []string{a.NamesrvAddr()}
	})
	ns := []string{a.NamesrvAddr()}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic = "TwoGroupsTopic"
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	for _, tc := range []*brokertest.Cluster{a, b} {
		addr, err := tc.LeaderAddr(ctx)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
			"topic": topic, "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"}, nil))
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("create %s on %s: %v %+v", topic, addr, err, resp)
		}
	}
	waitFor(t, ctx, "the topic routed to both groups", func() bool {
		r, ok := a.Namesrv.Table().Route(topic)
		return ok && len(r.BrokerDatas) == 2 && len(r.QueueDatas) == 2
	})

	p := startProducer(t, ns, "two-pg")
	col := newCollector()
	c := startPush(t, ns, freshGroup("two-cg"), "two-c1", topic, consumer.Clustering, col.handler("c1"))
	defer c.Shutdown()

	var (
		mu     sync.Mutex
		acked  = map[string]bool{}
		failed []string
		byName = map[string]int{}
	)
	send := func(body string) {
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", body, err))
			return
		}
		acked[body] = true
		byName[res.MessageQueue.BrokerName]++
	}
	const senders = 4
	run := func(phase string, n int) {
		var wg sync.WaitGroup
		for g := 0; g < senders; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < n; i++ {
					send(fmt.Sprintf("%s-%d-%d", phase, g, i))
				}
			}(g)
		}
		wg.Wait()
	}
	run("before", 25)
	leader, err := a.Raft.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a.Kill(leader.ID)
	killed := time.Now()
	run("after", 50)
	sendTime := time.Since(killed)

	mu.Lock()
	if len(failed) > 0 {
		t.Fatalf("%d sends failed with the other group available: %v", len(failed), failed)
	}
	want := make(map[string]bool, len(acked))
	for k := range acked {
		want[k] = true
	}
	mu.Unlock()
	waitFor(t, ctx, "every acknowledged message consumed", func() bool { return col.consumedAll(want) })
	dups := 0
	for _, n := range col.union() {
		if n > 1 {
			dups++
		}
	}
	t.Logf("leader of broker-a killed: %d sends after it took %v, none failed; acknowledged per group %v; %d delivered more than once",
		senders*50, sendTime.Round(time.Millisecond), byName, dups)
}
