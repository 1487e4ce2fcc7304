package routing

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
)

// step is one operation of a table scenario.
type step struct {
	reg        *Registration // register this, or
	unregister int           // unregister node n (when reg is nil)
	err        error         // expected error of a registration
}

func regStep(n int, id, term int64) step {
	r := reg(n, id, term)
	return step{reg: &r}
}

func staleStep(n int, id, term int64) step {
	s := regStep(n, id, term)
	s.err = ErrStaleTerm
	return s
}

func TestRouteTableFencing(t *testing.T) {
	tests := []struct {
		name       string
		steps      []step
		addrs      map[int64]string // broker-a's members at the end
		leaderTerm int64
	}{
		{
			name:       "older term claim of id 0 is refused",
			steps:      []step{regStep(0, 0, 5), staleStep(1, 0, 4)},
			addrs:      map[int64]string{0: addr(0)},
			leaderTerm: 5,
		},
		{
			name: "newer term takes id 0 and the former leader disappears",
			steps: []step{
				regStep(0, 0, 5), regStep(1, 1, 5), regStep(2, 2, 5),
				regStep(1, 0, 6),
			},
			addrs:      map[int64]string{0: addr(1), 2: addr(2)},
			leaderTerm: 6,
		},
		{
			name: "former leader comes back as a follower",
			steps: []step{
				regStep(0, 0, 5), regStep(1, 1, 5), regStep(2, 2, 5),
				regStep(1, 0, 6), regStep(0, 1, 6),
			},
			addrs:      map[int64]string{0: addr(1), 1: addr(0), 2: addr(2)},
			leaderTerm: 6,
		},
		{
			name: "former leader's late periodic registration is refused",
			steps: []step{
				regStep(0, 0, 5), regStep(1, 1, 5),
				regStep(1, 0, 6), staleStep(0, 0, 5),
			},
			addrs:      map[int64]string{0: addr(1)},
			leaderTerm: 6,
		},
		{
			name:       "equal term replaces the leader",
			steps:      []step{regStep(0, 0, 5), regStep(1, 0, 5)},
			addrs:      map[int64]string{0: addr(1)},
			leaderTerm: 5,
		},
		{
			// A term fences only while its registration lives: a claim
			// that outlived its claimant would lock the group out (the
			// server asks the claimed node before it gets here).
			name: "the fence ends with the leader's registration",
			steps: []step{
				regStep(0, 0, 5), regStep(2, 2, 6), regStep(1, 0, 6),
				{unregister: 1}, regStep(0, 0, 5),
			},
			addrs:      map[int64]string{0: addr(0), 2: addr(2)},
			leaderTerm: 5,
		},
		{
			name: "an address's term never goes back",
			steps: []step{
				regStep(0, 0, 6), staleStep(0, 1, 5),
			},
			addrs:      map[int64]string{0: addr(0)},
			leaderTerm: 6,
		},
		{
			name:       "a follower id held at a higher term is not taken",
			steps:      []step{regStep(0, 0, 7), regStep(2, 2, 7), staleStep(3, 2, 6)},
			addrs:      map[int64]string{0: addr(0), 2: addr(2)},
			leaderTerm: 7,
		},
		{
			name:       "a follower id is taken at an equal term",
			steps:      []step{regStep(2, 2, 7), regStep(3, 2, 7)},
			addrs:      map[int64]string{2: addr(3)},
			leaderTerm: 0,
		},
		{
			name:       "promotion moves the address from its follower id to 0",
			steps:      []step{regStep(0, 0, 3), regStep(1, 1, 3), regStep(1, 0, 4)},
			addrs:      map[int64]string{0: addr(1)},
			leaderTerm: 4,
		},
		{
			name:       "a leader stepping down in its own term becomes a follower",
			steps:      []step{regStep(0, 0, 3), regStep(0, 1, 3)},
			addrs:      map[int64]string{1: addr(0)},
			leaderTerm: 0,
		},
		{
			name: "a group that disappears forgets its fence",
			steps: []step{
				regStep(0, 0, 9), {unregister: 0}, regStep(1, 0, 1),
			},
			addrs:      map[int64]string{0: addr(1)},
			leaderTerm: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb := NewRouteTable(0)
			for i, s := range tc.steps {
				if s.reg == nil {
					if _, ok, _ := tb.Unregister("broker-a", addr(s.unregister), 0, true); !ok {
						t.Fatalf("step %d: unregister %s: not registered", i, addr(s.unregister))
					}
					continue
				}
				_, err := tb.Register(*s.reg)
				if s.err == nil && err != nil || s.err != nil && !errors.Is(err, s.err) {
					t.Fatalf("step %d: register %s id %d term %d: error %v, want %v",
						i, s.reg.BrokerAddr, s.reg.BrokerID, s.reg.Term(), err, s.err)
				}
			}
			if got := addrsOf(tb, "broker-a"); !maps.Equal(got, tc.addrs) {
				t.Fatalf("brokerAddrs %v, want %v", got, tc.addrs)
			}
			if got, _ := tb.LeaderTerm("broker-a"); got != tc.leaderTerm {
				t.Fatalf("leader term %d, want %d", got, tc.leaderTerm)
			}
		})
	}
}

func TestRouteTableRegisterResult(t *testing.T) {
	tb := NewRouteTable(0)
	res, err := tb.Register(reg(1, 1, 5))
	wantErr(t, err, nil)
	if !res.NewMember || res.MasterAddr != "" {
		t.Fatalf("follower without leader: %+v", res)
	}
	leader := reg(0, 0, 5)
	leader.HAServerAddr = "127.0.0.1:10912"
	if res, err = tb.Register(leader); err != nil || !res.NewMember || !res.TopicsApplied {
		t.Fatalf("leader: %+v %v", res, err)
	}
	res, err = tb.Register(reg(1, 1, 5))
	wantErr(t, err, nil)
	if res.NewMember || res.MasterAddr != addr(0) || res.HAServerAddr != "127.0.0.1:10912" {
		t.Fatalf("follower with leader: %+v", res)
	}
	// A promotion displaces the former leader and the follower's own id.
	res, err = tb.Register(reg(1, 0, 6))
	wantErr(t, err, nil)
	var removed []string
	for _, m := range res.Removed {
		removed = append(removed, m.Addr)
	}
	if !slices.Equal(removed, []string{addr(0), addr(1)}) || !res.NewMember {
		t.Fatalf("promotion: %+v", res)
	}
}

func TestRouteTableTopics(t *testing.T) {
	tb := NewRouteTable(0)
	follower := reg(1, 1, 1, topic("FollowerOnly", 4))
	if _, err := tb.Register(follower); err != nil {
		t.Fatal(err)
	}
	if _, ok := tb.Route("FollowerOnly"); ok {
		t.Fatal("a follower's topics must not be served")
	}

	leader := reg(0, 0, 1, topic("A", 4), topic("B", 8),
		protocol.TopicConfig{TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7})
	if _, err := tb.Register(leader); err != nil {
		t.Fatal(err)
	}
	if got := tb.Topics(); !slices.Equal(got, []string{"A", "B", "TBW102"}) {
		t.Fatalf("topics %v", got)
	}
	r, ok := tb.Route("TBW102")
	if !ok || len(r.QueueDatas) != 1 || r.QueueDatas[0].Perm != 7 || r.QueueDatas[0].WriteQueueNums != 8 {
		t.Fatalf("TBW102 route %+v", r)
	}
	if len(r.BrokerDatas) != 1 || !maps.Equal(r.BrokerDatas[0].BrokerAddrs, map[int64]string{0: addr(0), 1: addr(1)}) {
		t.Fatalf("TBW102 brokers %+v", r.BrokerDatas)
	}

	// Deleted in the name server, the topic stays deleted while the
	// leader's DataVersion stays the same...
	if n := tb.DeleteTopic("A", ""); n != 1 {
		t.Fatalf("DeleteTopic removed from %d groups", n)
	}
	res, err := tb.Register(leader)
	if err != nil || res.TopicsApplied {
		t.Fatalf("heartbeat with the same version: %+v %v", res, err)
	}
	if _, ok := tb.Route("A"); ok {
		t.Fatal("A came back without a version change")
	}
	// ...and a new version replaces the whole set.
	next := reg(0, 0, 1, topic("A", 2), topic("C", 1))
	next.DataVersion.Counter = 2
	if res, err := tb.Register(next); err != nil || !res.TopicsApplied {
		t.Fatalf("new version: %+v %v", res, err)
	}
	if got := tb.Topics(); !slices.Equal(got, []string{"A", "C"}) {
		t.Fatalf("topics after new version %v", got)
	}
	if r, _ := tb.Route("A"); r.QueueDatas[0].ReadQueueNums != 2 {
		t.Fatalf("A not updated: %+v", r.QueueDatas)
	}

	// Losing the leader keeps the topics (consumers pull from followers);
	// losing the last member drops them.
	_, _, _ = tb.Unregister("broker-a", addr(0), 0, true)
	if r, ok := tb.Route("A"); !ok || !maps.Equal(r.BrokerDatas[0].BrokerAddrs, map[int64]string{1: addr(1)}) {
		t.Fatalf("route without a leader %+v %v", r, ok)
	}
	_, _, _ = tb.Unregister("broker-a", addr(1), 0, true)
	if got := tb.Topics(); len(got) != 0 {
		t.Fatalf("topics of a vanished group: %v", got)
	}
	if info := tb.ClusterInfo(); len(info.BrokerAddrTable) != 0 || len(info.ClusterAddrTable) != 0 {
		t.Fatalf("cluster info of an empty table %+v", info)
	}
}

func TestRouteTableManyGroups(t *testing.T) {
	tb := NewRouteTable(0)
	for _, g := range []struct {
		cluster, name string
		n             int
	}{{"c1", "broker-b", 0}, {"c1", "broker-a", 1}, {"c2", "broker-c", 2}} {
		r := reg(g.n, 0, 1, topic("Shared", 4))
		r.ClusterName, r.BrokerName = g.cluster, g.name
		if _, err := tb.Register(r); err != nil {
			t.Fatal(err)
		}
	}
	r, ok := tb.Route("Shared")
	if !ok {
		t.Fatal("no route")
	}
	var names []string
	for i, qd := range r.QueueDatas {
		names = append(names, qd.BrokerName)
		if r.BrokerDatas[i].BrokerName != qd.BrokerName {
			t.Fatalf("queueDatas and brokerDatas out of step: %+v", r)
		}
	}
	if !slices.Equal(names, []string{"broker-a", "broker-b", "broker-c"}) {
		t.Fatalf("groups %v", names)
	}
	info := tb.ClusterInfo()
	if !slices.Equal(info.ClusterAddrTable["c1"], []string{"broker-a", "broker-b"}) ||
		!slices.Equal(info.ClusterAddrTable["c2"], []string{"broker-c"}) {
		t.Fatalf("cluster table %v", info.ClusterAddrTable)
	}
	if n := tb.DeleteTopic("Shared", "c1"); n != 2 {
		t.Fatalf("cluster-scoped delete removed %d", n)
	}
	if r, _ := tb.Route("Shared"); len(r.QueueDatas) != 1 || r.QueueDatas[0].BrokerName != "broker-c" {
		t.Fatalf("after cluster-scoped delete %+v", r)
	}
}

func TestRouteTableExpire(t *testing.T) {
	tb := NewRouteTable(120 * time.Second)
	if _, err := tb.Register(reg(0, 0, 1, topic("T", 1))); err != nil {
		t.Fatal(err)
	}
	short := reg(1, 1, 1)
	short.Timeout = 10 * time.Second
	if _, err := tb.Register(short); err != nil {
		t.Fatal(err)
	}
	late := reg(2, 2, 1)
	late.Now = t0.Add(100 * time.Second)
	if _, err := tb.Register(late); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		at      time.Duration
		removed []string
		left    map[int64]string
	}{
		{10 * time.Second, nil, map[int64]string{0: addr(0), 1: addr(1), 2: addr(2)}},
		{10*time.Second + 1, []string{addr(1)}, map[int64]string{0: addr(0), 2: addr(2)}},
		{120 * time.Second, nil, map[int64]string{0: addr(0), 2: addr(2)}},
		{121 * time.Second, []string{addr(0)}, map[int64]string{2: addr(2)}},
		{221 * time.Second, []string{addr(2)}, nil},
	}
	for _, tc := range tests {
		var got []string
		for _, m := range tb.Expire(t0.Add(tc.at)) {
			got = append(got, m.Addr)
		}
		if !slices.Equal(got, tc.removed) {
			t.Fatalf("at +%v: expired %v, want %v", tc.at, got, tc.removed)
		}
		if got := addrsOf(tb, "broker-a"); !maps.Equal(got, tc.left) {
			t.Fatalf("at +%v: left %v, want %v", tc.at, got, tc.left)
		}
	}
	if _, ok := tb.Route("T"); ok {
		t.Fatal("topic of an expired group still served")
	}
}

func TestRouteTableHeartbeatRefreshes(t *testing.T) {
	tb := NewRouteTable(120 * time.Second)
	r := reg(0, 0, 1)
	for i := range 5 {
		r.Now = t0.Add(time.Duration(i) * 100 * time.Second)
		if _, err := tb.Register(r); err != nil {
			t.Fatal(err)
		}
		if gone := tb.Expire(r.Now.Add(119 * time.Second)); len(gone) != 0 {
			t.Fatalf("heartbeat %d: expired %v", i, gone)
		}
	}
}

func TestRouteTableRemoveConn(t *testing.T) {
	tb := NewRouteTable(0)
	for n, conn := range []uint64{7, 7, 8} {
		r := reg(n, int64(n), 1)
		r.ConnID = conn
		if _, err := tb.Register(r); err != nil {
			t.Fatal(err)
		}
	}
	// Node 1 reconnects: its next registration arrives on connection 9,
	// so the close of 7 no longer concerns it.
	moved := reg(1, 1, 1)
	moved.ConnID = 9
	if _, err := tb.Register(moved); err != nil {
		t.Fatal(err)
	}
	if got := tb.RemoveConn(0); got != nil {
		t.Fatalf("RemoveConn(0) removed %v", got)
	}
	gone := tb.RemoveConn(7)
	if len(gone) != 1 || gone[0].Addr != addr(0) || gone[0].ConnID != 7 {
		t.Fatalf("RemoveConn(7) = %+v", gone)
	}
	if got := addrsOf(tb, "broker-a"); !maps.Equal(got, map[int64]string{1: addr(1), 2: addr(2)}) {
		t.Fatalf("left %v", got)
	}
}

func TestRouteTableRejectsInvalid(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Registration)
		err    error
	}{
		{"empty cluster", func(r *Registration) { r.ClusterName = "" }, ErrBadRequest},
		{"empty broker name", func(r *Registration) { r.BrokerName = "" }, ErrBadRequest},
		{"negative id", func(r *Registration) { r.BrokerID = -1 }, ErrBadRequest},
		{"negative timeout", func(r *Registration) { r.Timeout = -time.Second }, ErrBadRequest},
		{"address without port", func(r *Registration) { r.BrokerAddr = "127.0.0.1" }, ErrBadRequest},
		{"address with port 0", func(r *Registration) { r.BrokerAddr = "127.0.0.1:0" }, ErrBadRequest},
		{"address with a comma", func(r *Registration) { r.BrokerAddr = "a,b:1" }, ErrBadRequest},
		{"address with a quote", func(r *Registration) { r.BrokerAddr = `a":1` }, ErrBadRequest},
		{"address with a space", func(r *Registration) { r.BrokerAddr = " 127.0.0.1:1" }, ErrBadRequest},
		{"negative queues", func(r *Registration) { r.Topics = topicMap(topic("T", -1)) }, ErrBadBody},
		{"too many queues", func(r *Registration) { r.Topics = topicMap(topic("T", protocol.MaxQueueNums+1)) }, ErrBadBody},
		{"ipv6 literal", func(r *Registration) { r.BrokerAddr = "[::1]:10911" }, nil},
		{"host name", func(r *Registration) { r.BrokerAddr = "broker-0.svc:10911" }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb := NewRouteTable(0)
			r := reg(0, 0, 1)
			tc.mutate(&r)
			_, err := tb.Register(r)
			wantErr(t, err, tc.err)
			if tc.err != nil && len(tb.Members()) != 0 {
				t.Fatal("a rejected registration changed the table")
			}
		})
	}
}

func TestRouteJSONShape(t *testing.T) {
	tb := NewRouteTable(0)
	for n := range 3 {
		r := reg(n, int64(n), 1, topic("T", 4))
		if _, err := tb.Register(r); err != nil {
			t.Fatal(err)
		}
	}
	r, _ := tb.Route("T")
	body, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],` +
		`"brokerDatas":[{"cluster":"DefaultCluster","brokerName":"broker-a","brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10912","2":"127.0.0.1:10913"}}],` +
		`"filterServerTable":{}}`
	if string(body) != want {
		t.Fatalf("route JSON\n got %s\nwant %s", body, want)
	}
}

// TestRouteTableConcurrent runs registrations, queries, expiry and
// connection removal at once; -race checks the locking, and the routes
// must stay consistent throughout.
func TestRouteTableConcurrent(t *testing.T) {
	tb := NewRouteTable(time.Second)
	done := make(chan struct{})
	errs := make(chan error, 4)
	for w := range 3 {
		go func() {
			for i := range 500 {
				r := reg(w, int64(w), int64(i), topic("T", 2))
				r.Now = t0.Add(time.Duration(i) * time.Millisecond)
				r.ConnID = uint64(w + 1)
				if _, err := tb.Register(r); err != nil && !errors.Is(err, ErrStaleTerm) {
					errs <- err
					return
				}
				if i%50 == 0 {
					tb.RemoveConn(uint64(w + 1))
				}
			}
			errs <- nil
		}()
	}
	go func() {
		defer close(done)
		for i := range 500 {
			if r, ok := tb.Route("T"); ok && (len(r.BrokerDatas) != 1 || len(r.BrokerDatas[0].BrokerAddrs) == 0) {
				t.Errorf("inconsistent route %+v", r)
				return
			}
			tb.Expire(t0.Add(time.Duration(i) * 2 * time.Millisecond))
			tb.ClusterInfo()
			tb.Topics()
		}
	}()
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	<-done
}

// TestRouteTableTopicSharing: which groups may serve a topic another
// group serves (doc.go, Topics).
func TestRouteTableTopicSharing(t *testing.T) {
	tb := NewRouteTable(0)
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	leader := func(group string, n int, sec int, version int64, trust bool, topics ...protocol.TopicConfig) RegisterResult {
		t.Helper()
		r := reg(n, 0, 1, topics...)
		r.BrokerName, r.Now, r.TrustTopics = group, at(sec), trust
		r.DataVersion.Counter = version
		res, err := tb.Register(r)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	servers := func(topic string) []string {
		route, ok := tb.Route(topic)
		if !ok {
			return nil
		}
		var out []string
		for _, qd := range route.QueueDatas {
			out = append(out, qd.BrokerName)
		}
		return out
	}
	orders := topic("Orders", 4)

	leader("b", 1, 0, 1, false)         // b exists before Orders
	leader("a", 0, 1, 1, false, orders) // a creates Orders
	if res := leader("b", 1, 2, 2, false, orders); len(res.TopicsRefused) != 0 {
		t.Fatalf("an older group creating the topic too was refused: %v", res.TopicsRefused)
	}
	if got := servers("Orders"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Orders served by %v", got)
	}
	// A group that appears later cannot take a share unsigned …
	if res := leader("c", 2, 3, 1, false, orders, topic("Own", 1)); !slices.Equal(res.TopicsRefused, []string{"Orders"}) {
		t.Fatalf("new group: refused %v", res.TopicsRefused)
	}
	if got := servers("Orders"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Orders served by %v after the new group", got)
	}
	if got := servers("Own"); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("the new group's own topic served by %v", got)
	}
	// … but can when signed with the cluster secret.
	if res := leader("c", 2, 4, 2, true, orders); len(res.TopicsRefused) != 0 {
		t.Fatalf("signed: refused %v", res.TopicsRefused)
	}
	// A group that served the topic keeps its right across a restart of
	// the whole group (it is forgotten and registers as new).
	if _, ok, _ := tb.Unregister("b", addr(1), 0, true); !ok {
		t.Fatal("b not registered")
	}
	if res := leader("b", 1, 10, 1, false, orders); len(res.TopicsRefused) != 0 {
		t.Fatalf("restarted group: refused %v", res.TopicsRefused)
	}
	// A topic no group serves any more is free for the first to claim it.
	for _, g := range []struct {
		name string
		n    int
	}{{"a", 0}, {"b", 1}, {"c", 2}} {
		leader(g.name, g.n, 20, 9, false)
	}
	if got := servers("Orders"); got != nil {
		t.Fatalf("Orders still served by %v", got)
	}
	if res := leader("d", 3, 30, 1, false, orders); len(res.TopicsRefused) != 0 {
		t.Fatalf("free topic: refused %v", res.TopicsRefused)
	}
}
