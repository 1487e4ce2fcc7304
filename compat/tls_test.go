package compat

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/testwait"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
	"github.com/ledgermq/ledgermq/routing"
)

// tlsCluster is a TLS name server and a 3-node group whose client ports
// are TLS and which register with that name server over TLS.
type tlsCluster struct {
	tc    *brokertest.Cluster
	ns    *routing.Server
	files tlsconf.Files
}

func (c *tlsCluster) nameServers() []string { return []string{c.ns.Addr().String()} }

func startTLSCluster(t testing.TB) *tlsCluster {
	t.Helper()
	f, err := tlsconf.WriteDev(filepath.Join(t.TempDir(), "tls"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := tlsconf.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	srvTLS, err := src.ServerConfig(false)
	if err != nil {
		t.Fatal(err)
	}
	cliTLS := src.ClientConfig()
	ns, err := routing.NewServer(routing.Config{Addr: "127.0.0.1:0", TLSServer: srvTLS, TLSClient: cliTLS})
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
		c.TLSServer, c.TLSClient = srvTLS, cliTLS
	})
	testwait.For(t, 30*time.Second, "the TLS name server lists the group's leader", func() bool {
		return slices.ContainsFunc(ns.Table().Members(), func(m routing.Member) bool { return m.BrokerID == 0 })
	})
	return &tlsCluster{tc: tc, ns: ns, files: f}
}

// useRealClientTLS turns the real client's TLS switch on. The switch is a
// field of the client's process-wide default remoting config, so it is
// turned off again when the test ends, after its clients shut down (the
// cleanup is registered first, so it runs last).
func useRealClientTLS(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		if _, err := rocketmq.NewProducer(producer.WithTls(false), producer.WithNameServer([]string{"127.0.0.1:1"})); err != nil {
			t.Errorf("turning the real client's TLS off: %v", err)
		}
	})
}

// ensureRetryTopicTLS creates group's retry topic through the TLS name
// server and waits until it is routed (ensureRetryTopic, over TLS).
func ensureRetryTopicTLS(t *testing.T, ctx context.Context, c *tlsCluster, group string) {
	t.Helper()
	adm, err := client.NewAdmin(client.WithAdminNameServers(c.nameServers()...), client.WithAdminTLSFiles(c.files.CAFile, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	retry := "%RETRY%" + group
	if _, err := adm.CreateTopic(ctx, client.TopicConfig{Topic: retry, ReadQueues: 1, WriteQueues: 1, Perm: 6}, client.Target{}); err != nil {
		t.Fatalf("creating %s: %v", retry, err)
	}
	testwait.Ctx(t, ctx, "the route of "+retry, func() bool {
		_, err := adm.TopicRoute(ctx, retry)
		return err == nil
	})
}

// TestTLSRealClient: rocketmq-client-go with its TLS switch on
// (producer.WithTls, consumer.WithTls) sends to and push-consumes from a
// TLS cluster.
func TestTLSRealClient(t *testing.T) {
	useRealClientTLS(t)
	c := startTLSCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	p, err := rocketmq.NewProducer(producer.WithNameServer(c.nameServers()), producer.WithGroupName("tls-pg"),
		producer.WithInstanceName("tls-send"), producer.WithRetry(3), producer.WithTls(true))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	const n = 20
	for i := 0; i < n; i++ {
		res, err := p.SendSync(ctx, primitive.NewMessage("TLSTopic", fmt.Appendf(nil, "tls-%d", i)))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d over TLS: %v %+v", i, err, res)
		}
	}

	var mu sync.Mutex
	got := map[string]bool{}
	pc, err := rocketmq.NewPushConsumer(consumer.WithNameServer(c.nameServers()), consumer.WithGroupName("tls-cg"),
		consumer.WithInstance("tls-recv"), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithTls(true))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe("TLSTopic", consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got[string(m.Body)] = true
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	// The group's heartbeat creates its retry topic, which the client may
	// or may not have routed by its first rebalance; routed first, both
	// rebalances can be awaited (a Shutdown racing the second one trips
	// the race detector inside the client: see balanceLog).
	ensureRetryTopicTLS(t, ctx, c, "tls-cg")
	startBalanced(t, pc, "tls-cg", "tls-recv", "TLSTopic", "%RETRY%tls-cg")
	defer pc.Shutdown()
	testwait.Ctx(t, ctx, "every message consumed over TLS", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == n
	})
}

// TestTLSOurClient: our producer, push consumer and admin with the CA
// file reach a TLS cluster; a plaintext producer is refused with an error.
func TestTLSOurClient(t *testing.T) {
	c := startTLSCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := c.nameServers()

	plain, err := client.NewProducer(client.WithNameServers(ns...), client.WithGroup("plain-pg"), client.WithRetries(0),
		client.WithSendTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if res, err := plain.Send(ctx, &client.Message{Topic: "OursTLS", Body: []byte("plain")}); err == nil {
		t.Fatalf("a plaintext send to a TLS cluster was acknowledged: %+v", res)
	}

	p, err := client.NewProducer(client.WithNameServers(ns...), client.WithGroup("ours-tls-pg"),
		client.WithTLSFiles(c.files.CAFile, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n = 20
	for i := 0; i < n; i++ {
		if _, err := p.Send(ctx, &client.Message{Topic: "OursTLS", Body: fmt.Appendf(nil, "ours-%d", i)}); err != nil {
			t.Fatalf("send %d over TLS: %v", i, err)
		}
	}
	var mu sync.Mutex
	got := map[string]bool{}
	pc, err := client.NewPushConsumer(client.WithNameServers(ns...), client.WithGroup("ours-tls-cg"),
		client.WithConsumeFromWhere(client.ConsumeFromFirstOffset), client.WithTLSFiles(c.files.CAFile, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if err := pc.Subscribe("OursTLS", client.Selector{}, func(_ context.Context, m *client.MessageExt) client.ConsumeResult {
		mu.Lock()
		defer mu.Unlock()
		got[string(m.Body)] = true
		return client.ConsumeSuccess
	}); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	testwait.Ctx(t, ctx, "every message consumed over TLS", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == n
	})

	adm, err := client.NewAdmin(client.WithAdminNameServers(ns...), client.WithAdminTLSFiles(c.files.CAFile, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if topics, err := adm.ListTopics(ctx); err != nil || !slices.Contains(topics, "OursTLS") {
		t.Fatalf("admin over TLS: %v, %v", topics, err)
	}
	if _, err := client.NewProducer(client.WithNameServers(ns...), client.WithTLSFiles(filepath.Join(t.TempDir(), "none.pem"), "", "")); err == nil {
		t.Fatal("a producer with a missing CA file was made")
	}
}

// BenchmarkTLSSend measures acknowledged 1 KiB sends per second from our
// producers against a 3-node group, plaintext and TLS in the same run
// (go test ./compat -run '^$' -bench TLSSend).
func BenchmarkTLSSend(b *testing.B) {
	for _, mode := range []string{"plain", "tls"} {
		b.Run(mode, func(b *testing.B) {
			var ns []string
			var opts []client.Option
			if mode == "tls" {
				c := startTLSCluster(b)
				ns = c.nameServers()
				opts = append(opts, client.WithTLSFiles(c.files.CAFile, "", ""))
			} else {
				ns = startBenchGroup(b)
			}
			const producers = 8
			body := bytes.Repeat([]byte("x"), 1024)
			var ps []*client.Producer
			for i := 0; i < producers; i++ {
				p, err := client.NewProducer(append([]client.Option{client.WithNameServers(ns...),
					client.WithGroup(fmt.Sprintf("bench-tls-%d", i))}, opts...)...)
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close()
				ps = append(ps, p)
			}
			ctx := context.Background()
			if _, err := ps[0].Send(ctx, &client.Message{Topic: "BenchTLS", Body: body}); err != nil {
				b.Fatal(err)
			}
			timedSends(b, producers*16, "sends/s", func(i int) error {
				_, err := ps[i%producers].Send(ctx, &client.Message{Topic: "BenchTLS", Body: body})
				return err
			})
		})
	}
}
