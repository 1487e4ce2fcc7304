package compat

// The real client against a name server with its ACL on, in front of a
// group with its ACL on: route queries signed with primitive.Credentials
// pass, wrongly signed ones are refused, and our admin's name-server
// request needs an admin account.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/remoting"
	"github.com/ledgermq/ledgermq/routing"
)

// nsACLBroker is the account the nodes register with.
var nsACLBroker = auth.Credentials{AccessKey: "broker-node", SecretKey: "broker-secret"}

// startNamesrvACL starts a name server with its ACL on (file text, and
// the cluster secret) and a 3-node group with its ACL on (the same file)
// registering only with it, signed with nsACLBroker.
func startNamesrvACL(t *testing.T, text string) (*routing.Server, *brokertest.Cluster) {
	t.Helper()
	const secret = "0123456789abcdef0123456789abcdef"
	file := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ns, err := routing.NewServer(routing.Config{Addr: "127.0.0.1:0", Secret: secret, ACLEnable: true, ACLFile: file})
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = ns.Close(ctx)
	})
	tc := brokertest.StartCluster(t, 3, func(_ int, c *broker.Config) {
		c.NamesrvAddrs = []string{ns.Addr().String()}
		c.ACLEnable, c.ACLFile = true, file
		c.ClusterSecret = secret
		c.NamesrvCredentials = nsACLBroker
	})
	return ns, tc
}

// waitNsRoute waits until ns routes topic with a leader.
func waitNsRoute(t *testing.T, ctx context.Context, ns *routing.Server, topic string) {
	t.Helper()
	for {
		if r, ok := ns.Table().Route(topic); ok {
			for _, bd := range r.BrokerDatas {
				if _, ok := bd.BrokerAddrs[0]; ok {
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no route with a leader for %s", topic)
		case <-time.After(10 * time.Millisecond): // polls another goroutine's table
		}
	}
}

// TestRealClientNamesrvACL: producers and a pull consumer of the real
// client with the right credentials work through an ACL-on name server;
// with a wrong secret their route query is refused; our producer signs
// its route queries the same way; our admin deletes a topic (from the
// brokers, then the name server) only with an admin account.
func TestRealClientNamesrvACL(t *testing.T) {
	text := compatACL + "  - accessKey: " + nsACLBroker.AccessKey + "\n    secretKey: " + nsACLBroker.SecretKey + "\n"
	ns, tc := startNamesrvACL(t, text)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitNsRoute(t, ctx, ns, "TBW102")
	nsAddrs := []string{ns.Addr().String()}
	leaderAddr, err := tc.LeaderAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}

	mkAdmin := func(creds primitive.Credentials) *client.Admin {
		a, err := client.NewAdmin(client.WithAdminNameServers(nsAddrs...), client.WithAdminCredentials(creds.AccessKey, creds.SecretKey))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close() })
		return a
	}
	ops := mkAdmin(adminCreds)
	target := client.Target{BrokerAddr: leaderAddr}
	for _, topic := range []string{"AclBothTopic", "AclPubTopic"} {
		if _, err := ops.CreateTopic(ctx, client.TopicConfig{Topic: topic, ReadQueues: 2, WriteQueues: 2, Perm: 6}, target); err != nil {
			t.Fatalf("admin creating %s: %v", topic, err)
		}
		waitNsRoute(t, ctx, ns, topic)
	}
	if topics, err := mkAdmin(appCreds).ListTopics(ctx); err != nil || !strings.Contains(fmt.Sprint(topics), "AclBothTopic") {
		t.Fatalf("topic list signed by an account that is not admin: %v %v", topics, err)
	}

	// Right credentials: the route query (signed) and the send pass.
	app := aclProducer(t, nsAddrs, "nsacl-app", &appCreds)
	for i := 0; i < 3; i++ {
		if _, err := app.SendSync(ctx, primitive.NewMessage("AclBothTopic", []byte(fmt.Sprintf("m%d", i)))); err != nil {
			t.Fatalf("send with the right credentials: %v", err)
		}
	}
	// A wrong secret: the name server refuses the route query, so the
	// send never reaches a broker.
	wrong := primitive.Credentials{AccessKey: "app-user", SecretKey: "not-the-secret"}
	_, err = aclProducer(t, nsAddrs, "nsacl-wrong", &wrong).SendSync(ctx, primitive.NewMessage("AclPubTopic", []byte("x")))
	if err == nil || !strings.Contains(err.Error(), "route info not found") {
		t.Fatalf("send with a wrong secret: %v, want the route refused by the name server", err)
	}
	// No credentials: routes are open, the broker refuses the send.
	_, err = aclProducer(t, nsAddrs, "nsacl-none", nil).SendSync(ctx, primitive.NewMessage("AclPubTopic", []byte("x")))
	wantSendRefused(t, "no credentials", err, "no accessKey")

	// Our producer signs its route queries too.
	for _, tt := range []struct {
		creds  primitive.Credentials
		remark string
	}{{appCreds, ""}, {wrong, "signature of GET_ROUTEINFO_BY_TOPIC for accessKey app-user"}} {
		p, err := client.NewProducer(client.WithNameServers(nsAddrs...), client.WithGroup("nsacl-ours"),
			client.WithCredentials(tt.creds.AccessKey, tt.creds.SecretKey))
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Send(ctx, &client.Message{Topic: "AclBothTopic", Body: []byte("ours")})
		_ = p.Close()
		if (tt.remark == "" && err != nil) || (tt.remark != "" && (err == nil || !strings.Contains(err.Error(), tt.remark))) {
			t.Fatalf("our producer as %s/%s: %v, want %q", tt.creds.AccessKey, tt.creds.SecretKey, err, tt.remark)
		}
	}

	// A pull consumer with the right credentials.
	c, err := rocketmq.NewPullConsumer(consumer.WithNameServer(nsAddrs), consumer.WithGroupName("acl-cg"),
		consumer.WithInstance("nsacl-pull"), consumer.WithCredentials(appCreds))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Assign("AclBothTopic", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	mqs, err := c.GetTopicRouteInfo("AclBothTopic")
	if err != nil || len(mqs) == 0 {
		t.Fatalf("route through the name server with its ACL on: %v %v", mqs, err)
	}
	total := 0
	for _, mq := range mqs {
		res, err := c.PullFrom(ctx, mq, 0, 32)
		if err != nil {
			t.Fatalf("pull: %v", err)
		}
		total += len(res.GetMessageExts())
	}
	if total != 4 {
		t.Fatalf("pulled %d messages, want 4", total)
	}

	// Our admin: deleting a topic (broker, then name server) needs an
	// admin account; the admin's is accepted by the name server too.
	err = mkAdmin(appCreds).DeleteTopic(ctx, "AclPubTopic", target)
	var be *client.BrokerError
	if !errors.As(err, &be) || be.Code != remoting.NoPermission || !strings.Contains(be.Remark, "needs an admin account, accessKey app-user is not one") {
		t.Fatalf("delete topic as an account that is not admin: %v", err)
	}
	if err := ops.DeleteTopic(ctx, "AclPubTopic", target); err != nil {
		t.Fatalf("delete topic as the admin: %v", err)
	}
}
