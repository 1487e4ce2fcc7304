package compat

// The real client against a group with its ACL on: producers and a pull
// consumer signing with primitive.Credentials, as
// RocketMQ's own ACL expects; and the cost of the ACL on send throughput
// (BenchmarkRealClientSendACL, off and on in the same run).

import (
	"bytes"
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
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/ledgermq/ledgermq/acl"
	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/remoting"
)

const compatACL = `
accounts:
  - accessKey: app-user
    secretKey: app-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - AclPubTopic=PUB
      - AclSubTopic=SUB
      - AclBothTopic=PUB|SUB
      - AclDenyTopic=DENY
    groupPerms:
      - acl-cg=SUB
      - acl-deny-cg=DENY
  - accessKey: ops-admin
    secretKey: ops-secret
    admin: true
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
`

var (
	appCreds   = primitive.Credentials{AccessKey: "app-user", SecretKey: "app-secret"}
	adminCreds = primitive.Credentials{AccessKey: "ops-admin", SecretKey: "ops-secret"}
)

// startACLGroup starts a 3-node group with the ACL on (the file written
// to a temporary directory) and waits for its TBW102 route.
func startACLGroup(tb testing.TB, aclFile string) *brokertest.Cluster {
	tb.Helper()
	file := filepath.Join(tb.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(file, []byte(aclFile), 0o600); err != nil {
		tb.Fatal(err)
	}
	return brokertest.StartCluster(tb, 3, func(_ int, c *broker.Config) {
		c.ACLEnable, c.ACLFile = true, file
		c.ClusterSecret = "0123456789abcdef0123456789abcdef"
	})
}

func aclProducer(t *testing.T, ns []string, name string, creds *primitive.Credentials) rocketmq.Producer {
	t.Helper()
	opts := []producer.Option{producer.WithNameServer(ns), producer.WithGroupName("acl-pg"), producer.WithRetry(0),
		producer.WithInstanceName(name)}
	if creds != nil {
		opts = append(opts, producer.WithCredentials(*creds))
	}
	p, err := rocketmq.NewProducer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// wantSendRefused expects the broker's NO_PERMISSION answer naming remark.
func wantSendRefused(t *testing.T, what string, err error, remark string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("CODE: %d", remoting.NoPermission)) || !strings.Contains(err.Error(), remark) {
		t.Errorf("%s: %v, want NO_PERMISSION naming %q", what, err, remark)
	}
}

// TestRealClientACL: right, wrong and missing credentials; PUB, SUB, DENY
// per topic and SUB/DENY per group; admin requests refused for an account
// that is not admin.
func TestRealClientACL(t *testing.T) {
	tc := startACLGroup(t, compatACL)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitRoute(t, ctx, tc, "TBW102")
	ns := []string{tc.NamesrvAddr()}
	leader, err := tc.Raft.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leaderAddr := tc.Peers[leader.ID]
	meta := leader.Group().Metadata()

	// Topics: only an admin account creates them. Our admin client signs
	// (rocketmq-client-go's admin shares one client per process and does
	// not sign CreateTopic, so it cannot be given an account here).
	mkAdmin := func(ak, sk string) *client.Admin {
		a, err := client.NewAdmin(client.WithAdminNameServers(ns...), client.WithAdminCredentials(ak, sk))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close() })
		return a
	}
	target := client.Target{BrokerAddr: leaderAddr}
	_, err = mkAdmin(appCreds.AccessKey, appCreds.SecretKey).CreateTopic(ctx, client.TopicConfig{Topic: "AclNotAdminTopic", ReadQueues: 2, WriteQueues: 2, Perm: 6}, target)
	var be *client.BrokerError
	if !errors.As(err, &be) || be.Code != remoting.NoPermission || !strings.Contains(be.Remark, "UPDATE_AND_CREATE_TOPIC needs an admin account, accessKey app-user is not one") {
		t.Fatalf("create topic as an account that is not admin: %v", err)
	}
	if _, ok := meta.Topic("AclNotAdminTopic"); ok {
		t.Fatal("a topic created by an account that is not admin")
	}
	ops := mkAdmin(adminCreds.AccessKey, adminCreds.SecretKey)
	for _, topic := range []string{"AclPubTopic", "AclSubTopic", "AclBothTopic", "AclDenyTopic"} {
		if _, err := ops.CreateTopic(ctx, client.TopicConfig{Topic: topic, ReadQueues: 2, WriteQueues: 2, Perm: 6}, target); err != nil {
			t.Fatalf("admin creating %s: %v", topic, err)
		}
		waitRoute(t, ctx, tc, topic)
	}

	// Sends: right, wrong, missing credentials; PUB per topic.
	app := aclProducer(t, ns, "acl-app", &appCreds)
	for _, topic := range []string{"AclPubTopic", "AclBothTopic"} {
		if _, err := app.SendSync(ctx, primitive.NewMessage(topic, []byte("hello"))); err != nil {
			t.Fatalf("send to %s with PUB: %v", topic, err)
		}
	}
	_, err = app.SendSync(ctx, primitive.NewMessage("AclSubTopic", []byte("x")))
	wantSendRefused(t, "send to a SUB topic", err, "No permission to PUB topic AclSubTopic for accessKey app-user")
	_, err = app.SendSync(ctx, primitive.NewMessage("AclDenyTopic", []byte("x")))
	wantSendRefused(t, "send to a DENY topic", err, "No permission to PUB topic AclDenyTopic")
	wrong := primitive.Credentials{AccessKey: "app-user", SecretKey: "not-the-secret"}
	_, err = aclProducer(t, ns, "acl-wrong", &wrong).SendSync(ctx, primitive.NewMessage("AclPubTopic", []byte("x")))
	wantSendRefused(t, "wrong secret", err, "signature of SEND_MESSAGE")
	_, err = aclProducer(t, ns, "acl-none", nil).SendSync(ctx, primitive.NewMessage("AclPubTopic", []byte("x")))
	wantSendRefused(t, "no credentials", err, "no accessKey")

	// Something to read on AclSubTopic and AclBothTopic (the admin may).
	opsP := aclProducer(t, ns, "acl-ops", &adminCreds)
	for _, topic := range []string{"AclSubTopic", "AclBothTopic"} {
		for q := 0; q < 2; q++ {
			if _, err := opsP.SendSync(ctx, primitive.NewMessage(topic, []byte(fmt.Sprintf("m%d", q)))); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Pulls: SUB on the topic and on the group.
	pull := func(group, topic string, creds primitive.Credentials, want int) error {
		c, err := rocketmq.NewPullConsumer(consumer.WithNameServer(ns), consumer.WithGroupName(group),
			consumer.WithInstance(fmt.Sprintf("acl-%s-%s", group, topic)), consumer.WithCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Assign(topic, nil); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer c.Shutdown()
		mqs, err := c.GetTopicRouteInfo(topic)
		if err != nil || len(mqs) == 0 {
			t.Fatalf("route of %s: %v %v", topic, mqs, err)
		}
		var total int
		for _, mq := range mqs {
			res, err := c.PullFrom(ctx, mq, 0, 32)
			if err != nil {
				return err
			}
			total += len(res.GetMessageExts())
		}
		if total != want {
			t.Fatalf("pulled %d messages of %s, want %d", total, topic, want)
		}
		return nil
	}
	for topic, n := range map[string]int{"AclSubTopic": 2, "AclBothTopic": 3} {
		if err := pull("acl-cg", topic, appCreds, n); err != nil {
			t.Fatalf("pull %s with SUB: %v", topic, err)
		}
	}
	for _, c := range []struct{ group, topic, remark string }{
		{"acl-cg", "AclPubTopic", "No permission to SUB topic AclPubTopic"},
		{"acl-deny-cg", "AclSubTopic", "No permission to SUB group acl-deny-cg"},
		{"acl-other-cg", "AclSubTopic", "No permission to SUB group acl-other-cg"},
	} {
		err := pull(c.group, c.topic, appCreds, 0)
		if err == nil || !strings.Contains(err.Error(), "Response Code: 16") || !strings.Contains(err.Error(), c.remark) {
			t.Errorf("pull %s as %s: %v, want NO_PERMISSION naming %q", c.topic, c.group, err, c.remark)
		}
	}
}

// TestRealClientACLSignatureVerifies: a request signed by the real client's
// own code (its ACL interceptor, on the wire) verifies with auth.Verify, a
// SecurityToken included.
func TestRealClientACLSignatureVerifies(t *testing.T) {
	got := make(chan *remoting.Command, 1)
	srv := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0"})
	srv.Handle(remoting.GetRouteInfoByTopic, "", remoting.HandlerFunc(func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		select {
		case got <- req:
		default:
		}
		return remoting.NewResponse(req, remoting.TopicNotExist, "no route")
	}))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	for _, creds := range []primitive.Credentials{appCreds, {AccessKey: "app-user", SecretKey: "app-secret", SecurityToken: "tok"}} {
		p, err := rocketmq.NewProducer(producer.WithNameServer([]string{srv.Addr().String()}), producer.WithCredentials(creds),
			producer.WithRetry(0), producer.WithInstanceName("acl-sig-"+creds.SecurityToken))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, _ = p.SendSync(ctx, primitive.NewMessage("SigTopic", []byte("x")))
		cancel()
		_ = p.Shutdown()
		var req *remoting.Command
		select {
		case req = <-got:
		default:
			t.Fatal("the real client sent no route request")
		}
		ext := req.ExtFields
		if creds.SecurityToken != "" {
			// rocketmq-client-go adds SecurityToken after signing: it is
			// not in its signed content (acl.Check allows for that).
			ext = map[string]string{}
			for k, v := range req.ExtFields {
				if k != auth.FieldSecurityToken {
					ext[k] = v
				}
			}
			rules, err := acl.Parse([]byte(compatACL))
			if err != nil {
				t.Fatal(err)
			}
			if err := rules.Check(acl.Request{RemoteAddr: "127.0.0.1:1", Ext: req.ExtFields, Body: req.Body}); err != nil {
				t.Fatalf("the ACL refuses the real client's request with a security token: %v", err)
			}
		}
		if ak, err := auth.Verify(ext, req.Body, func(string) (string, bool) { return creds.SecretKey, true }); err != nil || ak != creds.AccessKey {
			t.Fatalf("real client's signature (token %q) on %v: %q %v", creds.SecurityToken, req.ExtFields, ak, err)
		}
	}
}

// BenchmarkRealClientSendACL measures acknowledged 1 KiB SendSync calls per
// second from real-client producers against a 3-node group, with the ACL
// off and on (signed requests, every one checked) in the same run:
//
//	go test ./compat -run '^$' -bench RealClientSendACL -benchtime 20000x
func BenchmarkRealClientSendACL(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "acl=off", true: "acl=on"}[on], func(b *testing.B) {
			var tc *brokertest.Cluster
			var creds []producer.Option
			if on {
				tc = startACLGroup(b, compatACL)
				creds = []producer.Option{producer.WithCredentials(appCreds)}
			} else {
				tc = brokertest.StartCluster(b, 3, nil)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			leader, err := tc.Raft.Leader(ctx)
			if err != nil {
				b.Fatal(err)
			}
			a, err := client.NewAdmin(client.WithAdminNameServers(tc.NamesrvAddr()), client.WithAdminCredentials(adminCreds.AccessKey, adminCreds.SecretKey))
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			if _, err := a.CreateTopic(ctx, client.TopicConfig{Topic: "AclPubTopic", ReadQueues: 8, WriteQueues: 8, Perm: 6},
				client.Target{BrokerAddr: tc.Peers[leader.ID]}); err != nil {
				b.Fatal(err)
			}
			const producers = 8
			body := bytes.Repeat([]byte("x"), 1024)
			var ps []rocketmq.Producer
			for i := 0; i < producers; i++ {
				p, err := rocketmq.NewProducer(append([]producer.Option{producer.WithNameServer([]string{tc.NamesrvAddr()}),
					producer.WithGroupName("bench-pg"), producer.WithInstanceName(fmt.Sprintf("bench-acl-%d", i)), producer.WithRetry(2)}, creds...)...)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Start(); err != nil {
					b.Fatal(err)
				}
				defer p.Shutdown()
				ps = append(ps, p)
			}
			// The route must be known before timing (created above).
			for {
				if _, err := ps[0].SendSync(ctx, primitive.NewMessage("AclPubTopic", body)); err == nil {
					break
				} else if ctx.Err() != nil {
					b.Fatal(err)
				}
			}
			timedSends(b, producers*16, "sends/s", func(i int) error {
				_, err := ps[i%producers].SendSync(ctx, primitive.NewMessage("AclPubTopic", body))
				return err
			})
		})
	}
}
