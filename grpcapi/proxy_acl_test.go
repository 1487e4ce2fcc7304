package grpcapi_test

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/grpcapi/grpcapitest"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
)

// TestProxyChecksSignatures: a proxy in cluster mode in front of a group
// with the ACL on checks every call as the nodes do (checkAccess), against
// the group's rules it read with its own admin account: its sends go to
// the leader signed by the proxy, its receives and acks are relayed with
// the client's signature.
func TestProxyChecksSignatures(t *testing.T) {
	aclFile := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(aclFile, []byte(grpcACLFile), 0o600); err != nil {
		t.Fatal(err)
	}
	pc := grpcapitest.StartProxyClusterWith(t, grpcapitest.ProxyACL{File: aclFile, AccessKey: "admin123", SecretKey: "admin-secret"})
	admin, err := client.NewAdmin(client.WithAdminNameServers(pc.TC.NamesrvAddr()), client.WithAdminCredentials("admin123", "admin-secret"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	for _, topic := range []string{"AclPub", "AclSub"} {
		if _, err := admin.CreateTopic(testCtx(t), client.TopicConfig{Topic: topic, ReadQueues: 2, WriteQueues: 2}, client.Target{}); err != nil {
			t.Fatal(err)
		}
		for id := range pc.TC.Peers {
			b := pc.TC.Broker(id)
			waitFor(t, "topic "+topic+" on "+id, func() bool { _, ok := b.Topic(topic); return ok })
		}
	}
	conn, err := grpc.NewClient(pc.Proxy.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	e := &secureEnv{mq: v2pb.NewMessagingServiceClient(conn), addr: pc.Proxy.Addr().String()}
	e.checkAccess(t)
}
