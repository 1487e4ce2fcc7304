package compat

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/grpcapi"
	"github.com/ledgermq/ledgermq/message"
)

// TestRealNodeClientProducer: the official RocketMQ 5 Node.js client
// (rocketmq-client-nodejs, installed by `npm ci` in compat/nodejs; .ci/run
// does it) sends a normal, a FIFO, a delayed and a transactional message
// (committed) to a broker node's gRPC port, in its own process; each is
// stored with its body, tag and the client's message id as UNIQ_KEY. It
// skips when node is not installed, unless LEDGERMQ_REQUIRE_NODE=1.
func TestRealNodeClientProducer(t *testing.T) {
	nodeBin, dir := nodeClient(t)
	const topic = "NodeGrpcTopic"
	_, srv, admin, ctx := startGRPCNode(t, topic)

	runNodeProducer(t, ctx, nodeBin, dir, srv.Addr().String(), topic, admin)
}

// runNodeProducer runs producer.js against endpoint and checks that what
// it sent is stored in topic (TestRealNodeClientProducer says what).
func runNodeProducer(t *testing.T, ctx context.Context, nodeBin, dir, endpoint, topic string, admin *client.Admin) {
	t.Helper()
	var ids map[string]string
	runNodeScript(t, ctx, nodeBin, dir, &ids, nil, "producer.js", endpoint, topic)
	want := map[string]struct{ body, tag string }{
		"normal": {"normal body", "TagN"},
		"fifo":   {"fifo body", "TagF"},
		"delay":  {"delayed body", "TagD"},
		"txn":    {"txn body", "TagT"},
	}
	for kind, w := range want {
		id := ids[kind]
		if id == "" {
			t.Fatalf("no message id for the %s message: %v", kind, ids)
		}
		var m *message.Ext
		// The delayed message is stored in its topic once due (1 s).
		for m == nil {
			got, err := admin.MessagesByKey(ctx, topic, id, 8, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
			for _, g := range got {
				if g.Topic == topic && g.UniqKey() == id {
					m = g
				}
			}
			if m != nil {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("the %s message %s was not stored in %s: %v", kind, id, topic, err)
			case <-time.After(50 * time.Millisecond):
			}
		}
		if string(m.Body) != w.body || m.Tags() != w.tag {
			t.Fatalf("%s message stored as %+v", kind, m)
		}
		switch kind {
		case "normal":
			if m.Properties["color"] != "blue" || m.Properties[message.PropertyKeys] != "key-normal" {
				t.Fatalf("normal message properties %v", m.Properties)
			}
		case "fifo":
			if m.Properties[message.PropertyJavaShardingKey] != "order-1" {
				t.Fatalf("fifo message properties %v", m.Properties)
			}
		}
	}
}

// runNodeScript runs script of the Node.js client directory with args (and
// env added to the environment) in its own process, and decodes the one
// JSON object it prints into out; a failure or another output fails the
// test with the script's stderr.
func runNodeScript(t *testing.T, ctx context.Context, nodeBin, dir string, out any, env []string, script string, args ...string) {
	t.Helper()
	cmd, stderr := nodeCommand(t, ctx, nodeBin, dir, script, args...)
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\nstdout: %s\nstderr: %s", script, err, stdout, stderr.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("%s printed %q: %v (stderr %s)", script, stdout, err, stderr.String())
	}
	t.Logf("node %s: %s", script, stdout)
	if stderr.Len() > 0 {
		t.Logf("%s stderr: %s", script, stderr.String())
	}
}

// nodeCommand is node running script of the Node.js client directory dir
// with args, its home a temporary directory, its stderr collected.
func nodeCommand(t *testing.T, ctx context.Context, nodeBin, dir, script string, args ...string) (*exec.Cmd, *strings.Builder) {
	cmd := exec.CommandContext(ctx, nodeBin, append([]string{script}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	return cmd, stderr
}

// nodeClient is the node binary and the directory of the Node.js client
// (compat/nodejs with its node_modules); the test skips without them,
// unless LEDGERMQ_REQUIRE_NODE=1.
func nodeClient(t *testing.T) (string, string) {
	t.Helper()
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("LEDGERMQ_REQUIRE_NODE") == "1" {
			t.Fatal("node is not installed, and LEDGERMQ_REQUIRE_NODE=1")
		}
		t.Skip("node is not installed: the Node.js client's witness test needs node and `npm ci` in compat/nodejs")
	}
	dir, err := filepath.Abs("nodejs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "rocketmq-client-nodejs")); err != nil {
		if os.Getenv("LEDGERMQ_REQUIRE_NODE") == "1" {
			t.Fatalf("compat/nodejs has no node_modules: run `npm ci` there (.ci/run does): %v", err)
		}
		t.Skip("compat/nodejs has no node_modules: run `npm ci` there")
	}
	return nodeBin, dir
}

// startGRPCNode starts a one-node group with a gRPC port, creates topic (4
// queues) and returns the node, the port's server, an admin client and a
// context that ends after 60 s or with the test.
func startGRPCNode(t *testing.T, topic string) (*brokertest.Cluster, *grpcapi.Server, *client.Admin, context.Context) {
	t.Helper()
	return startGRPCNodeWith(t, topic, nil)
}

// startGRPCNodeWith is startGRPCNode with opt changing the broker's
// configuration.
func startGRPCNodeWith(t *testing.T, topic string, opt func(int, *broker.Config)) (*brokertest.Cluster, *grpcapi.Server, *client.Admin, context.Context) {
	t.Helper()
	tc := brokertest.StartNode(t, opt)
	srv, err := grpcapi.New(grpcapi.Config{Addr: "127.0.0.1:0", BrokerName: "broker-a", NodeID: "n0", Broker: tc.Broker("n0")})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Stop(ctx)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	admin, err := client.NewAdmin(client.WithAdminNameServers(tc.NamesrvAddr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	if _, err := admin.CreateTopic(ctx, client.TopicConfig{Topic: topic, ReadQueues: 4, WriteQueues: 4}, client.Target{}); err != nil {
		t.Fatal(err)
	}
	return tc, srv, admin, ctx
}
