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
	"github.com/ledgermq/ledgermq/internal/testwait"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
)

const nodeSecureACL = `
accounts:
  - accessKey: nodeclient
    secretKey: nodeclient-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - NodeSecureTopic=PUB|SUB
    groupPerms:
      - NodeSecureGroup=SUB
  - accessKey: admin123
    secretKey: admin-secret
    admin: true
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
`

// TestRealNodeClientSecure: the official RocketMQ 5 Node.js client
// (compat/nodejs/secure.js, in its own process) with sslEnabled and
// sessionCredentials sends two messages to, and receives and acknowledges
// them from, a broker node whose gRPC port serves TLS (a test CA's
// certificate) and checks every call
// against the ACL: the client's MQv2-HMAC-SHA1 signature verifies and its
// account's PUB and SUB permissions allow it. With a wrong secret key the
// same client is refused and fails.
//
// The client (ChannelCredentials.createSsl() of @grpc/grpc-js, no way to
// pass a CA through the SDK's options) trusts the test CA through
// grpc-js's GRPC_DEFAULT_SSL_ROOTS_FILE_PATH: it replaces Node's default
// roots with the file. NODE_EXTRA_CA_CERTS alone did not make it trust
// the CA (unable to verify the first certificate).
func TestRealNodeClientSecure(t *testing.T) {
	nodeBin, dir := nodeClient(t)
	tmp := t.TempDir()
	aclFile := filepath.Join(tmp, "plain_acl.yml")
	if err := os.WriteFile(aclFile, []byte(nodeSecureACL), 0o600); err != nil {
		t.Fatal(err)
	}
	files, _, err := tlsconf.WriteTestFiles(tmp, "node")
	if err != nil {
		t.Fatal(err)
	}
	src, err := tlsconf.Load(files)
	if err != nil {
		t.Fatal(err)
	}
	srvTLS, err := src.ServerConfig(false)
	if err != nil {
		t.Fatal(err)
	}
	tc := brokertest.StartNode(t, func(_ int, c *broker.Config) { c.ACLEnable, c.ACLFile = true, aclFile })
	b := tc.Broker("n0")
	srv, err := grpcapi.New(grpcapi.Config{Addr: "127.0.0.1:0", BrokerName: "broker-a", NodeID: "n0", Broker: b,
		TLS: srvTLS, PeerTLS: src.ClientConfig(), Access: b})
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
	defer cancel()
	admin, err := client.NewAdmin(client.WithAdminNameServers(tc.NamesrvAddr()), client.WithAdminCredentials("admin123", "admin-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const topic, group = "NodeSecureTopic", "NodeSecureGroup"
	if _, err := admin.CreateTopic(ctx, client.TopicConfig{Topic: topic, ReadQueues: 2, WriteQueues: 2}, client.Target{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 20*time.Second, "the topic on the node", func() bool { _, ok := b.Topic(topic); return ok })
	g := tc.Raft.Nodes[0].Group()
	testwait.For(t, 20*time.Second, "the group at format version 4", func() bool { return g.FormatVersion() >= 4 })

	checkNodeSecure(t, ctx, nodeBin, dir, srv.Addr().String(), topic, group, "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH="+files.CAFile)
}

// checkNodeSecure runs secure.js against endpoint with env added: with
// account nodeclient's secret key it sends two messages to topic and
// receives them in group; with a wrong one the client is refused
// (UNAUTHORIZED) and fails.
func checkNodeSecure(t *testing.T, ctx context.Context, nodeBin, dir, endpoint, topic, group string, env ...string) {
	t.Helper()
	run := func(secret string) ([]byte, string, error) {
		cmd := exec.CommandContext(ctx, nodeBin, "secure.js", endpoint, topic, group)
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), "HOME="+t.TempDir(), "LEDGERMQ_ACCESS_KEY=nodeclient", "LEDGERMQ_SECRET_KEY="+secret), env...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		return out, stderr.String(), err
	}
	out, stderr, err := run("nodeclient-secret")
	if err != nil {
		t.Fatalf("node secure.js: %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	var got struct {
		Sent     []string `json:"sent"`
		Received []struct {
			ID   string `json:"id"`
			Body string `json:"body"`
		} `json:"received"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("secure.js printed %q: %v (stderr %s)", out, err, stderr)
	}
	t.Logf("node client with credentials: %s", out)
	if len(got.Sent) != 2 || len(got.Received) != 2 {
		t.Fatalf("sent %v, received %+v", got.Sent, got.Received)
	}
	sent := map[string]bool{got.Sent[0]: true, got.Sent[1]: true}
	for _, r := range got.Received {
		if !sent[r.ID] || !strings.HasPrefix(r.Body, "secure ") {
			t.Fatalf("received %+v; sent %v", r, got.Sent)
		}
	}

	out, stderr, err = run("wrong-secret")
	if err == nil {
		t.Fatalf("with a wrong secret key the client succeeded: %s", out)
	}
	if !strings.Contains(stderr, "UNAUTHORIZED") && !strings.Contains(stderr, "40100") && !strings.Contains(stderr, "signature") {
		t.Fatalf("with a wrong secret key the client failed otherwise: %v\nstderr: %s", err, stderr)
	}
	t.Logf("refused with a wrong secret key")
}
