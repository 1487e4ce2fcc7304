package grpcapi

import (
	"net/netip"
	"testing"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

func gr(name string, r, w, perm int32) groupRoute {
	return groupRoute{name: name, tc: metadata.TopicConfig{ReadQueueNums: r, WriteQueueNums: w, Perm: perm}}
}

// TestPickQueue: a message group always lands on one queue, spread over
// the writable queues of every group; other messages go to the writable
// groups in turn at queue -1; a read-only group is skipped.
func TestPickQueue(t *testing.T) {
	routes := []groupRoute{gr("a", 4, 4, 6), gr("b", 2, 2, 6), gr("ro", 4, 4, 4)}
	seen := map[string]bool{}
	for turn := uint32(0); turn < 4; turn++ {
		g, q := pickQueue(routes, "", turn)
		if q != -1 || g == "ro" {
			t.Fatalf("turn %d: %s/%d", turn, g, q)
		}
		seen[g] = true
	}
	if !seen["a"] || !seen["b"] {
		t.Fatalf("groups taken in turn: %v", seen)
	}
	hit := map[string]bool{}
	for i := 0; i < 200; i++ {
		key := string(rune('A'+i%26)) + string(rune('a'+i/26))
		g, q := pickQueue(routes, key, uint32(i))
		g2, q2 := pickQueue(routes, key, uint32(i+7))
		if g != g2 || q != q2 {
			t.Fatalf("message group %s went to %s/%d then %s/%d", key, g, q, g2, q2)
		}
		if g == "ro" || q < 0 || (g == "a" && q >= 4) || (g == "b" && q >= 2) {
			t.Fatalf("message group %s went to %s/%d", key, g, q)
		}
		hit[g+string(rune('0'+q))] = true
	}
	if len(hit) != 6 {
		t.Fatalf("queues used by 200 message groups: %v", hit)
	}
	// One group: the local node's shape, as before cluster mode.
	if g, q := pickQueue([]groupRoute{gr("a", 4, 4, 6)}, "", 9); g != "a" || q != -1 {
		t.Fatalf("one group: %s/%d", g, q)
	}
	if g, q := pickQueue([]groupRoute{gr("ro", 4, 4, 4)}, "k", 0); g != "ro" || q != -1 {
		t.Fatalf("nothing writable: %s/%d (want the first group, which refuses)", g, q)
	}
	if g, _ := pickQueue(nil, "k", 0); g != "" {
		t.Fatalf("no route: %q", g)
	}
}

func TestReadableGroup(t *testing.T) {
	routes := []groupRoute{gr("wo", 4, 4, 2), gr("a", 4, 4, 6), gr("b", 1, 1, 4)}
	if g := readableGroup(routes, 0); g != "a" {
		t.Fatal(g)
	}
	if g := readableGroup(routes, 1); g != "b" {
		t.Fatal(g)
	}
	if g := readableGroup(routes[:1], 1); g != "" {
		t.Fatal(g)
	}
}

// TestTxnIDNamesGroup: a transaction id carries the group that stored
// the half message (cluster mode ends it there); one without it (a node's
// own) still parses.
func TestTxnIDNamesGroup(t *testing.T) {
	off := message.OffsetMsgID(netip.MustParseAddrPort("127.0.0.1:10911"), 4096)
	tx, err := parseTxnID(formatTxnID(off, 7, "broker-a"))
	if err != nil || tx.brokerName != "broker-a" || tx.queueOffset != 7 || tx.commitLogOffset != 4096 || tx.offsetMsgID != off {
		t.Fatalf("%+v %v", tx, err)
	}
	tx, err = parseTxnID(formatTxnID(off, 7, ""))
	if err != nil || tx.brokerName != "" || tx.queueOffset != 7 {
		t.Fatalf("%+v %v", tx, err)
	}
}

func TestLeaderOf(t *testing.T) {
	rd := &protocol.TopicRouteData{BrokerDatas: []protocol.BrokerData{
		{BrokerName: "a", BrokerAddrs: map[int64]string{0: "127.0.0.1:1", 1: "127.0.0.1:2"}},
		{BrokerName: "b", BrokerAddrs: map[int64]string{1: "127.0.0.1:3"}},
	}}
	if got := leaderOf(rd, "a"); got != "127.0.0.1:1" {
		t.Fatal(got)
	}
	if got := leaderOf(rd, "b"); got != "" {
		t.Fatalf("a group without brokerId 0: %q", got)
	}
	if got := leaderOf(rd, "c"); got != "" {
		t.Fatal(got)
	}
}

// TestGroupRoutesWithoutLeader: a group whose route names no leader is
// listed read-only while another group of the topic can take writes; when
// none can (one group, electing), every group keeps its permission, so a
// client still finds a writable queue and the proxy's send waits for the
// next leader.
func TestGroupRoutesWithoutLeader(t *testing.T) {
	self := netip.MustParseAddrPort("127.0.0.1:8081")
	rw := int32(metadata.PermRead | metadata.PermWrite)
	a := protocol.BrokerData{BrokerName: "a", BrokerAddrs: map[int64]string{0: "127.0.0.1:1"}}
	b := protocol.BrokerData{BrokerName: "b", BrokerAddrs: map[int64]string{1: "127.0.0.1:3"}}
	c := protocol.BrokerData{BrokerName: "c", BrokerAddrs: map[int64]string{}}
	qd := func(name string, perm int32) protocol.QueueData {
		return protocol.QueueData{BrokerName: name, ReadQueueNums: 4, WriteQueueNums: 4, Perm: perm}
	}
	perms := func(rd *protocol.TopicRouteData) map[string]int32 {
		out := map[string]int32{}
		for _, r := range groupRoutes(rd, "T", self) {
			if r.endpoint != self || r.tc.TopicName != "T" || r.tc.WriteQueueNums != 4 {
				t.Fatalf("%+v", r)
			}
			out[r.name] = int32(r.tc.Perm)
		}
		return out
	}
	two := &protocol.TopicRouteData{BrokerDatas: []protocol.BrokerData{a, b}, QueueDatas: []protocol.QueueData{qd("a", rw), qd("b", rw)}}
	if got := perms(two); got["a"] != rw || got["b"] != metadata.PermRead {
		t.Fatalf("a leader and a leaderless group: %v", got)
	}
	electing := &protocol.TopicRouteData{BrokerDatas: []protocol.BrokerData{b, c}, QueueDatas: []protocol.QueueData{qd("b", rw), qd("c", rw)}}
	if got := perms(electing); got["b"] != rw || got["c"] != rw {
		t.Fatalf("no group with a leader: %v", got)
	}
	readOnly := &protocol.TopicRouteData{BrokerDatas: []protocol.BrokerData{b}, QueueDatas: []protocol.QueueData{qd("b", metadata.PermRead)}}
	if got := perms(readOnly); got["b"] != metadata.PermRead {
		t.Fatalf("a read-only topic: %v", got)
	}
}

// TestCloneRequest: a retried request is a copy; signing or numbering it
// leaves the original as it was.
func TestCloneRequest(t *testing.T) {
	req := remoting.NewRequest(remoting.SendMessageV2, map[string]string{"b": "T"}, []byte("body"))
	c := cloneRequest(req)
	c.ExtFields["Signature"] = "x"
	c.Opaque = 9
	if _, ok := req.ExtFields["Signature"]; ok || req.Opaque != 0 || string(c.Body) != "body" || c.ExtFields["b"] != "T" {
		t.Fatalf("original %v, copy %v", req, c)
	}
}
