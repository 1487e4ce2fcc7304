package broker_test

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// --- helpers shared by the producer-side tests ------------------------------

func newProdClient(t testing.TB) *remoting.Client {
	t.Helper()
	c := remoting.NewClient(remoting.ClientConfig{})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func invoke(t testing.TB, c *remoting.Client, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, addr, req)
	if err != nil {
		t.Fatalf("invoke %s on %s: %v", remoting.RequestCodeName(req.Code), addr, err)
	}
	return resp
}

// leaderOf waits for the group's leader and returns its node id, client
// address and group.
func leaderOf(t testing.TB, tc *brokertest.Cluster) (string, string, *dledger.Group) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := tc.Raft.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n.ID, tc.Peers[n.ID], n.Group()
}

// followerOf returns a running follower's id and client address.
func followerOf(t testing.TB, tc *brokertest.Cluster, leaderID string) (string, string) {
	t.Helper()
	for _, n := range tc.Raft.Up() {
		if n.ID != leaderID {
			return n.ID, tc.Peers[n.ID]
		}
	}
	t.Fatal("no follower")
	return "", ""
}

// readBack decodes the record at a queue offset from a node's store.
func readBack(t testing.TB, g *dledger.Group, topic string, queueID int32, offset int64) *message.Ext {
	t.Helper()
	res, err := messagestore.Of(g).Get(topic, queueID, offset, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	if len(res.Records) != 1 {
		t.Fatalf("Get %s/%d@%d: status %v, %d records", topic, queueID, offset, res.Status, len(res.Records))
	}
	m, _, err := message.DecodeRecord(res.Records[0].Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustOK(t testing.TB, resp *remoting.Command) {
	t.Helper()
	if resp.Code != remoting.Success {
		t.Fatalf("code %d (%s) remark %q", resp.Code, remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
}

// --- tests -----------------------------------------------------------------

// TestProducerSide runs the send and admin scenarios against one 3-node
// cluster (starting one costs seconds).
func TestProducerSide(t *testing.T) {
	tc := brokertest.StartClusterWith(t, 3, func(_ int, c *broker.Config) { c.MaxMessageSize = 64 << 10 },
		func(_ int, c *dledger.Config) { c.Store.MaxMessageSize = 64 << 10 })
	c := newProdClient(t)
	t.Run("SingleSend", func(t *testing.T) { testSingleSend(t, tc, c) })
	t.Run("BatchSend", func(t *testing.T) { testBatchSend(t, tc, c) })
	t.Run("FollowerForwards", func(t *testing.T) { testFollowerForwards(t, tc, c) })
	t.Run("AutoCreateRoute", func(t *testing.T) { testAutoCreateRoute(t, tc, c) })
	t.Run("RetryAndDLQ", func(t *testing.T) { testRetryAndDLQ(t, tc, c) })
	t.Run("HostileSend", func(t *testing.T) { testHostileSend(t, tc, c) })
	t.Run("Registration", func(t *testing.T) { testRegistration(t, tc) })
	t.Run("AdminRoundTrips", func(t *testing.T) { testAdminRoundTrips(t, tc, c) })
	t.Run("SubscriptionGroups", func(t *testing.T) { testSubscriptionGroups(t, tc, c) })
	// Last: it raises the group's maxMessageSize.
	t.Run("UpdateBrokerConfig", func(t *testing.T) { testUpdateBrokerConfig(t, tc, c) })
}

// testUpdateBrokerConfig: UPDATE_BROKER_CONFIG raises the group's
// maxMessageSize through any node (a follower forwards it), and every
// node's sends and GET_BROKER_CONFIG follow; it may not shrink, and a key
// that cannot change at run time is refused by name.
func testUpdateBrokerConfig(t *testing.T, tc *brokertest.Cluster, c *remoting.Client) {
	leaderID, leader, g := leaderOf(t, tc)
	_, follower := followerOf(t, tc, leaderID)
	big := strings.Repeat("x", 100<<10)
	if r := invoke(t, c, leader, broker.SendRequest("BigTopic", 0, nil, big)); r.Code != remoting.MessageIllegal {
		t.Fatalf("100 KiB under a 64 KiB limit: %d %q", r.Code, r.Remark)
	}
	update := func(body string) *remoting.Command {
		return invoke(t, c, follower, remoting.NewRequest(remoting.UpdateBrokerConfig, nil, []byte(body)))
	}
	if r := update("maxMessageSize=262144\n"); r.Code != remoting.Success {
		t.Fatalf("raise maxMessageSize: %d %q", r.Code, r.Remark)
	}
	broker.WaitFor(t, "every node at the new limit", func() bool {
		for _, n := range tc.Raft.Up() {
			r := invoke(t, c, tc.Peers[n.ID], remoting.NewRequest(remoting.GetBrokerConfig, nil, nil))
			if protocol.DecodeBrokerConfig(r.Body)["maxMessageSize"] != "262144" {
				return false
			}
		}
		return true
	})
	r := invoke(t, c, leader, broker.SendRequest("BigTopic", 0, nil, big))
	mustOK(t, r)
	if m := readBack(t, g, "BigTopic", 0, 0); string(m.Body) != big {
		t.Fatalf("stored %d bytes", len(m.Body))
	}
	for body, want := range map[string]string{
		"maxMessageSize=1024":                             "may only grow",
		"brokerPermission=4":                              "brokerPermission cannot change at run time",
		"maxMessageSize=524288\nflushDiskType=SYNC_FLUSH": "flushDiskType cannot change at run time",
		"": "names no key",
	} {
		if r := update(body); r.Code != remoting.InvalidParameter || !strings.Contains(r.Remark, want) {
			t.Fatalf("UPDATE_BROKER_CONFIG %q: %d %q, want INVALID_PARAMETER naming %q", body, r.Code, r.Remark, want)
		}
	}
	if s, _ := g.Metadata().Settings(); s.MaxMessageSize != 262144 {
		t.Fatalf("a refused update changed the group's limit to %d", s.MaxMessageSize)
	}
}

func testSingleSend(t *testing.T, tc *brokertest.Cluster, c *remoting.Client) {
	_, addr, g := leaderOf(t, tc)
	props := map[string]string{"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "C00002024A2200000000941699480001"}
	resp := invoke(t, c, addr, broker.SendRequest("SingleTopic", 1, props, "hello"))
	mustOK(t, resp)
	ext := resp.ExtFields
	if ext["queueId"] != "1" || ext["queueOffset"] != "0" || ext["transactionId"] != props["UNIQ_KEY"] ||
		ext["MSG_REGION"] != "DefaultRegion" || ext["TRACE_ON"] != "true" {
		t.Fatalf("response ext %v", ext)
	}
	m := readBack(t, g, "SingleTopic", 1, 0)
	if m.Topic != "SingleTopic" || string(m.Body) != "hello" || m.QueueOffset != 0 || m.QueueID != 1 {
		t.Fatalf("stored %+v", m)
	}
	for k, v := range props {
		if m.Property(k) != v {
			t.Fatalf("property %s = %q, want %q", k, m.Property(k), v)
		}
	}
	if m.Property("CLUSTER") != "DefaultCluster" {
		t.Fatalf("CLUSTER = %q", m.Property("CLUSTER"))
	}
	storeHost := netip.MustParseAddrPort(addr)
	if m.StoreHost != storeHost || ext["msgId"] != message.OffsetMsgID(storeHost, m.PhysicalOffset) || len(ext["msgId"]) != 32 {
		t.Fatalf("msgId %s, store host %v offset %d", ext["msgId"], m.StoreHost, m.PhysicalOffset)
	}
	if m.BornHost.Addr() != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("born host %v", m.BornHost)
	}
	// A second send to the same queue gets the next queue offset.
	resp = invoke(t, c, addr, broker.SendRequest("SingleTopic", 1, map[string]string{"TAGS": "TagB"}, "again"))
	mustOK(t, resp)
	if resp.ExtFields["queueOffset"] != "1" || resp.ExtFields["transactionId"] == "" {
		t.Fatalf("second send ext %v", resp.ExtFields)
	}
}

func testBatchSend(t *testing.T, tc *brokertest.Cluster, c *remoting.Client) {
	_, addr, g := leaderOf(t, tc)
	resp := invoke(t, c, addr, broker.BatchRequest("BatchTopic", 2, broker.CapturedBatch()))
	mustOK(t, resp)
	ids := strings.Split(resp.ExtFields["msgId"], ",")
	if len(ids) != 2 || resp.ExtFields["queueId"] != "2" || resp.ExtFields["queueOffset"] != "0" {
		t.Fatalf("batch response ext %v", resp.ExtFields)
	}
	for i, want := range []struct{ body, tag string }{{"batch-1", "TagA"}, {"batch-2", "TagC"}} {
		m := readBack(t, g, "BatchTopic", 2, int64(i))
		if string(m.Body) != want.body || m.Tags() != want.tag || m.QueueOffset != int64(i) {
			t.Fatalf("item %d stored as %+v", i, m)
		}
		if m.OffsetMsgID() != ids[i] {
			t.Fatalf("item %d msgId %s, response says %s", i, m.OffsetMsgID(), ids[i])
		}
		if m.UniqKey() == "" || m.Property("CLUSTER") == "" {
			t.Fatalf("item %d lacks UNIQ_KEY or CLUSTER: %v", i, m.Properties)
		}
	}
	// Every replica holds the same UNIQ_KEY (the leader stamped it).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tc.Raft.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	want := readBack(t, g, "BatchTopic", 2, 0).UniqKey()
	for _, n := range tc.Raft.Up() {
		if got := readBack(t, n.Group(), "BatchTopic", 2, 0).UniqKey(); got != want {
			t.Fatalf("node %s UNIQ_KEY %s, leader %s", n.ID, got, want)
		}
	}
}

func testFollowerForwards(t *testing.T, tc *brokertest.Cluster, c *remoting.Client) {
	leaderID, leaderAddr, g := leaderOf(t, tc)
	_, faddr := followerOf(t, tc, leaderID)
	req := broker.SendRequest("ForwardTopic", 0, map[string]string{"TAGS": "F"}, "via follower")
	resp := invoke(t, c, faddr, req)
	mustOK(t, resp)
	m := readBack(t, g, "ForwardTopic", 0, 0)
	if string(m.Body) != "via follower" {
		t.Fatalf("stored %q", m.Body)
	}
	// The offset msgId names the leader's (the group's) store host.
	if resp.ExtFields["msgId"] != message.OffsetMsgID(netip.MustParseAddrPort(leaderAddr), m.PhysicalOffset) {
		t.Fatalf("msgId %s", resp.ExtFields["msgId"])
	}
	if m.BornHost.Addr() != netip.MustParseAddr("127.0.0.1") || m.BornHost.Port() == 0 {
		t.Fatalf("born host %v", m.BornHost)
	}
	// A batch is forwarded too.
	mustOK(t, invoke(t, c, faddr, broker.BatchRequest("ForwardTopic", 0, broker.CapturedBatch())))
	// A request forwarded once already is relayed again (views of the
	// leader may disagree while leadership moves), one relayed
	// MaxForwardHops times is not: no loops.
	req.SetExt(broker.ExtForwardedFrom, "127.0.0.1:1")
	mustOK(t, invoke(t, c, faddr, req))
	req.SetExt(broker.ExtForwardHops, strconv.Itoa(broker.MaxForwardHops))
	if resp := invoke(t, c, faddr, req); resp.Code != remoting.ServiceNotAvailable {
		t.Fatalf("request relayed %d times answered %d %q", broker.MaxForwardHops, resp.Code, resp.Remark)
	}
}

func testAutoCreateRoute(t *testing.T, tc *brokertest.Cluster, c *remoting.Client) {
	_, addr, g := leaderOf(t, tc)
	mustOK(t, invoke(t, c, addr, broker.SendRequest("AutoTopic", 3, nil, "x")))
	cfg, ok := g.Metadata().Topic("AutoTopic")
	if !ok || cfg.WriteQueueNums != 4 || cfg.ReadQueueNums != 4 || cfg.Perm != 6 {
		t.Fatalf("auto-created config %+v %v", cfg, ok)
	}
	// The registration ran before the answer: the route is there now.
	route, ok := tc.Namesrv.Table().Route("AutoTopic")
	if !ok || len(route.QueueDatas) != 1 || route.QueueDatas[0].WriteQueueNums != 4 ||
		route.BrokerDatas[0].BrokerAddrs[0] != addr {
		t.Fatalf("route %+v %v", route, ok)
	}
	// And so is TBW102 (perm 7), as a client asking the name server sees.
	resp := invoke(t, c, tc.NamesrvAddr(), remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "TBW102"}, nil))
	mustOK(t, resp)
	if !strings.Contains(string(resp.Body), `"perm":7`) || !strings.Contains(string(resp.Body), `"0":"`+addr+`"`) {
		t.Fatalf("TBW102 route %s", resp.Body)
	}
	// Unknown topic whose template is unknown: 17.
	req := broker.SendRequest("NoTemplateTopic", 0, nil, "x")
	req.ExtFields["defaultTopic"] = "NoSuchTemplate"
	if resp := invoke(t, c, addr, req); resp.Code != remoting.TopicNotExist {
		t.Fatalf("answered %d %q", resp.Code, resp.Remark)
	}
}

func testRetryAndDLQ(t *testing.T, tc *brokertest.Cluster, c *remoting.Client) {
	_, addr, g := leaderOf(t, tc)
	// The consumer's send-back fallback: %RETRY% topic, 1 queue.
	req := broker.SendRequest("%RETRY%cg1", 0, map[string]string{"RETRY_TOPIC": "T"}, "retry me")
	req.ExtFields["reconsumeTimes"] = "1"
	req.ExtFields["maxReconsumeTimes"] = "16"
	mustOK(t, invoke(t, c, addr, req))
	if cfg, ok := g.Metadata().Topic("%RETRY%cg1"); !ok || cfg.WriteQueueNums != 1 {
		t.Fatalf("retry topic %+v %v", cfg, ok)
	}
	// Retried too often: it goes to the group's dead-letter topic.
	req = broker.SendRequest("%RETRY%cg1", 0, nil, "dead")
	req.ExtFields["reconsumeTimes"] = "16"
	req.ExtFields["maxReconsumeTimes"] = "16"
	mustOK(t, invoke(t, c, addr, req))
	if m := readBack(t, g, "%DLQ%cg1", 0, 0); string(m.Body) != "dead" || m.ReconsumeTimes != 16 {
		t.Fatalf("DLQ holds %+v", m)
	}
}

func testHostileSend(t *testing.T, tc *brokertest.Cluster, c *remoting.Client) {
	_, addr, _ := leaderOf(t, tc)
	mustOK(t, invoke(t, c, addr, broker.SendRequest("HostileTopic", 0, nil, "ok")))
	mod := func(f func(r *remoting.Command)) *remoting.Command {
		r := broker.SendRequest("HostileTopic", 0, map[string]string{"TAGS": "a"}, "x")
		f(r)
		return r
	}
	cases := []struct {
		name string
		req  *remoting.Command
		code int32
	}{
		{"no ext", remoting.NewRequest(remoting.SendMessage, nil, []byte("x")), remoting.SystemError},
		{"missing topic", mod(func(r *remoting.Command) { delete(r.ExtFields, "topic") }), remoting.SystemError},
		{"garbage queueId", mod(func(r *remoting.Command) { r.ExtFields["queueId"] = "abc" }), remoting.SystemError},
		{"queueId overflow", mod(func(r *remoting.Command) { r.ExtFields["queueId"] = "99999999999" }), remoting.SystemError},
		{"garbage bornTimestamp", mod(func(r *remoting.Command) { r.ExtFields["bornTimestamp"] = "1e9" }), remoting.SystemError},
		{"queueId out of range", mod(func(r *remoting.Command) { r.ExtFields["queueId"] = "4" }), remoting.InvalidParameter},
		{"bad topic name", mod(func(r *remoting.Command) { r.ExtFields["topic"] = "a b" }), remoting.InvalidParameter},
		{"topic too long", mod(func(r *remoting.Command) { r.ExtFields["topic"] = strings.Repeat("t", 128) }), remoting.InvalidParameter},
		{"send to TBW102", mod(func(r *remoting.Command) { r.ExtFields["topic"] = "TBW102" }), remoting.InvalidParameter},
		{"bad properties", mod(func(r *remoting.Command) { r.ExtFields["properties"] = "\x01\x01" }), remoting.MessageIllegal},
		{"properties too long", mod(func(r *remoting.Command) {
			r.ExtFields["properties"] = "K\x01" + strings.Repeat("v", 40000) + "\x02"
		}), remoting.MessageIllegal},
		{"body too large", mod(func(r *remoting.Command) { r.Body = make([]byte, 65<<10) }), remoting.MessageIllegal},
		{"garbage batch", func() *remoting.Command {
			r := broker.BatchRequest("HostileTopic", 0, []byte{0, 0, 0, 99, 1, 2, 3})
			return r
		}(), remoting.MessageIllegal},
		{"empty batch", broker.BatchRequest("HostileTopic", 0, nil), remoting.MessageIllegal},
		{"batch to retry topic", broker.BatchRequest("%RETRY%x", 0, broker.CapturedBatch()), remoting.MessageIllegal},
	}
	for _, cse := range cases {
		t.Run(cse.name, func(t *testing.T) {
			resp := invoke(t, c, addr, cse.req)
			if resp.Code != cse.code {
				t.Fatalf("code %d %q, want %d", resp.Code, resp.Remark, cse.code)
			}
			if resp.Remark == "" {
				t.Fatal("error response without remark")
			}
		})
	}
	// Still serving.
	resp := invoke(t, c, addr, broker.SendRequest("HostileTopic", 0, nil, "still ok"))
	mustOK(t, resp)
	if resp.ExtFields["queueOffset"] != "1" {
		t.Fatalf("after hostile input: %v", resp.ExtFields)
	}
}

// TestLeaderFailover kills the leader: the new leader registers as
// brokerId 0 with a higher term and sends resume on it.
func TestLeaderFailover(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	c := newProdClient(t)
	oldID, oldAddr, g := leaderOf(t, tc)
	mustOK(t, invoke(t, c, oldAddr, broker.SendRequest("FailoverTopic", 0, nil, "before")))
	oldTerm := int64(g.Role().Term)
	broker.WaitUntil(t, 10*time.Second, "leader registered as id 0", func() bool {
		return memberID(tc, oldAddr) == 0
	})

	tc.Kill(oldID)
	newID, newAddr, ng := leaderOf(t, tc)
	if newID == oldID {
		t.Fatal("killed node still leads")
	}
	broker.WaitUntil(t, 10*time.Second, "new leader registered as id 0 with a higher term", func() bool {
		for _, m := range tc.Namesrv.Table().Members() {
			if m.BrokerID == 0 && m.Addr == newAddr && m.Term > oldTerm {
				return true
			}
		}
		return false
	})
	resp := invoke(t, c, newAddr, broker.SendRequest("FailoverTopic", 0, nil, "after"))
	mustOK(t, resp)
	if resp.ExtFields["queueOffset"] != "1" {
		t.Fatalf("after failover: %v", resp.ExtFields)
	}
	if m := readBack(t, ng, "FailoverTopic", 0, 1); string(m.Body) != "after" {
		t.Fatalf("stored %q", m.Body)
	}
	// The surviving follower forwards to the new leader.
	_, faddr := followerOf(t, tc, newID)
	broker.WaitUntil(t, 10*time.Second, "follower forwards to the new leader", func() bool {
		return invoke(t, c, faddr, broker.SendRequest("FailoverTopic", 0, nil, "fwd")).Code == remoting.Success
	})
}

// memberID is the broker id addr is registered under, or -1.
func memberID(tc *brokertest.Cluster, addr string) int64 {
	for _, m := range tc.Namesrv.Table().Members() {
		if m.Addr == addr {
			return m.BrokerID
		}
	}
	return -1
}

func BenchmarkSendLeader(b *testing.B) {
	tc := brokertest.StartCluster(b, 3, nil)
	c := newProdClient(b)
	_, addr, _ := leaderOf(b, tc)
	body := strings.Repeat("x", 1024)
	mustOK(b, invoke(b, c, addr, broker.SendRequest("BenchTopic", 0, nil, body)))
	b.SetBytes(int64(len(body)))
	b.SetParallelism(16) // many producers, as group commit expects
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			resp, err := c.Invoke(ctx, addr, broker.SendRequest("BenchTopic", i%4, map[string]string{"TAGS": "T"}, body))
			cancel()
			if err != nil || resp.Code != remoting.Success {
				b.Errorf("send: %v %v", err, resp)
				return
			}
		}
	})
}

// TestSendsThroughLeadershipTransfers keeps senders busy on the leader's
// address while leadership moves five times: a send that arrives while
// the transfer is under way is held and stored by the next leader
// (forwarded), never refused, so a client that routes to the old leader
// until its next route poll sees no failed send; and one in flight when
// the leader steps down is answered from what was committed, never
// "unknown" (which makes a client's retry store it twice).
func TestSendsThroughLeadershipTransfers(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	c := newProdClient(t)
	_, addr, _ := leaderOf(t, tc)
	mustOK(t, invoke(t, c, addr, broker.SendRequest("TransferTopic", 0, nil, "first")))

	var (
		stop       = make(chan struct{})
		wg         sync.WaitGroup
		mu         sync.Mutex
		ok         int
		unknown    int
		unknownWhy string
		refused    []string
	)
	for s := 0; s < 8; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				resp, err := c.Invoke(ctx, addr, broker.SendRequest("TransferTopic", s%4, nil, fmt.Sprintf("s%d-%d", s, i)))
				cancel()
				mu.Lock()
				switch {
				case err == nil && resp.Code == remoting.Success:
					ok++
				case err == nil && resp.Code == remoting.SystemError && strings.Contains(resp.Remark, "outcome unknown"):
					// Proposed as the old leader stepped down, and not
					// resolved from what it applied next.
					unknown++
					unknownWhy = resp.Remark
				case err != nil:
					refused = append(refused, err.Error())
				default:
					refused = append(refused, fmt.Sprintf("%d %s", resp.Code, resp.Remark))
				}
				mu.Unlock()
			}
		}(s)
	}
	sent := func() int { mu.Lock(); defer mu.Unlock(); return ok }
	for i := 0; i < 5; i++ {
		before := sent()
		broker.WaitUntil(t, 10*time.Second, "sends before the transfer", func() bool { return sent() >= before+50 })
		var last error
		broker.WaitUntil(t, 20*time.Second, fmt.Sprintf("transfer %d done (last error: %v)", i, last), func() bool {
			_, _, g := leaderOf(t, tc)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			last = g.TransferLeadership(ctx, "")
			return last == nil
		})
	}
	before := sent()
	broker.WaitUntil(t, 10*time.Second, "sends after the last transfer", func() bool { return sent() >= before+50 })
	close(stop)
	wg.Wait()
	if len(refused) > 0 {
		t.Fatalf("%d of %d sends refused during leadership transfers, first: %s", len(refused), ok+unknown+len(refused), refused[0])
	}
	// A send proposed just before the leader stepped down is resolved by
	// what the node applies next (stored, or forwarded to the new leader);
	// only one the node could not resolve in time stays unknown.
	t.Logf("%d sends stored, %d with an unknown outcome (last: %s)", ok, unknown, unknownWhy)
}
