package grpcapi_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/grpcapi/grpcapitest"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
)

// nodeClaim is ctx with a node's statement that the call is relayed for
// a client at addr, signed with the cluster secret secret as a node of
// the group signs it.
func nodeClaim(ctx context.Context, addr, dt, node, secret string) context.Context {
	key := hmac.New(sha256.New, []byte(secret))
	key.Write([]byte("ledgermq node relay statement v1"))
	mac := hmac.New(sha256.New, key.Sum(nil))
	mac.Write([]byte(dt + "\n" + addr))
	return metadata.AppendToOutgoingContext(ctx, "x-ledgermq-relayed-for", addr, "x-ledgermq-relay-date-time", dt,
		"x-ledgermq-relay-authorization", "LedgerMQ-Node-HMAC-SHA256 Credential="+node+
			", SignedHeaders=x-ledgermq-relay-date-time;x-ledgermq-relayed-for, Signature="+hex.EncodeToString(mac.Sum(nil)))
}

// TestFollowerRelaysWhiteListedClient: in a three-node group with the
// ACL on (aclGroupA: 127.0.0.2 white-listed) and a cluster secret, a
// client admitted by its address alone (127.0.0.2, unsigned) that calls
// a follower's gRPC port sends, receives, changes the invisible time and
// acknowledges: the consumer calls, relayed to the leader's port, carry
// its address, signed by the follower with the cluster secret. An
// unsigned client at another address is refused at the follower; one
// that calls the leader's port itself with a node's statement of the
// white-listed address signed with a wrong secret, or in the proxy's
// scheme by no account, is refused there, and so is a node's statement,
// even a good one, at the proxy, which holds no cluster secret.
func TestFollowerRelaysWhiteListedClient(t *testing.T) {
	dir := t.TempDir()
	aclFile := filepath.Join(dir, "plain_acl.yml")
	if err := os.WriteFile(aclFile, []byte(aclGroupA), 0o600); err != nil {
		t.Fatal(err)
	}
	pc := grpcapitest.StartProxyClusterWith(t, grpcapitest.ProxyACL{File: aclFile, AccessKey: "proxyadmin", SecretKey: "proxy-secret"})
	tc := pc.TC
	admin, err := client.NewAdmin(client.WithAdminNameServers(tc.NamesrvAddr()), client.WithAdminCredentials("proxyadmin", "proxy-secret"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	if _, err := admin.CreateTopic(testCtx(t), client.TopicConfig{Topic: "WhiteRelay", ReadQueues: 2, WriteQueues: 2}, client.Target{}); err != nil {
		t.Fatal(err)
	}
	for id := range tc.Peers {
		b := tc.Broker(id)
		waitFor(t, "the topic on "+id, func() bool { _, ok := b.Topic("WhiteRelay"); return ok })
	}
	var leaderID string
	waitFor(t, "a leader known to every node", func() bool {
		n, err := tc.Raft.Leader(testCtx(t))
		if err != nil || n.Group() == nil || !n.Group().IsLeader() {
			return false
		}
		for id := range tc.Peers {
			if tc.Broker(id).LeaderID() != n.ID {
				return false
			}
		}
		leaderID = n.ID
		return true
	})
	var followerAddr string
	for id, srv := range pc.Nodes {
		if id != leaderID {
			followerAddr = srv.Addr().String()
			break
		}
	}
	leaderAddr := pc.Nodes[leaderID].Addr().String()
	ctx := testCtx(t)

	white := &secureEnv{mq: clientFrom(t, followerAddr, "127.0.0.2"), addr: followerAddr}
	other := &secureEnv{mq: clientFrom(t, followerAddr, "127.0.0.3"), addr: followerAddr}
	if code := other.sendCode(t, ctx, "WhiteRelay", "not white-listed"); code != v2pb.Code_UNAUTHORIZED {
		t.Fatalf("an unsigned send from 127.0.0.3 at a follower: %v", code)
	}
	if code, _ := other.receiveCode(t, ctx, "cg_white", "WhiteRelay"); code != v2pb.Code_UNAUTHORIZED {
		t.Fatalf("an unsigned receive from 127.0.0.3 at a follower: %v", code)
	}
	if code := white.sendCode(t, ctx, "WhiteRelay", "white-listed at a follower"); code != v2pb.Code_OK {
		t.Fatalf("the white-listed client's send at a follower: %v", code)
	}
	first := white.receiveFirst(t, ctx, "the white-listed client's receive at a follower", "cg_white", "WhiteRelay")
	if string(first.GetBody()) != "white-listed at a follower" {
		t.Fatalf("received %q", first.GetBody())
	}
	sp := first.GetSystemProperties()
	ci, err := white.mq.ChangeInvisibleDuration(ctx, &v2pb.ChangeInvisibleDurationRequest{
		Group: &v2pb.Resource{Name: "cg_white"}, Topic: &v2pb.Resource{Name: "WhiteRelay"},
		ReceiptHandle: sp.GetReceiptHandle(), InvisibleDuration: durationpb.New(30 * time.Second), MessageId: sp.GetMessageId(),
	})
	if err != nil || ci.GetStatus().GetCode() != v2pb.Code_OK || ci.GetReceiptHandle() == "" {
		t.Fatalf("the white-listed client's invisible-time change at a follower: %v %v", ci, err)
	}
	sp.ReceiptHandle = proto.String(ci.GetReceiptHandle())
	if code := white.ackCode(t, ctx, "cg_white", "WhiteRelay", first); code != v2pb.Code_OK {
		t.Fatalf("the white-listed client's ack at a follower: %v", code)
	}

	// Claims of the white-listed address made to the leader's port itself.
	direct := &secureEnv{mq: clientFrom(t, leaderAddr, "127.0.0.3"), addr: leaderAddr}
	dt := time.Now().UTC().Format("20060102T150405Z")
	for name, c := range map[string]context.Context{
		"unsigned":                       ctx,
		"node claim with a wrong secret": nodeClaim(ctx, "127.0.0.2:1", dt, "n0", "not-the-cluster-secret-0123456789"),
		"node claim of another address": func() context.Context {
			good := nodeClaim(context.Background(), "127.0.0.3:1", dt, "n0", grpcapitest.ClusterSecret)
			md, _ := metadata.FromOutgoingContext(good)
			return metadata.AppendToOutgoingContext(ctx, "x-ledgermq-relayed-for", "127.0.0.2:1", "x-ledgermq-relay-date-time", dt,
				"x-ledgermq-relay-authorization", md.Get("x-ledgermq-relay-authorization")[0])
		}(),
		"proxy scheme with the node's signature": func() context.Context {
			good := nodeClaim(context.Background(), "127.0.0.2:1", dt, "n0", grpcapitest.ClusterSecret)
			md, _ := metadata.FromOutgoingContext(good)
			return metadata.AppendToOutgoingContext(ctx, "x-ledgermq-relayed-for", "127.0.0.2:1", "x-ledgermq-relay-date-time", dt,
				"x-ledgermq-relay-authorization", "MQv2-HMAC-SHA1"+md.Get("x-ledgermq-relay-authorization")[0][len("LedgerMQ-Node-HMAC-SHA256"):])
		}(),
		"proxy claim signed with the cluster secret": relayClaim(ctx, "127.0.0.2:1", dt, "n0", grpcapitest.ClusterSecret),
	} {
		if code, _ := direct.receiveCode(t, c, "cg_white", "WhiteRelay"); code != v2pb.Code_UNAUTHORIZED {
			t.Errorf("%s at the leader: %v, want UNAUTHORIZED", name, code)
		}
	}
	// The cluster secret's statement is a node's own: it stands at a node,
	// not at the proxy.
	good := nodeClaim(ctx, "127.0.0.2:1", dt, "n0", grpcapitest.ClusterSecret)
	if code, _ := direct.receiveCode(t, good, "cg_white", "WhiteRelay"); code != v2pb.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("a node's statement at the leader: %v", code)
	}
	fromWhite := &secureEnv{mq: clientFrom(t, pc.Proxy.Addr().String(), "127.0.0.2"), addr: pc.Proxy.Addr().String()}
	waitFor(t, "the proxy admitting the white-listed client", func() bool {
		return fromWhite.routeCode(t, ctx, "WhiteRelay") == v2pb.Code_OK
	})
	viaProxy := &secureEnv{mq: clientFrom(t, pc.Proxy.Addr().String(), "127.0.0.3"), addr: pc.Proxy.Addr().String()}
	if code, _ := viaProxy.receiveCode(t, good, "cg_white", "WhiteRelay"); code != v2pb.Code_UNAUTHORIZED {
		t.Fatalf("a node's statement at the proxy: %v, want UNAUTHORIZED", code)
	}
}
