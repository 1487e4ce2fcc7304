package grpcapi_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the clients' algorithm
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/grpcapi/grpcapitest"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
)

// Two broker groups whose plain_acl.yml differ. alice may publish to and
// subscribe to every topic in broker-a, nothing in broker-b; bob exists
// in broker-b only; broker-a white-lists 127.0.0.2 (and only it); the
// proxy's admin account is in both.
const (
	aclGroupA = `
globalWhiteRemoteAddresses:
  - 127.0.0.2
accounts:
  - accessKey: proxyadmin
    secretKey: proxy-secret
    admin: true
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
  - accessKey: alice1
    secretKey: alice-secret
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
`
	aclGroupB = `
accounts:
  - accessKey: proxyadmin
    secretKey: proxy-secret
    admin: true
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
  - accessKey: alice1
    secretKey: alice-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
  - accessKey: bobby1
    secretKey: bob-secret
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
`
)

// twoGroups is a proxy with the ACL on in front of broker-a and broker-b
// (aclGroupA, aclGroupB): topic Shared on both, OnlyB on broker-b.
type twoGroups struct {
	proxy  string // the proxy's address
	nodeA  string // broker-a's node's gRPC address
	admin  *client.Admin
	shared []*v2pb.MessageQueue // queue 0 of Shared in broker-a, then broker-b
}

func startTwoGroups(t *testing.T) *twoGroups {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"broker-a": aclGroupA, "broker-b": aclGroupB}
	for name, yml := range files {
		if err := os.WriteFile(filepath.Join(dir, name+".yml"), []byte(yml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a, nodeA := grpcapitest.StartGroupNode(t, "broker-a", "", filepath.Join(dir, "broker-a.yml"))
	grpcapitest.StartGroupNode(t, "broker-b", a.NamesrvAddr(), filepath.Join(dir, "broker-b.yml"))
	admin, err := client.NewAdmin(client.WithAdminNameServers(a.NamesrvAddr()), client.WithAdminCredentials("proxyadmin", "proxy-secret"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	waitFor(t, "both groups registered", func() bool {
		ci, err := admin.ClusterInfo(testCtx(t))
		return err == nil && len(ci.BrokerAddrTable) == 2
	})
	for _, tg := range []struct{ topic, group string }{{"Shared", "broker-a"}, {"Shared", "broker-b"}, {"OnlyB", "broker-b"}} {
		if _, err := admin.CreateTopic(testCtx(t), client.TopicConfig{Topic: tg.topic, ReadQueues: 1, WriteQueues: 1}, client.Target{BrokerName: tg.group}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "Shared routed to both groups, OnlyB to broker-b", func() bool {
		rs, err := admin.TopicRoute(testCtx(t), "Shared")
		rb, errB := admin.TopicRoute(testCtx(t), "OnlyB")
		return err == nil && errB == nil && len(rs.QueueDatas) == 2 && len(rb.QueueDatas) == 1
	})
	proxy := grpcapitest.StartProxy(t, a.NamesrvAddr(), grpcapitest.ProxyACL{File: "yes", AccessKey: "proxyadmin", SecretKey: "proxy-secret"})
	return &twoGroups{proxy: proxy.Addr().String(), nodeA: nodeA.Addr().String(), admin: admin,
		shared: []*v2pb.MessageQueue{queueOf("broker-a", "Shared", 0), queueOf("broker-b", "Shared", 0)}}
}

// clientFrom is a gRPC client of target whose connections come from the
// loopback address local.
func clientFrom(t *testing.T, target, local string) v2pb.MessagingServiceClient {
	t.Helper()
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		return d.DialContext(ctx, "tcp", addr)
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(dial))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return v2pb.NewMessagingServiceClient(conn)
}

// stored is how many messages each group's queues of topic took.
func (g *twoGroups) stored(t *testing.T, topic string) map[string]int64 {
	t.Helper()
	qs, err := g.admin.TopicStatus(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, q := range qs {
		out[q.BrokerName] += q.MaxOffset
	}
	return out
}

// TestProxyEnforcesEachGroupsACL: through a proxy in front of two groups
// whose ACL files differ, a request is checked against the rules of the
// group that serves it. alice's sends to Shared all go to broker-a, the
// group whose rules let her publish, bob's to broker-b; alice's send to
// OnlyB (broker-b's only) is FORBIDDEN although broker-a's rules would
// allow it, bob's passes although broker-a does not know him; pulls and
// offsets of a queue follow the queue's group; receives go to a group
// whose rules let the caller subscribe; a route, tied to no group, passes
// for an account any group knows and is UNAUTHORIZED for one none knows.
func TestProxyEnforcesEachGroupsACL(t *testing.T) {
	g := startTwoGroups(t)
	mq := clientFrom(t, g.proxy, "127.0.0.1")
	e := &secureEnv{mq: mq, addr: g.proxy}
	ctx := testCtx(t)
	alice := signed(ctx, "alice1", "alice-secret")
	bob := signed(ctx, "bobby1", "bob-secret")

	for name, c := range map[string]context.Context{"alice": alice, "bob": bob} {
		if code := e.routeCode(t, c, "Shared"); code != v2pb.Code_OK {
			t.Fatalf("%s's route: %v", name, code)
		}
	}
	if code := e.routeCode(t, signed(ctx, "carol1", "carol-secret"), "Shared"); code != v2pb.Code_UNAUTHORIZED {
		t.Fatalf("an account no group knows: %v", code)
	}

	const n = 6
	for i := 0; i < n; i++ {
		if code := e.sendCode(t, alice, "Shared", "from alice"); code != v2pb.Code_OK {
			t.Fatalf("alice's send %d to Shared: %v", i, code)
		}
	}
	if got := g.stored(t, "Shared"); got["broker-a"] != n || got["broker-b"] != 0 {
		t.Fatalf("alice's sends to Shared by group: %v, want all %d in broker-a", got, n)
	}
	for i := 0; i < n; i++ {
		if code := e.sendCode(t, bob, "Shared", "from bob"); code != v2pb.Code_OK {
			t.Fatalf("bob's send %d to Shared: %v", i, code)
		}
	}
	if got := g.stored(t, "Shared"); got["broker-a"] != n || got["broker-b"] != n {
		t.Fatalf("sends to Shared by group: %v, want bob's %d in broker-b", got, n)
	}
	if code := e.sendCode(t, alice, "OnlyB", "denied by broker-b"); code != v2pb.Code_FORBIDDEN {
		t.Fatalf("alice's send to OnlyB: %v, want FORBIDDEN", code)
	}
	if code := e.sendCode(t, bob, "OnlyB", "allowed by broker-b"); code != v2pb.Code_OK {
		t.Fatalf("bob's send to OnlyB: %v", code)
	}
	if got := g.stored(t, "OnlyB"); got["broker-b"] != 1 {
		t.Fatalf("OnlyB holds %v, want bob's one message", got)
	}

	// Pulls and offsets: the queue's group.
	pull := func(c context.Context, q *v2pb.MessageQueue) v2pb.Code {
		t.Helper()
		a, err := pullMsgs(c, mq, pullReq("cg_two", q, 0, 4, 0))
		if err != nil {
			t.Fatal(err)
		}
		return a.code
	}
	for _, c := range []struct {
		who  string
		ctx  context.Context
		q    *v2pb.MessageQueue
		want v2pb.Code
	}{
		{"alice", alice, g.shared[0], v2pb.Code_OK},
		{"alice", alice, g.shared[1], v2pb.Code_FORBIDDEN},
		{"bob", bob, g.shared[0], v2pb.Code_FORBIDDEN},
		{"bob", bob, g.shared[1], v2pb.Code_OK},
	} {
		if code := pull(c.ctx, c.q); code != c.want {
			t.Errorf("%s's pull of %s: %v, want %v", c.who, c.q.GetBroker().GetName(), code, c.want)
		}
		r, err := mq.QueryOffset(c.ctx, &v2pb.QueryOffsetRequest{MessageQueue: c.q, QueryOffsetPolicy: v2pb.QueryOffsetPolicy_END})
		if err != nil {
			t.Fatal(err)
		}
		if code := r.GetStatus().GetCode(); code != c.want {
			t.Errorf("%s's offset query of %s: %v, want %v", c.who, c.q.GetBroker().GetName(), code, c.want)
		}
	}

	// Receives: from the group whose rules let the caller subscribe,
	// acknowledged there.
	for _, c := range []struct {
		who  string
		ctx  context.Context
		body string
	}{{"alice", alice, "from alice"}, {"bob", bob, "from bob"}} {
		got := 0
		waitFor(t, c.who+"'s messages received", func() bool {
			code, ms := e.receiveCode(t, c.ctx, "cg_two_"+c.who, "Shared")
			switch code {
			case v2pb.Code_OK, v2pb.Code_MESSAGE_NOT_FOUND:
			default:
				t.Fatalf("%s's receive: %v", c.who, code)
			}
			for _, m := range ms {
				if string(m.GetBody()) != c.body {
					t.Fatalf("%s received %q from a group whose rules do not let it", c.who, m.GetBody())
				}
				if code := e.ackCode(t, c.ctx, "cg_two_"+c.who, "Shared", m); code != v2pb.Code_OK {
					t.Fatalf("%s's ack: %v", c.who, code)
				}
				got++
			}
			return got == n
		})
	}
}

// TestProxyRelaysWhiteListedClient: a client that broker-a admits by its
// address alone (127.0.0.2, unsigned) sends and receives through the
// proxy: the receive, relayed to broker-a's leader, carries its address,
// vouched for by the proxy's account. An unsigned client at another
// address is refused by the proxy; one that calls broker-a's port itself
// and claims the white-listed address, unsigned or signed by an account
// that is no admin, is refused there.
func TestProxyRelaysWhiteListedClient(t *testing.T) {
	g := startTwoGroups(t)
	white := &secureEnv{mq: clientFrom(t, g.proxy, "127.0.0.2"), addr: g.proxy}
	other := &secureEnv{mq: clientFrom(t, g.proxy, "127.0.0.3"), addr: g.proxy}
	ctx := testCtx(t)

	if code := other.sendCode(t, ctx, "Shared", "not white-listed"); code != v2pb.Code_UNAUTHORIZED {
		t.Fatalf("an unsigned send from 127.0.0.3: %v", code)
	}
	if code, _ := other.receiveCode(t, ctx, "cg_white", "Shared"); code != v2pb.Code_UNAUTHORIZED {
		t.Fatalf("an unsigned receive from 127.0.0.3: %v", code)
	}
	if code := white.sendCode(t, ctx, "Shared", "white-listed"); code != v2pb.Code_OK {
		t.Fatalf("the white-listed client's send: %v", code)
	}
	if got := g.stored(t, "Shared"); got["broker-a"] != 1 || got["broker-b"] != 0 {
		t.Fatalf("the white-listed client's send went to %v, want broker-a", got)
	}
	first := white.receiveFirst(t, ctx, "the white-listed client's receive", "cg_white", "Shared")
	if string(first.GetBody()) != "white-listed" {
		t.Fatalf("received %q", first.GetBody())
	}
	if code := white.ackCode(t, ctx, "cg_white", "Shared", first); code != v2pb.Code_OK {
		t.Fatalf("the white-listed client's ack: %v", code)
	}

	// Claims of the white-listed address made to broker-a's port itself.
	direct := &secureEnv{mq: clientFrom(t, g.nodeA, "127.0.0.3"), addr: g.nodeA}
	if code, _ := direct.receiveCode(t, ctx, "cg_white", "Shared"); code != v2pb.Code_UNAUTHORIZED {
		t.Fatalf("an unsigned receive from 127.0.0.3 at broker-a: %v", code)
	}
	dt := time.Now().UTC().Format("20060102T150405Z")
	for name, c := range map[string]context.Context{
		"unsigned claim":              metadata.AppendToOutgoingContext(ctx, "x-ledgermq-relayed-for", "127.0.0.2:1"),
		"claim signed by a non-admin": relayClaim(ctx, "127.0.0.2:1", dt, "alice1", "alice-secret"),
		"claim with a wrong secret":   relayClaim(ctx, "127.0.0.2:1", dt, "proxyadmin", "not-the-secret"),
		"claim of another address":    relayClaimAs(ctx, "127.0.0.2:1", "127.0.0.3:1", dt, "proxyadmin", "proxy-secret"),
	} {
		if code, _ := direct.receiveCode(t, c, "cg_white", "Shared"); code != v2pb.Code_UNAUTHORIZED {
			t.Errorf("%s at broker-a: %v, want UNAUTHORIZED", name, code)
		}
	}
	// The admin account's claim is the proxy's own: it stands.
	if code, _ := direct.receiveCode(t, relayClaim(ctx, "127.0.0.2:1", dt, "proxyadmin", "proxy-secret"), "cg_white", "Shared"); code != v2pb.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("the admin account's claim at broker-a: %v", code)
	}
}

// relayClaim is ctx with a relay's statement that the call is for a
// client at addr, signed by accessKey.
func relayClaim(ctx context.Context, addr, dt, accessKey, secretKey string) context.Context {
	return relayClaimAs(ctx, addr, addr, dt, accessKey, secretKey)
}

// relayClaimAs states addr but signs signedAddr.
func relayClaimAs(ctx context.Context, addr, signedAddr, dt, accessKey, secretKey string) context.Context {
	mac := hmac.New(sha1.New, []byte(secretKey))
	mac.Write([]byte(dt + "\n" + signedAddr))
	return metadata.AppendToOutgoingContext(ctx, "x-ledgermq-relayed-for", addr, "x-ledgermq-relay-date-time", dt,
		"x-ledgermq-relay-authorization", "MQv2-HMAC-SHA1 Credential="+accessKey+", SignedHeaders=x-ledgermq-relay-date-time;x-ledgermq-relayed-for, Signature="+hex.EncodeToString(mac.Sum(nil)))
}
