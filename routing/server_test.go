package routing

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// registerAll registers every request with the name server s and waits
// until each is in its table (confirmed by its node, as s's Checker says).
func registerAll(t testing.TB, s *Server, c *remoting.Client, reqs ...RegisterRequest) {
	t.Helper()
	for _, r := range reqs {
		if err := RegisterBroker(ctxGuard(t), c, s.Addr().String(), r); err != nil {
			t.Fatalf("register %s id %d: %v", r.BrokerAddr, r.BrokerID, err)
		}
		waitMember(t, s, r.BrokerName, r.BrokerAddr, r.BrokerID, r.Term)
	}
}

// waitMember waits until s routes addr as id of group at term.
func waitMember(t testing.TB, s *Server, group, addr string, id, term int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s registered as %s id %d at term %d", addr, group, id, term), func() bool {
		return hasMember(s, group, addr, id, term)
	})
}

// hasMember reports whether s routes addr as id of group at term.
func hasMember(s *Server, group, addr string, id, term int64) bool {
	for _, m := range s.Table().Members() {
		if m.BrokerName == group && m.Addr == addr && m.BrokerID == id && m.Term == term {
			return true
		}
	}
	return false
}

func TestServerRouteOfThreeMemberGroup(t *testing.T) {
	s, _ := startServer(t, Config{})
	ns := s.Addr().String()
	c := newClient(t)
	topics := []protocol.TopicConfig{topic("TestTopic", 4), {TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7}}
	registerAll(t, s, c, brokerReq(0, 0, 1, topics...), brokerReq(1, 1, 1, topics...), brokerReq(2, 2, 1, topics...))

	resp := routeOf(t, c, ns, "TestTopic")
	if resp.Code != remoting.Success || len(resp.Body) == 0 {
		t.Fatalf("route: %v", resp)
	}
	// Field names, exactly.
	if got := objectKeys(t, resp.Body); !slices.Equal(got, []string{"queueDatas", "brokerDatas", "filterServerTable"}) {
		t.Fatalf("route keys %v", got)
	}
	var shape struct {
		QueueDatas  []json.RawMessage `json:"queueDatas"`
		BrokerDatas []json.RawMessage `json:"brokerDatas"`
	}
	if err := json.Unmarshal(resp.Body, &shape); err != nil {
		t.Fatal(err)
	}
	if got := objectKeys(t, shape.QueueDatas[0]); !slices.Equal(got, []string{"brokerName", "readQueueNums", "writeQueueNums", "perm", "topicSysFlag"}) {
		t.Fatalf("queueData keys %v", got)
	}
	if got := objectKeys(t, shape.BrokerDatas[0]); !slices.Equal(got, []string{"cluster", "brokerName", "brokerAddrs"}) {
		t.Fatalf("brokerData keys %v", got)
	}

	// What the client makes of it.
	r, err := decodeLikeClient(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	wantQD := clientQueueData{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}
	if len(r.QueueDataList) != 1 || *r.QueueDataList[0] != wantQD {
		t.Fatalf("queueDatas %+v", r.QueueDataList)
	}
	if len(r.BrokerDataList) != 1 {
		t.Fatalf("brokerDatas %+v", r.BrokerDataList)
	}
	bd := r.BrokerDataList[0]
	wantAddrs := map[int64]string{0: addr(0), 1: addr(1), 2: addr(2)}
	if bd.Cluster != "DefaultCluster" || bd.BrokerName != "broker-a" || !maps.Equal(bd.BrokerAddresses, wantAddrs) {
		t.Fatalf("brokerData %+v", bd)
	}
	// brokerAddrs keys are JSON strings and the object is compact.
	var keyed map[string]string
	if err := json.Unmarshal([]byte(bd.rawAddrs), &keyed); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(keyed)); !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Fatalf("brokerAddrs keys %v", got)
	}
	if strings.ContainsAny(bd.rawAddrs, " \t\n") {
		t.Fatalf("brokerAddrs not compact: %s", bd.rawAddrs)
	}

	// The auto-create template is served like any topic.
	if tbw := mustRoute(t, c, ns, "TBW102"); tbw.QueueDataList[0].Perm != 7 {
		t.Fatalf("TBW102 %+v", tbw.QueueDataList[0])
	}
}

func TestServerUnknownTopic(t *testing.T) {
	s, _ := startServer(t, Config{})
	c := newClient(t)
	resp := routeOf(t, c, s.Addr().String(), "Nope")
	if resp.Code != remoting.TopicNotExist || !strings.Contains(resp.Remark, "Nope") || len(resp.Body) != 0 {
		t.Fatalf("unknown topic: %v", resp)
	}
	// TBW102 too, while no broker reports it.
	registerAll(t, s, c, brokerReq(0, 0, 1, topic("T", 1)))
	if resp := routeOf(t, c, s.Addr().String(), "TBW102"); resp.Code != remoting.TopicNotExist {
		t.Fatalf("TBW102 without a template: %v", resp)
	}
}

func TestServerLeaderChange(t *testing.T) {
	s, _ := startServer(t, Config{})
	ns := s.Addr().String()
	c := newClient(t)
	tp := topic("T", 4)
	registerAll(t, s, c, brokerReq(0, 0, 1, tp), brokerReq(1, 1, 1, tp), brokerReq(2, 2, 1, tp))

	// Node 1 wins term 2 and registers as leader at once.
	registerAll(t, s, c, brokerReq(1, 0, 2, tp))
	if got := mustRoute(t, c, ns, "T").BrokerDataList[0].BrokerAddresses; !maps.Equal(got, map[int64]string{0: addr(1), 2: addr(2)}) {
		t.Fatalf("after election %v", got)
	}
	// The deposed leader's periodic registration, sent before it learned
	// of term 2, is fenced and tells it so.
	err := RegisterBroker(ctxGuard(t), c, ns, brokerReq(0, 0, 1, tp))
	if !errors.Is(err, ErrStaleTerm) {
		t.Fatalf("stale leader: %v", err)
	}
	var ce *remoting.CodeError
	if !errors.As(err, &ce) || ce.Code != remoting.NotLeaderForQueue {
		t.Fatalf("stale leader code: %v", err)
	}
	// It re-registers as a follower once it knows the new term.
	registerAll(t, s, c, brokerReq(0, 1, 2, tp), brokerReq(2, 2, 2, tp))
	if got := mustRoute(t, c, ns, "T").BrokerDataList[0].BrokerAddresses; !maps.Equal(got, map[int64]string{0: addr(1), 1: addr(0), 2: addr(2)}) {
		t.Fatalf("after rejoin %v", got)
	}
	// A follower learns the leader's address from the answer.
	resp := invokeRegister(t, c, ns, brokerReq(2, 2, 2, tp))
	if resp.Code != remoting.Success || resp.ExtFields["masterAddr"] != addr(1) || resp.ExtFields["haServerAddr"] != addr(1) {
		t.Fatalf("follower registration answer %v", resp)
	}
}

// invokeRegister sends a REGISTER_BROKER built from req and returns the
// raw response.
func invokeRegister(t testing.TB, c *remoting.Client, ns string, req RegisterRequest) *remoting.Command {
	t.Helper()
	cmd, err := RegisterCommand(req)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Invoke(ctxGuard(t), ns, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestServerCompressedRegistration(t *testing.T) {
	s, _ := startServer(t, Config{})
	c := newClient(t)
	req := brokerReq(0, 0, 1, topic("Zipped", 3))
	req.Compressed = true
	registerAll(t, s, c, req)
	if r := mustRoute(t, c, s.Addr().String(), "Zipped"); r.QueueDataList[0].WriteQueueNums != 3 {
		t.Fatalf("route %+v", r.QueueDataList[0])
	}
}

func TestServerTwoNameServersAreIndependent(t *testing.T) {
	s1, _ := startServer(t, Config{})
	s2, _ := startServer(t, Config{})
	ns1, ns2 := s1.Addr().String(), s2.Addr().String()
	c := newClient(t)
	tp := topic("T", 2)

	registerAll(t, s1, c, brokerReq(0, 0, 1, tp))
	if resp := routeOf(t, c, ns2, "T"); resp.Code != remoting.TopicNotExist {
		t.Fatalf("ns2 knows a broker that registered only with ns1: %v", resp)
	}
	registerAll(t, s2, c, brokerReq(0, 0, 1, tp), brokerReq(1, 1, 1, tp))
	// A change on one name server does not touch the other.
	if err := UnregisterBroker(ctxGuard(t), c, ns2, UnregisterRequest{ClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerAddr: addr(0)}); err != nil {
		t.Fatal(err)
	}
	if got := mustRoute(t, c, ns1, "T").BrokerDataList[0].BrokerAddresses; !maps.Equal(got, map[int64]string{0: addr(0)}) {
		t.Fatalf("ns1 %v", got)
	}
	if got := mustRoute(t, c, ns2, "T").BrokerDataList[0].BrokerAddresses; !maps.Equal(got, map[int64]string{1: addr(1)}) {
		t.Fatalf("ns2 %v", got)
	}
}

func TestServerExpiry(t *testing.T) {
	s, clock := startServer(t, Config{BrokerExpiry: 120 * time.Second, ScanInterval: 10 * time.Second})
	ns := s.Addr().String()
	c := newClient(t)
	registerAll(t, s, c, brokerReq(0, 0, 1, topic("T", 1)))
	if clock.Tickers() != 1 {
		t.Fatalf("scan tickers: %d", clock.Tickers())
	}

	clock.Advance(120 * time.Second)         // due, but not past the expiry
	registerAll(t, s, c, brokerReq(1, 1, 1)) // heartbeat of another node at +120 s
	if len(s.Table().Members()) != 2 {
		t.Fatalf("members at +120s: %+v", s.Table().Members())
	}
	clock.Advance(10 * time.Second) // +130 s: node 0 is 130 s silent
	waitFor(t, "the silent leader to expire", func() bool {
		m := s.Table().Members()
		return len(m) == 1 && m[0].Addr == addr(1)
	})
	// The group keeps its topics while a follower lives: consumers pull
	// from followers during an election.
	if got := mustRoute(t, c, ns, "T").BrokerDataList[0].BrokerAddresses; !maps.Equal(got, map[int64]string{1: addr(1)}) {
		t.Fatalf("route after the leader expired %v", got)
	}
	clock.Advance(120 * time.Second) // +250 s: node 1 is 130 s silent
	waitFor(t, "the group to expire", func() bool { return len(s.Table().Members()) == 0 })
	if resp := routeOf(t, c, ns, "T"); resp.Code != remoting.TopicNotExist {
		t.Fatalf("route after expiry %v", resp)
	}
}

func TestServerConnectionCloseRemovesBroker(t *testing.T) {
	s, _ := startServer(t, Config{})
	leader := newClient(t)
	follower := newClient(t)
	tp := topic("T", 1)
	registerAll(t, s, leader, brokerReq(0, 0, 1, tp))
	registerAll(t, s, follower, brokerReq(1, 1, 1, tp))

	_ = leader.Close() // the leader process dies
	waitFor(t, "the closed connection's broker to go", func() bool {
		r, ok := s.Table().Route("T")
		return ok && maps.Equal(r.BrokerDatas[0].BrokerAddrs, map[int64]string{1: addr(1)})
	})
	_ = follower.Close()
	waitFor(t, "the group to go", func() bool { return len(s.Table().Members()) == 0 })
}

func TestServerClusterInfoTopicListDelete(t *testing.T) {
	s, _ := startServer(t, Config{})
	ns := s.Addr().String()
	c := newClient(t)
	b := brokerReq(3, 0, 1, topic("X", 1))
	b.BrokerName, b.ClusterName = "broker-b", "Other"
	registerAll(t, s, c, brokerReq(0, 0, 1, topic("A", 1), topic("B", 1)), brokerReq(1, 1, 1), b)

	resp := invoke(t, c, ns, remoting.GetBrokerClusterInfo, nil, nil)
	if resp.Code != remoting.Success {
		t.Fatalf("cluster info %v", resp)
	}
	if got := objectKeys(t, resp.Body); !slices.Equal(got, []string{"brokerAddrTable", "clusterAddrTable"}) {
		t.Fatalf("cluster info keys %v", got)
	}
	var info protocol.ClusterInfo
	if err := json.Unmarshal(resp.Body, &info); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(info.BrokerAddrTable["broker-a"].BrokerAddrs, map[int64]string{0: addr(0), 1: addr(1)}) ||
		info.BrokerAddrTable["broker-b"].Cluster != "Other" ||
		!slices.Equal(info.ClusterAddrTable["DefaultCluster"], []string{"broker-a"}) ||
		!slices.Equal(info.ClusterAddrTable["Other"], []string{"broker-b"}) {
		t.Fatalf("cluster info %s", resp.Body)
	}

	resp = invoke(t, c, ns, remoting.GetAllTopicListFromNameServer, nil, nil)
	if resp.Code != remoting.Success || string(resp.Body) != `{"topicList":["A","B","X"]}` {
		t.Fatalf("topic list %v %s", resp, resp.Body)
	}
	for cluster, want := range map[string]string{"DefaultCluster": `{"topicList":["A","B"]}`, "Other": `{"topicList":["X"]}`, "Nowhere": `{"topicList":[]}`} {
		resp = send(t, c, ns, (&protocol.GetTopicsByClusterRequestHeader{Cluster: cluster}).Request())
		if resp.Code != remoting.Success || string(resp.Body) != want {
			t.Fatalf("topics of cluster %s: %v %s, want %s", cluster, resp, resp.Body, want)
		}
	}
	if resp = invoke(t, c, ns, remoting.GetTopicsByCluster, nil, nil); resp.Code != remoting.SystemError {
		t.Fatalf("topics of no cluster: %v", resp)
	}
	// GET_SYSTEM_TOPIC_LIST_FROM_NS: cluster and group names, and a broker
	// of the first group to ask for its own.
	resp = invoke(t, c, ns, remoting.GetSystemTopicListFromNS, nil, nil)
	if want := `{"topicList":["DefaultCluster","Other","broker-a","broker-b"],"brokerAddr":"` + addr(0) + `"}`; resp.Code != remoting.Success || string(resp.Body) != want {
		t.Fatalf("system topics %v %s, want %s", resp, resp.Body, want)
	}

	resp = invoke(t, c, ns, remoting.DeleteTopicInNamesrv, map[string]string{"topic": "A"}, nil)
	if resp.Code != remoting.Success {
		t.Fatalf("delete %v", resp)
	}
	if resp := routeOf(t, c, ns, "A"); resp.Code != remoting.TopicNotExist {
		t.Fatalf("deleted topic still routed: %v", resp)
	}
	resp = invoke(t, c, ns, remoting.DeleteTopicInNamesrv, map[string]string{"topic": "X", "clusterName": "DefaultCluster"}, nil)
	if resp.Code != remoting.Success {
		t.Fatalf("delete %v", resp)
	}
	mustRoute(t, c, ns, "X") // another cluster's topic survives a cluster-scoped delete
}

func TestServerHostileInput(t *testing.T) {
	s, _ := startServer(t, Config{})
	ns := s.Addr().String()
	c := newClient(t)
	good, err := RegisterCommand(brokerReq(0, 0, 1, topic("T", 1)))
	if err != nil {
		t.Fatal(err)
	}
	without := func(key string) map[string]string {
		ext := maps.Clone(good.ExtFields)
		delete(ext, key)
		return ext
	}
	with := func(key, value string) map[string]string {
		ext := maps.Clone(good.ExtFields)
		ext[key] = value
		return ext
	}
	noCRC := with("bodyCrc32", "0")
	tests := []struct {
		name string
		code int32
		ext  map[string]string
		body []byte
	}{
		{"bad JSON body", remoting.RegisterBroker, noCRC, []byte(`{"topicConfigSerializeWrapper":`)},
		{"body not an object", remoting.RegisterBroker, noCRC, []byte(`null`)},
		{"compressed flag on a JSON body", remoting.RegisterBroker, with("compressed", "true"), good.Body},
		{"crc mismatch", remoting.RegisterBroker, with("bodyCrc32", "12345"), good.Body},
		{"crc not a number", remoting.RegisterBroker, with("bodyCrc32", "x"), good.Body},
		{"missing brokerName", remoting.RegisterBroker, without("brokerName"), good.Body},
		{"missing brokerAddr", remoting.RegisterBroker, without("brokerAddr"), good.Body},
		{"missing clusterName", remoting.RegisterBroker, without("clusterName"), good.Body},
		{"missing brokerId", remoting.RegisterBroker, without("brokerId"), good.Body},
		{"missing haServerAddr", remoting.RegisterBroker, without("haServerAddr"), good.Body},
		{"brokerId not a number", remoting.RegisterBroker, with("brokerId", "zero"), good.Body},
		{"negative brokerId", remoting.RegisterBroker, with("brokerId", "-1"), good.Body},
		{"address not host:port", remoting.RegisterBroker, with("brokerAddr", "somewhere"), good.Body},
		{"heartbeat timeout not a number", remoting.RegisterBroker, with("heartbeatTimeoutMillis", "soon"), good.Body},
		{"heartbeat timeout negative", remoting.RegisterBroker, with("heartbeatTimeoutMillis", "-5"), good.Body},
		{"no ext at all", remoting.RegisterBroker, nil, nil},
		{"unregister without brokerAddr", remoting.UnregisterBroker, without("brokerAddr"), nil},
		{"route without topic", remoting.GetRouteInfoByTopic, nil, nil},
		{"delete without topic", remoting.DeleteTopicInNamesrv, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := invoke(t, c, ns, tc.code, tc.ext, tc.body)
			if resp.Code != remoting.SystemError || resp.Remark == "" {
				t.Fatalf("got %v, want SYSTEM_ERROR with a reason", resp)
			}
		})
	}
	if n := len(s.Table().Members()); n != 0 {
		t.Fatalf("hostile requests registered %d members", n)
	}

	// A frame that cannot be decoded costs its sender the connection, and
	// nobody else anything.
	raw, err := net.Dial("tcp", ns)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Write([]byte{0, 0, 0, 8, 9, 0, 0, 4, 'j', 'u', 'n', 'k'}); err != nil {
		t.Fatal(err)
	}
	_ = raw.SetReadDeadline(time.Now().Add(guard))
	if _, err := raw.Read(make([]byte, 64)); err == nil {
		t.Fatal("server answered a frame with an unknown header type")
	}

	// The server still serves, on the same client connection.
	resp := invoke(t, c, ns, remoting.RegisterBroker, good.ExtFields, good.Body)
	if resp.Code != remoting.Success {
		t.Fatalf("good registration after hostile ones: %v", resp)
	}
	waitMember(t, s, "broker-a", addr(0), 0, 1)
	mustRoute(t, c, ns, "T")
}

func TestServerLifecycle(t *testing.T) {
	if _, err := NewServer(Config{BrokerExpiry: time.Second, ScanInterval: 2 * time.Second}); err == nil {
		t.Fatal("a scan interval above the expiry was accepted")
	}
	s, err := NewServer(Config{Addr: "127.0.0.1:0", Clock: NewManualClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	if s.Addr() != nil {
		t.Fatal("address before Start")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil {
		t.Fatal("second Start succeeded")
	}
	ctx := ctxGuard(t)
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
	// Close without Start.
	s2, err := NewServer(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRegisterCommand(t *testing.T) {
	req := brokerReq(0, 0, 9, topic("T", 2))
	req.HeartbeatTimeout = 30 * time.Second
	cmd, err := RegisterCommand(req)
	if err != nil {
		t.Fatal(err)
	}
	wantExt := map[string]string{
		"brokerName": "broker-a", "brokerAddr": addr(0), "clusterName": "DefaultCluster",
		"haServerAddr": addr(0), "brokerId": "0", "enableActingMaster": "false",
		"compressed": "false", "bodyCrc32": cmd.ExtFields["bodyCrc32"], "heartbeatTimeoutMillis": "30000",
	}
	if cmd.Code != remoting.RegisterBroker || !maps.Equal(cmd.ExtFields, wantExt) {
		t.Fatalf("command %v", cmd)
	}
	if cmd.ExtFields["bodyCrc32"] == "0" {
		t.Fatal("no body checksum")
	}
	b, err := protocol.DecodeRegisterBody(cmd.Body, false)
	if err != nil {
		t.Fatal(err)
	}
	if dv := b.TopicConfigSerializeWrapper.DataVersion; dv.StateVersion != 9 || dv.Counter != 9 || dv.Timestamp != 1000 {
		t.Fatalf("dataVersion %+v", dv)
	}
	if got := objectKeys(t, cmd.Body); !slices.Equal(got, []string{"topicConfigSerializeWrapper", "filterServerList"}) {
		t.Fatalf("body keys %v", got)
	}

	for name, bad := range map[string]RegisterRequest{
		"duplicate topic": brokerReq(0, 0, 1, topic("T", 1), topic("T", 2)),
		"no address":      func() RegisterRequest { r := brokerReq(0, 0, 1); r.BrokerAddr = ""; return r }(),
		"negative queues": brokerReq(0, 0, 1, topic("T", -2)),
	} {
		if _, err := RegisterCommand(bad); !errors.Is(err, ErrBadRequest) {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
