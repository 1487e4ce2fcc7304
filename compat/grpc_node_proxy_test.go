package compat

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/grpcapi/grpcapitest"
	"github.com/ledgermq/ledgermq/internal/testwait"
)

// TestRealNodeClientThroughProxy: the official RocketMQ 5 Node.js client,
// given only the address of a proxy in cluster mode (ledgermq proxy) in
// front of a three-node group, sends a normal, a FIFO, a delayed and a
// committed transactional message, each stored in the group as sent
// (producer.js), and consumes with a SimpleConsumer — receive, ack,
// changeInvisibleDuration and redelivery — through the proxy's relay to
// the group's leader (simple_consumer.js), the same checks as against a
// node's own gRPC port.
func TestRealNodeClientThroughProxy(t *testing.T) {
	nodeBin, dir := nodeClient(t)
	pc := grpcapitest.StartProxyCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin, err := client.NewAdmin(client.WithAdminNameServers(pc.TC.NamesrvAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const topic, consumeTopic, group = "NodeProxyTopic", "NodeProxyConsume", "NodeProxyGroup"
	for _, tp := range []string{topic, consumeTopic} {
		if _, err := admin.CreateTopic(ctx, client.TopicConfig{Topic: tp, ReadQueues: 4, WriteQueues: 4}, client.Target{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tp := range []string{topic, consumeTopic} {
		waitWritableRoute(t, ctx, admin, tp)
	}
	endpoint := pc.Proxy.Addr().String()
	runNodeProducer(t, ctx, nodeBin, dir, endpoint, topic, admin)
	runNodeSimpleConsumer(t, ctx, nodeBin, dir, endpoint, consumeTopic, group)
}

// TestRealNodeClientSecureThroughProxy: the official RocketMQ 5 Node.js
// client with sessionCredentials, given only the address of a proxy in
// cluster mode that checks signatures (the group's ACL on, the proxy
// reading its rules with an admin account of its own), sends and receives
// with an account that may (secure.js); with a wrong secret key the proxy
// refuses it (UNAUTHORIZED) and it fails.
func TestRealNodeClientSecureThroughProxy(t *testing.T) {
	nodeBin, dir := nodeClient(t)
	aclFile := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(aclFile, []byte(nodeSecureACL), 0o600); err != nil {
		t.Fatal(err)
	}
	pc := grpcapitest.StartProxyClusterWith(t, grpcapitest.ProxyACL{File: aclFile, AccessKey: "admin123", SecretKey: "admin-secret"})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin, err := client.NewAdmin(client.WithAdminNameServers(pc.TC.NamesrvAddr()), client.WithAdminCredentials("admin123", "admin-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const topic, group = "NodeSecureTopic", "NodeSecureGroup"
	if _, err := admin.CreateTopic(ctx, client.TopicConfig{Topic: topic, ReadQueues: 2, WriteQueues: 2}, client.Target{}); err != nil {
		t.Fatal(err)
	}
	for id := range pc.TC.Peers {
		b := pc.TC.Broker(id)
		testwait.For(t, 20*time.Second, "the topic on "+id, func() bool { _, ok := b.Topic(topic); return ok })
	}
	waitWritableRoute(t, ctx, admin, topic)
	checkNodeSecure(t, ctx, nodeBin, dir, pc.Proxy.Addr().String(), topic, group, "LEDGERMQ_PLAINTEXT=1")
}

// waitWritableRoute waits until the name servers' route of topic names a
// leader and writable queues: the proxy answers clients from it, and a
// 5.x producer given a route without writable queues fails at once.
func waitWritableRoute(t *testing.T, ctx context.Context, admin *client.Admin, topic string) {
	t.Helper()
	testwait.For(t, 30*time.Second, "a writable route of "+topic, func() bool {
		rd, err := admin.TopicRoute(ctx, topic)
		if err != nil {
			return false
		}
		leaders := map[string]bool{}
		for _, bd := range rd.BrokerDatas {
			_, leaders[bd.BrokerName] = bd.LeaderAddr()
		}
		for _, qd := range rd.QueueDatas {
			if qd.WriteQueueNums > 0 && qd.Writable() && leaders[qd.BrokerName] {
				return true
			}
		}
		return false
	})
}
