package broker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// testClock is the brokers' clock: real time plus an offset the test
// moves forward, so that delays of minutes and days pass at once.
type testClock struct{ off atomic.Int64 }

func (c *testClock) now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *testClock) advance(d time.Duration) { c.off.Add(int64(d)) }
func (c *testClock) ms() int64               { return c.now().UnixMilli() }

func timerProps(k string, v int64) map[string]string {
	return map[string]string{k: strconv.FormatInt(v, 10)}
}

// timerCluster is an n-node group whose brokers run on clk, once its
// leader takes sends.
func timerCluster(t *testing.T, n int, clk *testClock) *brokertest.Cluster {
	tc := brokertest.StartCluster(t, n, func(_ int, c *broker.Config) { c.Clock = clk.now })
	c := newProdClient(t)
	broker.WaitUntil(t, 20*time.Second, "a leader that takes sends", func() bool {
		_, addr, _ := leaderOf(t, tc)
		return invoke(t, c, addr, broker.SendRequest("TimerReady", 0, nil, "ready")).Code == remoting.Success
	})
	return tc
}

// ask sends req to the current leader until one answers other than
// "not the leader" (14) or an unknown outcome (1), and returns that
// answer: the machine is shared and elections happen under load. A send
// retried after an unknown outcome may be stored twice; the tests count
// parked timers, not sends.
func ask(t *testing.T, tc *brokertest.Cluster, c *remoting.Client, req func() *remoting.Command) *remoting.Command {
	t.Helper()
	for try := 0; ; try++ {
		_, addr, _ := leaderOf(t, tc)
		resp := invoke(t, c, addr, req())
		if try == 20 || resp.Code != remoting.ServiceNotAvailable && resp.Code != remoting.SystemError && resp.Code != remoting.SystemBusy {
			return resp
		}
	}
}

func send(t *testing.T, tc *brokertest.Cluster, c *remoting.Client, topic string, q int, props map[string]string, body string) *remoting.Command {
	t.Helper()
	resp := ask(t, tc, c, func() *remoting.Command { return broker.SendRequest(topic, q, props, body) })
	mustOK(t, resp)
	return resp
}

// timerDelivered is the scheduler's count of delivered timers on g.
func timerDelivered(g *dledger.Group) int64 {
	n, _ := g.Metadata().Offset(broker.TimerGroup, broker.TimerTopic, broker.TimerDelivered)
	return n
}

// allDelivered: the progress on g covers every parked timer, so what
// the destination queues hold is final.
func allDelivered(g *dledger.Group) bool {
	return timerDelivered(g) == queueLen(g, broker.TimerTopic, 0)
}

// parkedFor maps the UNIQ_KEY of every timer parked for topic's queue q
// to its parked offset.
func parkedFor(t *testing.T, g *dledger.Group, topic string, q int32) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for off := int64(0); off < queueLen(g, broker.TimerTopic, 0); off++ {
		m := readBack(t, g, broker.TimerTopic, 0, off)
		if m.Properties[message.PropertyRealTopic] == topic && m.Properties[message.PropertyRealQueueID] == strconv.Itoa(int(q)) {
			out[m.UniqKey()] = off
		}
	}
	return out
}

// checkOnce checks that every timer parked for queue q of topic was
// delivered there exactly once, after the queue's first skip messages,
// and that nothing else was; it returns the delivered messages.
func checkOnce(t *testing.T, g *dledger.Group, topic string, q int32, skip int64) []*message.Ext {
	t.Helper()
	parked := parkedFor(t, g, topic, q)
	if got := queueLen(g, topic, q) - skip; got != int64(len(parked)) {
		t.Fatalf("%d deliveries of %d timers", got, len(parked))
	}
	seen := map[string]bool{}
	var out []*message.Ext
	for off := skip; off < queueLen(g, topic, q); off++ {
		m := readBack(t, g, topic, q, off)
		if _, ok := parked[m.UniqKey()]; seen[m.UniqKey()] || !ok {
			t.Fatalf("%s (%s) delivered twice or never parked", m.UniqKey(), m.Body)
		}
		seen[m.UniqKey()] = true
		out = append(out, m)
	}
	return out
}

// probe sends a timer due 100 ms after the test clock's now and waits
// for it: the scheduler delivers in due order, so every timer due later
// than the probe is still parked when it arrives.
func probe(t *testing.T, tc *brokertest.Cluster, c *remoting.Client, g *dledger.Group, n int64) {
	t.Helper()
	send(t, tc, c, "TimerProbe", 0, timerProps(message.PropertyTimerDelayMS, 100), "probe")
	broker.WaitUntil(t, 10*time.Second, "the probe delivered", func() bool { return queueLen(g, "TimerProbe", 0) >= n })
}

func TestTimerDelaysOf1s90sAnd25h(t *testing.T) {
	clk := &testClock{}
	tc := timerCluster(t, 3, clk)
	c := newProdClient(t)
	_, _, g := leaderOf(t, tc)
	send(t, tc, c, "TimerTopic", 0, nil, "plain")   // creates the topic
	send(t, tc, c, "TimerProbe", 0, nil, "probe-0") // and the probes'

	sent := clk.ms()
	one := send(t, tc, c, "TimerTopic", 1, timerProps(message.PropertyTimerDelaySec, 1), "1s")
	ninety := sent + 90_000
	send(t, tc, c, "TimerTopic", 2, timerProps(message.PropertyTimerDeliverMS, ninety), "90s")
	send(t, tc, c, "TimerTopic", 3, timerProps(message.PropertyTimerDelayMS, (25*time.Hour).Milliseconds()), "25h")
	if one.ExtFields["queueId"] != "1" {
		t.Fatalf("a timer send answered queue %s, want the topic's queue 1", one.ExtFields["queueId"])
	}
	for q := int32(2); q <= 3; q++ {
		if n := queueLen(g, "TimerTopic", q); n != 0 {
			t.Fatalf("a timer message is on queue %d at once", q)
		}
	}
	parked := readBack(t, g, broker.TimerTopic, 0, 0)
	if parked.Properties[message.PropertyRealTopic] != "TimerTopic" || parked.Properties[message.PropertyRealQueueID] != "1" {
		t.Fatalf("parked %+v", parked.Properties)
	}

	// 1 s, in real time: not before its due time.
	broker.WaitUntil(t, 10*time.Second, "the 1 s timer delivered", func() bool { return queueLen(g, "TimerTopic", 1) >= 1 })
	got := readBack(t, g, "TimerTopic", 1, 0)
	due, _ := strconv.ParseInt(got.Properties[broker.TimerOutMS], 10, 64)
	if string(got.Body) != "1s" || due < sent+1000 || got.Properties[message.PropertyTimerDelaySec] != "" || got.StoreTimestamp < due {
		t.Fatalf("delivered %+v (due %d, sent %d)", got, due, sent)
	}
	if _, ok := parkedFor(t, g, "TimerTopic", 1)[one.ExtFields["transactionId"]]; !ok {
		t.Fatal("the answer's id is not a parked timer's")
	}

	// 90 s: still parked at 89.5 s, delivered after 90 s.
	clk.advance(time.Duration(ninety-clk.ms())*time.Millisecond - 500*time.Millisecond)
	probe(t, tc, c, g, 2)
	if n := queueLen(g, "TimerTopic", 2); n != 0 {
		t.Fatal("the 90 s timer was delivered before its time")
	}
	clk.advance(time.Second)
	broker.WaitUntil(t, 10*time.Second, "the 90 s timer delivered", func() bool { return queueLen(g, "TimerTopic", 2) >= 1 })
	got = readBack(t, g, "TimerTopic", 2, 0)
	if string(got.Body) != "90s" || got.Properties[broker.TimerOutMS] != strconv.FormatInt(ninety, 10) ||
		got.Properties[message.PropertyTimerDeliverMS] != "" {
		t.Fatalf("delivered %+v", got.Properties)
	}

	// 25 h: still parked a second before, delivered after.
	clk.advance(time.Duration(sent+(25*time.Hour).Milliseconds()-clk.ms())*time.Millisecond - time.Second)
	probe(t, tc, c, g, 3)
	if n := queueLen(g, "TimerTopic", 3); n != 0 {
		t.Fatal("the 25 h timer was delivered before its time")
	}
	clk.advance(2 * time.Second)
	broker.WaitUntil(t, 10*time.Second, "the 25 h timer delivered", func() bool { return queueLen(g, "TimerTopic", 3) >= 1 })
	if got := readBack(t, g, "TimerTopic", 3, 0); string(got.Body) != "25h" {
		t.Fatalf("delivered %q", got.Body)
	}
	broker.WaitUntil(t, 10*time.Second, "every timer delivered", func() bool { return allDelivered(g) })
	for q := int32(1); q <= 3; q++ {
		checkOnce(t, g, "TimerTopic", q, 0)
	}
}

func TestTimerSendsRefusedOrStoredAtOnce(t *testing.T) {
	clk := &testClock{}
	tc := timerCluster(t, 1, clk)
	c := newProdClient(t)
	_, addr, g := leaderOf(t, tc)
	send(t, tc, c, "TimerNow", 0, nil, "plain")
	// Already due: stored at once, as Java does.
	send(t, tc, c, "TimerNow", 0, timerProps(message.PropertyTimerDeliverMS, clk.ms()-5000), "past")
	if n := queueLen(g, "TimerNow", 0); n != 2 {
		t.Fatalf("a timer already due is not stored at once (%d)", n)
	}
	// A DELAY level wins over timer properties.
	send(t, tc, c, "TimerNow", 0, map[string]string{message.PropertyDelayLevel: "1", message.PropertyTimerDelaySec: "100"}, "level")
	if n := queueLen(g, broker.ScheduleTopic, 0); n != 1 {
		t.Fatalf("DELAY with timer properties: %d parked at level 1", n)
	}
	for _, props := range []map[string]string{
		timerProps(message.PropertyTimerDelaySec, int64((broker.TimerMaxDefault + time.Minute).Seconds())),
		timerProps(message.PropertyTimerDeliverMS, clk.ms()+(4*24*time.Hour).Milliseconds()),
		{message.PropertyTimerDelayMS: "soon"},
		{message.PropertyTimerDelaySec: "99999999999999999"},
	} {
		if resp := invoke(t, c, addr, broker.SendRequest("TimerNow", 0, props, "x")); resp.Code != remoting.MessageIllegal {
			t.Errorf("%v: %d %s", props, resp.Code, resp.Remark)
		}
	}
	// A timer batch (header or item) and a timer half message are refused.
	req := broker.BatchRequest("TimerNow", 0, broker.CapturedBatch())
	req.ExtFields["i"] = string(message.EncodeProperties(timerProps(message.PropertyTimerDelaySec, 10)))
	if resp := invoke(t, c, addr, req); resp.Code != remoting.MessageIllegal {
		t.Errorf("timer batch: %d %s", resp.Code, resp.Remark)
	}
	item := broker.EncodeBatchItem(0, []byte("b"), timerProps(message.PropertyTimerDelaySec, 10))
	if resp := invoke(t, c, addr, broker.BatchRequest("TimerNow", 0, item)); resp.Code != remoting.MessageIllegal {
		t.Errorf("timer batch item: %d %s", resp.Code, resp.Remark)
	}
	half := broker.SendRequest("TimerNow", 0, timerProps(message.PropertyTimerDelaySec, 10), "half")
	half.ExtFields["sysFlag"] = strconv.Itoa(int(message.SysFlagTransactionPrepared))
	if resp := invoke(t, c, addr, half); resp.Code != remoting.MessageIllegal {
		t.Errorf("timer half message: %d %s", resp.Code, resp.Remark)
	}
	if resp := invoke(t, c, addr, broker.SendRequest(broker.TimerTopic, 0, nil, "x")); resp.Code != remoting.InvalidParameter {
		t.Errorf("a send to %s: %d %s", broker.TimerTopic, resp.Code, resp.Remark)
	}
	if n := queueLen(g, broker.TimerTopic, 0); n != 0 {
		t.Fatalf("%d refused timers parked", n)
	}
}

// TestTimerDeliveryOrderByDueTime parks timers in an order unrelated to
// their due times, some due in the same millisecond, lets them all fall
// due at once and checks they arrive by due time, then by parked order.
func TestTimerDeliveryOrderByDueTime(t *testing.T) {
	clk := &testClock{}
	tc := timerCluster(t, 1, clk)
	c := newProdClient(t)
	_, _, g := leaderOf(t, tc)
	send(t, tc, c, "TimerOrder", 0, nil, "plain")
	base := clk.ms() + 60_000
	const n = 300
	for i := 0; i < n; i++ {
		due := base + int64((i*7919)%97)*37 // across seconds, with repeats
		send(t, tc, c, "TimerOrder", 0, timerProps(message.PropertyTimerDeliverMS, due), fmt.Sprint(i))
	}
	clk.advance(2 * time.Minute)
	broker.WaitUntil(t, 20*time.Second, "every timer delivered", func() bool { return allDelivered(g) })
	parked := parkedFor(t, g, "TimerOrder", 0)
	type key struct{ due, q int64 }
	var seq []key
	for _, m := range checkOnce(t, g, "TimerOrder", 0, 1) {
		due, _ := strconv.ParseInt(m.Properties[broker.TimerOutMS], 10, 64)
		seq = append(seq, key{due, parked[m.UniqKey()]})
	}
	if !sort.SliceIsSorted(seq, func(a, b int) bool { return seq[a].due < seq[b].due || seq[a].due == seq[b].due && seq[a].q < seq[b].q }) {
		t.Fatalf("delivered out of due order: %v", seq)
	}
}

// TestTimerExactlyOnceAcrossLeaderKill parks timers, kills the leader
// before they are due and again while it delivers, and checks that each
// is delivered exactly once and the replicas agree.
func TestTimerExactlyOnceAcrossLeaderKill(t *testing.T) {
	clk := &testClock{}
	tc := timerCluster(t, 3, clk)
	c := newProdClient(t)
	send(t, tc, c, "TimerKill", 0, nil, "plain")
	for i := 0; i < 40; i++ {
		send(t, tc, c, "TimerKill", 1, timerProps(message.PropertyTimerDelaySec, 60), fmt.Sprintf("d%d", i))
	}
	leaderID, _, _ := leaderOf(t, tc)
	tc.Kill(leaderID)
	clk.advance(61 * time.Second)
	_, _, g := leaderOf(t, tc)
	broker.WaitUntil(t, 20*time.Second, "every timer delivered", func() bool { return allDelivered(g) })
	checkOnce(t, g, "TimerKill", 1, 0)
	tc.Restart(leaderID)
	if err := tc.Raft.WaitConverged(testCtx(t)); err != nil {
		t.Fatal(err)
	}

	// Again, killing the leader as soon as it has delivered something.
	for i := 0; i < 1500; i++ {
		send(t, tc, c, "TimerKill", 2, timerProps(message.PropertyTimerDelaySec, 30), fmt.Sprintf("e%d", i))
	}
	leaderID, _, g = leaderOf(t, tc)
	broker.WaitUntil(t, 20*time.Second, "the leader indexed every timer", func() bool {
		b := tc.Broker(leaderID)
		return b != nil && b.TimerIndexLenForTest() == queueLen(g, broker.TimerTopic, 0)
	})
	clk.advance(31 * time.Second)
	broker.WaitUntil(t, 20*time.Second, "a first delivery", func() bool { return queueLen(g, "TimerKill", 2) > 0 })
	tc.Kill(leaderID)
	_, _, g = leaderOf(t, tc)
	broker.WaitUntil(t, 30*time.Second, "every timer delivered", func() bool { return allDelivered(g) })
	checkOnce(t, g, "TimerKill", 2, 0)
	tc.Restart(leaderID)
	if err := tc.Raft.WaitConverged(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := tc.Raft.CompareReplicas(); err != nil {
		t.Fatal(err)
	}
}

// TestTimerIndexRecoversAfterRestart restarts a node cleanly and after
// losing its index checkpoint: both times the index is rebuilt and every
// timer is delivered once.
func TestTimerIndexRecoversAfterRestart(t *testing.T) {
	clk := &testClock{}
	tc := timerCluster(t, 1, clk)
	c := newProdClient(t)
	id, _, g := leaderOf(t, tc)
	send(t, tc, c, "TimerRestart", 0, nil, "plain")
	for i := 0; i < 50; i++ {
		send(t, tc, c, "TimerRestart", 0, timerProps(message.PropertyTimerDelaySec, int64(60+i)), fmt.Sprint(i))
	}
	indexed := func() bool {
		b := tc.Broker(id)
		return b != nil && b.TimerIndexLenForTest() == queueLen(g, broker.TimerTopic, 0)
	}
	broker.WaitUntil(t, 10*time.Second, "every timer indexed", indexed)
	dir := tc.Broker(id).TimerDirForTest()
	tc.Kill(id)
	tc.Restart(id)
	_, _, g = leaderOf(t, tc)
	broker.WaitUntil(t, 10*time.Second, "every timer indexed after a restart", indexed)

	clk.advance(85 * time.Second) // about half of them due
	broker.WaitUntil(t, 10*time.Second, "half of the timers delivered", func() bool { return timerDelivered(g) >= 26 })
	tc.Kill(id)
	if err := os.Remove(filepath.Join(dir, "checkpoint")); err != nil {
		t.Fatal(err)
	}
	tc.Restart(id)
	_, _, g = leaderOf(t, tc)
	broker.WaitUntil(t, 10*time.Second, "the index rebuilt", indexed)
	clk.advance(time.Minute)
	broker.WaitUntil(t, 10*time.Second, "every timer delivered", func() bool { return allDelivered(g) })
	checkOnce(t, g, "TimerRestart", 0, 1)
}

func TestPendingTimersAndTransactionsListed(t *testing.T) {
	clk := &testClock{}
	tc := timerCluster(t, 3, clk)
	c := newProdClient(t)
	send(t, tc, c, "TimerList", 0, nil, "plain")
	base := clk.ms()
	for i, d := range []int64{60_000, 30_000, 90_000} {
		send(t, tc, c, "TimerList", i, timerProps(message.PropertyTimerDeliverMS, base+d), fmt.Sprint(d))
	}
	mustOK(t, ask(t, tc, c, func() *remoting.Command {
		half := broker.SendRequest("TimerList", 1, nil, "half")
		half.ExtFields["sysFlag"] = strconv.Itoa(int(message.SysFlagTransactionPrepared))
		return half
	}))
	_, _, g := leaderOf(t, tc)
	pending := func(limit int) protocol.PendingTimers {
		t.Helper()
		resp := ask(t, tc, c, func() *remoting.Command {
			return protocol.PendingListHeader{Limit: limit}.Request(remoting.ListPendingTimers)
		})
		mustOK(t, resp)
		p, err := protocol.DecodePendingTimers(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	n := queueLen(g, broker.TimerTopic, 0)
	p := pending(2)
	if p.Count != n || p.NextDueMs != base+30_000 || len(p.Timers) != 2 || p.Timers[0].DueMs != base+30_000 ||
		p.Timers[1].DueMs > base+60_000 || p.Timers[0].Topic != "TimerList" || p.Timers[0].QueueID != 1 ||
		p.MaxDelayMs != broker.TimerMaxDefault.Milliseconds() {
		t.Fatalf("pending timers %+v (%d parked)", p, n)
	}
	clk.advance(70 * time.Second)
	broker.WaitUntil(t, 10*time.Second, "the timers due delivered", func() bool { return pending(5).NextDueMs == base+90_000 })
	if p := pending(5); p.Count != int64(len(parkedFor(t, g, "TimerList", 2))) || p.Timers[0].Topic != "TimerList" || p.Timers[0].QueueID != 2 {
		t.Fatalf("pending timers after the first deliveries %+v", p)
	}

	// Asked of a follower: forwarded to the leader.
	leaderID, _, _ := leaderOf(t, tc)
	_, faddr := followerOf(t, tc, leaderID)
	resp := invoke(t, c, faddr, protocol.PendingListHeader{Limit: 5}.Request(remoting.ListPendingTransactions))
	if resp.Code != remoting.Success {
		resp = ask(t, tc, c, func() *remoting.Command {
			return protocol.PendingListHeader{Limit: 5}.Request(remoting.ListPendingTransactions)
		})
	}
	mustOK(t, resp)
	x, err := protocol.DecodePendingTransactions(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if x.Count < 1 || len(x.Transactions) < 1 || x.Transactions[0].ProducerGroup != "pg1" || x.Transactions[0].Topic != "TimerList" ||
		x.Transactions[0].CheckTimes != 0 || x.Transactions[0].AgeMs < 70_000 {
		t.Fatalf("pending transactions %+v", x)
	}
	if resp := ask(t, tc, c, func() *remoting.Command {
		return remoting.NewRequest(remoting.ListPendingTimers, map[string]string{"limit": "0"}, nil)
	}); resp.Code != remoting.InvalidParameter {
		t.Fatalf("a limit of 0: %d %s", resp.Code, resp.Remark)
	}
}
