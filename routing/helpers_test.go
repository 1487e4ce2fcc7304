package routing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/remoting"

	"github.com/ledgermq/ledgermq/internal/testwait"
	"github.com/ledgermq/ledgermq/protocol"
)

// guard bounds every wait in the tests; it is a failure deadline, never a
// way to let something happen.
const guard = 10 * time.Second

// t0 is the start of every manual clock in the tests.
var t0 = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// trustAll confirms every claim: the tests of routes and fencing register
// brokers that do not exist (the confirmation tests use real nodes).
var trustAll = CheckerFunc(func(context.Context, Claim) error { return nil })

// startServer starts a name server on a loopback port with a manual clock
// (unless cfg has a clock) and a Checker that confirms every claim (unless
// cfg has one); the test's cleanup closes it.
func startServer(t testing.TB, cfg Config) (*Server, *ManualClock) {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	if cfg.Checker == nil {
		cfg.Checker = trustAll
	}
	var clock *ManualClock
	if cfg.Clock == nil {
		clock = NewManualClock(t0)
		cfg.Clock = clock
	}
	return launchServer(t, cfg), clock
}

// launchServer builds and starts a name server from cfg as it is; the
// test's cleanup closes it.
func launchServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// newClient returns a remoting client closed by the test's cleanup.
func newClient(t testing.TB) *remoting.Client {
	t.Helper()
	c := remoting.NewClient(remoting.ClientConfig{})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// ctxGuard is a context bounded by guard.
func ctxGuard(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds, failing after guard.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, guard, what, cond)
}

// wantErr fails unless err matches target (nil target: no error).
func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if target == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}

// addr is the loopback address of test node n.
func addr(n int) string { return "127.0.0.1:" + strconv.Itoa(10911+n) }

// topic returns a normal read/write topic config.
func topic(name string, queues int32) protocol.TopicConfig {
	return protocol.TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: 6, TopicFilterType: protocol.FilterSingleTag}
}

// topicMap keys topics by name.
func topicMap(tcs ...protocol.TopicConfig) map[string]protocol.TopicConfig {
	m := make(map[string]protocol.TopicConfig, len(tcs))
	for _, tc := range tcs {
		m[tc.TopicName] = tc
	}
	return m
}

// reg is a registration of node n of group "broker-a" with the given id
// and term, at t0, on no connection, confirmed by its node.
func reg(n int, id, term int64, topics ...protocol.TopicConfig) Registration {
	return Registration{
		ClusterName:  "DefaultCluster",
		BrokerName:   "broker-a",
		BrokerAddr:   addr(n),
		HAServerAddr: addr(n),
		BrokerID:     id,
		DataVersion:  protocol.DataVersion{StateVersion: term, Timestamp: 1, Counter: 1},
		Topics:       topicMap(topics...),
		Now:          t0,
		Confirmed:    true,
	}
}

// fakeConn is a connection id for Server.register in tests; it never
// closes.
type fakeConn uint64

func (c fakeConn) ID() uint64   { return uint64(c) }
func (c fakeConn) Closed() bool { return false }

// addrsOf returns the brokerAddrs of a group in the table's cluster info
// (nil when the group is unknown).
func addrsOf(tb *RouteTable, group string) map[int64]string {
	bd, ok := tb.ClusterInfo().BrokerAddrTable[group]
	if !ok {
		return nil
	}
	return bd.BrokerAddrs
}

// Mirror of rocketmq-client-go's route decoding (internal/route.go at the
// version the product targets): queueDatas go through a JSON decoder into
// these field names; each brokerDatas entry is read field by field, and
// brokerAddrs is parsed from the object's raw text by stripping the
// braces, splitting on ',', cutting each item at its first ':' and
// removing '"'.

type clientQueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int    `json:"readQueueNums"`
	WriteQueueNums int    `json:"writeQueueNums"`
	Perm           int    `json:"perm"`
	TopicSynFlag   int    `json:"topicSynFlag"`
}

type clientBrokerData struct {
	Cluster         string
	BrokerName      string
	BrokerAddresses map[int64]string
	// rawAddrs is the brokerAddrs object's text, kept for shape checks.
	rawAddrs string
}

type clientRoute struct {
	OrderTopicConf string
	QueueDataList  []*clientQueueData
	BrokerDataList []*clientBrokerData
}

// decodeLikeClient decodes a route body the way the Go client does, and
// fails where the client would fail or panic.
func decodeLikeClient(body []byte) (*clientRoute, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, err
	}
	r := &clientRoute{}
	if err := json.Unmarshal(top["queueDatas"], &r.QueueDataList); err != nil {
		return nil, fmt.Errorf("queueDatas: %w", err)
	}
	if raw, ok := top["orderTopicConf"]; ok {
		if err := json.Unmarshal(raw, &r.OrderTopicConf); err != nil {
			return nil, err
		}
	}
	var bds []map[string]json.RawMessage
	if err := json.Unmarshal(top["brokerDatas"], &bds); err != nil {
		return nil, fmt.Errorf("brokerDatas: %w", err)
	}
	for _, v := range bds {
		bd := &clientBrokerData{BrokerAddresses: map[int64]string{}}
		_ = json.Unmarshal(v["brokerName"], &bd.BrokerName)
		_ = json.Unmarshal(v["cluster"], &bd.Cluster)
		addrs := string(v["brokerAddrs"])
		if len(addrs) < 2 {
			return nil, fmt.Errorf("brokerAddrs %q: the client would index out of range", addrs)
		}
		bd.rawAddrs = addrs
		for _, str := range strings.Split(addrs[1:len(addrs)-1], ",") {
			i := strings.Index(str, ":")
			if i < 0 {
				continue
			}
			id, err := strconv.ParseInt(strings.ReplaceAll(str[:i], `"`, ""), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("brokerAddrs key %q: %w", str[:i], err)
			}
			bd.BrokerAddresses[id] = strings.ReplaceAll(str[i+1:], `"`, "")
		}
		r.BrokerDataList = append(r.BrokerDataList, bd)
	}
	return r, nil
}

// objectKeys returns the keys of a JSON object in document order.
func objectKeys(t testing.TB, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %s", raw)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// invoke sends a request to a name server and returns the response.
func invoke(t testing.TB, c *remoting.Client, ns string, code int32, ext map[string]string, body []byte) *remoting.Command {
	t.Helper()
	resp, err := c.Invoke(ctxGuard(t), ns, remoting.NewRequest(code, ext, body))
	if err != nil {
		t.Fatalf("%s: %v", remoting.RequestCodeName(code), err)
	}
	return resp
}

// routeOf asks a name server for a topic's route; it returns the response.
func routeOf(t testing.TB, c *remoting.Client, ns, topic string) *remoting.Command {
	t.Helper()
	return invoke(t, c, ns, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil)
}

// mustRoute asks for a route that must exist and decodes it like the
// client.
func mustRoute(t testing.TB, c *remoting.Client, ns, topic string) *clientRoute {
	t.Helper()
	resp := routeOf(t, c, ns, topic)
	if resp.Code != remoting.Success {
		t.Fatalf("route %s: code %d (%s)", topic, resp.Code, resp.Remark)
	}
	r, err := decodeLikeClient(resp.Body)
	if err != nil {
		t.Fatalf("route %s: %v; body %s", topic, err, resp.Body)
	}
	return r
}

// brokerReq is the RegisterRequest of node n of group broker-a.
func brokerReq(n int, id, term int64, topics ...protocol.TopicConfig) RegisterRequest {
	return RegisterRequest{
		ClusterName:  "DefaultCluster",
		BrokerName:   "broker-a",
		BrokerAddr:   addr(n),
		HAServerAddr: addr(n),
		BrokerID:     id,
		Term:         term,
		DataVersion:  protocol.DataVersion{Timestamp: 1000, Counter: term},
		Topics:       topics,
	}
}
