package grpcapi_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the clients' algorithm
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/grpcapi"
	"github.com/ledgermq/ledgermq/grpcapi/grpcapitest"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
)

const grpcACLFile = `
accounts:
  - accessKey: producer1
    secretKey: producer-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - AclPub=PUB
      - AclSub=SUB
    groupPerms:
      - cg_acl=SUB
  - accessKey: admin123
    secretKey: admin-secret
    admin: true
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
`

// signed is ctx with the RocketMQ 5 signature of accessKey (as the
// clients write it: upper-case hex HMAC-SHA1 of x-mq-date-time).
func signed(ctx context.Context, accessKey, secretKey string) context.Context {
	dt := time.Now().UTC().Format("20060102T150405Z")
	mac := hmac.New(sha1.New, []byte(secretKey))
	mac.Write([]byte(dt))
	sig := strings.ToUpper(hex.EncodeToString(mac.Sum(nil)))
	return metadata.AppendToOutgoingContext(ctx, "x-mq-date-time", dt,
		"authorization", "MQv2-HMAC-SHA1 Credential="+accessKey+", SignedHeaders=x-mq-date-time, Signature="+sig)
}

// secureEnv is a one-node group with the ACL on and a gRPC port serving
// TLS with a test CA's certificate and checking calls by the ACL.
type secureEnv struct {
	mq    v2pb.MessagingServiceClient
	addr  string
	files tlsconf.Files
}

func startSecureEnv(t *testing.T) *secureEnv {
	t.Helper()
	dir := t.TempDir()
	aclFile := filepath.Join(dir, "plain_acl.yml")
	if err := os.WriteFile(aclFile, []byte(grpcACLFile), 0o600); err != nil {
		t.Fatal(err)
	}
	files, _, err := tlsconf.WriteTestFiles(dir, "node")
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
	srv, err := grpcapi.New(grpcapi.Config{Addr: "127.0.0.1:0", BrokerName: "broker-a", NodeID: "n0",
		Broker: b, TLS: srvTLS, PeerTLS: src.ClientConfig(), Access: b})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	admin, err := client.NewAdmin(client.WithAdminNameServers(tc.NamesrvAddr()), client.WithAdminCredentials("admin123", "admin-secret"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	for _, topic := range []string{"AclPub", "AclSub"} {
		if _, err := admin.CreateTopic(testCtx(t), client.TopicConfig{Topic: topic, ReadQueues: 2, WriteQueues: 2}, client.Target{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "topic "+topic, func() bool { _, ok := b.Topic(topic); return ok })
	}
	waitFor(t, "format version 4", func() bool {
		return tc.Raft.Nodes[0].Group() != nil && tc.Raft.Nodes[0].Group().FormatVersion() >= 4
	})
	pem, err := os.ReadFile(files.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	conn, err := grpc.NewClient(srv.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &secureEnv{mq: v2pb.NewMessagingServiceClient(conn), addr: srv.Addr().String(), files: files}
}

func (e *secureEnv) receiveCode(t *testing.T, ctx context.Context, group, topic string) (v2pb.Code, []*v2pb.Message) {
	t.Helper()
	rs, err := e.mq.ReceiveMessage(ctx, grpcapitest.ReceiveRequest(group, topic, 10, 30*time.Second, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	first, err := rs.Recv()
	if err != nil || first.GetStatus() == nil {
		t.Fatalf("first answer %v, %v: want a status", first, err)
	}
	var msgs []*v2pb.Message
	for {
		r, err := rs.Recv()
		if err != nil {
			break
		}
		if m := r.GetMessage(); m != nil {
			msgs = append(msgs, m)
		}
	}
	return first.GetStatus().GetCode(), msgs
}

// receiveFirst receives in group from topic until a message comes (a
// MESSAGE_NOT_FOUND answer is asked again; any other status fails what)
// and returns the first.
func (e *secureEnv) receiveFirst(t *testing.T, ctx context.Context, what, group, topic string) *v2pb.Message {
	t.Helper()
	var got []*v2pb.Message
	waitFor(t, what, func() bool {
		code, ms := e.receiveCode(t, ctx, group, topic)
		if code != v2pb.Code_OK && code != v2pb.Code_MESSAGE_NOT_FOUND {
			t.Fatalf("%s: %v", what, code)
		}
		got = append(got, ms...)
		return len(got) > 0
	})
	return got[0]
}

// routeCode is the status of a route of topic asked with ctx.
func (e *secureEnv) routeCode(t *testing.T, ctx context.Context, topic string) v2pb.Code {
	t.Helper()
	r, err := e.mq.QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: topic}})
	if err != nil {
		t.Fatal(err)
	}
	return r.GetStatus().GetCode()
}

// sendCode is the status of a send of one message to topic with ctx.
func (e *secureEnv) sendCode(t *testing.T, ctx context.Context, topic, body string) v2pb.Code {
	t.Helper()
	r, err := e.mq.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{msg(topic, newID(), body)}})
	if err != nil {
		t.Fatal(err)
	}
	return r.GetStatus().GetCode()
}

// ackCode is the status of an ack of m in group and topic with ctx.
func (e *secureEnv) ackCode(t *testing.T, ctx context.Context, group, topic string, m *v2pb.Message) v2pb.Code {
	t.Helper()
	sp := m.GetSystemProperties()
	r, err := e.mq.AckMessage(ctx, &v2pb.AckMessageRequest{Group: &v2pb.Resource{Name: group}, Topic: &v2pb.Resource{Name: topic},
		Entries: []*v2pb.AckMessageEntry{{MessageId: sp.GetMessageId(), ReceiptHandle: sp.GetReceiptHandle()}}})
	if err != nil {
		t.Fatal(err)
	}
	return r.GetStatus().GetCode()
}

// checkAccess checks the decisions of a gRPC port checking calls
// against grpcACLFile (a node's, or a proxy's): unsigned, wrongly signed,
// unknown-account and malformed calls are UNAUTHORIZED; signed calls pass
// where the account has the permission (PUB to send, SUB on topic and
// group to receive and ack) and are FORBIDDEN where it has not; a message
// sent by one account is received and acknowledged by another.
func (e *secureEnv) checkAccess(t *testing.T) {
	t.Helper()
	ctx := testCtx(t)
	route := func(ctx context.Context, topic string) v2pb.Code { return e.routeCode(t, ctx, topic) }
	send := func(ctx context.Context, topic string) v2pb.Code { return e.sendCode(t, ctx, topic, "secure body") }
	wrongSig := metadata.AppendToOutgoingContext(ctx, "x-mq-date-time", "20240102T030405Z",
		"authorization", "MQv2-HMAC-SHA1 Credential=producer1, SignedHeaders=x-mq-date-time, Signature="+strings.Repeat("AB", 20))
	for name, c := range map[string]context.Context{
		"unsigned":     ctx,
		"wrong secret": signed(ctx, "producer1", "not-the-secret"),
		"unknown":      signed(ctx, "nobody99", "producer-secret"),
		"wrong sig":    wrongSig,
		"malformed":    metadata.AppendToOutgoingContext(ctx, "authorization", "Basic abc"),
		"no date":      metadata.AppendToOutgoingContext(ctx, "authorization", "MQv2-HMAC-SHA1 Credential=producer1, SignedHeaders=x-mq-date-time, Signature="+strings.Repeat("ab", 20)),
	} {
		if code := route(c, "AclPub"); code != v2pb.Code_UNAUTHORIZED {
			t.Errorf("%s route: %v, want UNAUTHORIZED", name, code)
		}
		if code := send(c, "AclPub"); code != v2pb.Code_UNAUTHORIZED {
			t.Errorf("%s send: %v, want UNAUTHORIZED", name, code)
		}
		if code, _ := e.receiveCode(t, c, "cg_acl", "AclSub"); code != v2pb.Code_UNAUTHORIZED {
			t.Errorf("%s receive: %v, want UNAUTHORIZED", name, code)
		}
	}
	prod := signed(ctx, "producer1", "producer-secret")
	adm := signed(ctx, "admin123", "admin-secret")
	if code := route(prod, "AclPub"); code != v2pb.Code_OK {
		t.Fatalf("signed route: %v", code)
	}
	if code := send(prod, "AclPub"); code != v2pb.Code_OK {
		t.Fatalf("PUB topic: %v", code)
	}
	if code := send(prod, "AclSub"); code != v2pb.Code_FORBIDDEN {
		t.Fatalf("send to a SUB-only topic: %v, want FORBIDDEN", code)
	}
	if code := send(adm, "AclSub"); code != v2pb.Code_OK {
		t.Fatalf("admin send: %v", code)
	}
	if code, _ := e.receiveCode(t, prod, "cg_acl", "AclPub"); code != v2pb.Code_FORBIDDEN {
		t.Fatalf("receive from a PUB-only topic: %v, want FORBIDDEN", code)
	}
	if code, _ := e.receiveCode(t, prod, "cg_other", "AclSub"); code != v2pb.Code_FORBIDDEN {
		t.Fatalf("receive in a group without SUB: %v, want FORBIDDEN", code)
	}
	var got []*v2pb.Message
	waitFor(t, "the admin's message received by producer1", func() bool {
		code, ms := e.receiveCode(t, prod, "cg_acl", "AclSub")
		switch code {
		case v2pb.Code_OK, v2pb.Code_MESSAGE_NOT_FOUND:
		case v2pb.Code_INTERNAL_SERVER_ERROR: // a relay to a leader that moved: clients retry
		default:
			t.Fatalf("receive: %v", code)
		}
		got = append(got, ms...)
		return len(got) > 0
	})
	if string(got[0].GetBody()) != "secure body" {
		t.Fatalf("received %v", got[0])
	}
	if code := e.ackCode(t, prod, "cg_other", "AclSub", got[0]); code != v2pb.Code_FORBIDDEN {
		t.Fatalf("ack in a group without SUB: %v, want FORBIDDEN", code)
	}
	if code := e.ackCode(t, prod, "cg_acl", "AclSub", got[0]); code != v2pb.Code_OK {
		t.Fatalf("ack: %v", code)
	}
}

// TestAccessOverTLS: the gRPC port serves TLS with the node's certificate
// (a plain-text client gets nothing), and every call is checked against
// the broker's ACL (checkAccess); telemetry settings naming a topic the
// account may not publish to end the stream.
func TestAccessOverTLS(t *testing.T) {
	e := startSecureEnv(t)
	e.checkAccess(t)
	prod := signed(testCtx(t), "producer1", "producer-secret")

	// Telemetry settings naming a topic the account may not publish to
	// end the stream.
	ts, err := e.mq.Telemetry(prod)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: v2pb.ClientType_PRODUCER.Enum(),
		PubSub:     &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{Topics: []*v2pb.Resource{{Name: "AclSub"}}}},
	}}}); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := ts.Recv()
		if err == nil {
			continue
		}
		if status.Code(err) != codes.PermissionDenied {
			t.Fatalf("telemetry with a topic not published to: %v, want PermissionDenied", err)
		}
		break
	}

	// A plain-text client of the TLS port gets no answer.
	plain, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	pctx, cancel := context.WithTimeout(prod, 2*time.Second)
	defer cancel()
	if _, err := v2pb.NewMessagingServiceClient(plain).QueryRoute(pctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "AclPub"}}); err == nil {
		t.Fatal("a plain-text call to the TLS port was answered")
	}
}

// TestFollowerRelaysSecurely: in a three-node group with TLS and the ACL
// on every gRPC port, a signed client of a follower sends (forwarded to
// the leader with the node signature), receives and acknowledges (relayed
// to the leader's port over TLS with the client's signature, checked again
// there); an account without SUB is refused at the follower.
func TestFollowerRelaysSecurely(t *testing.T) {
	dir := t.TempDir()
	aclFile := filepath.Join(dir, "plain_acl.yml")
	if err := os.WriteFile(aclFile, []byte(grpcACLFile), 0o600); err != nil {
		t.Fatal(err)
	}
	files, _, err := tlsconf.WriteTestFiles(dir, "node")
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
	tc := brokertest.StartCluster(t, 3, func(_ int, c *broker.Config) {
		c.ACLEnable, c.ACLFile = true, aclFile
		c.ClusterSecret = "0123456789abcdef0123456789abcdef"
	})
	var leaderID string
	waitFor(t, "a leader serving POP", func() bool {
		n, err := tc.Raft.Leader(testCtx(t))
		if err != nil || n.Group() == nil || n.Group().FormatVersion() < 4 || !n.Group().IsLeader() {
			return false
		}
		leaderID = n.ID
		return true
	})
	lis := map[string]net.Listener{}
	peers := map[string]string{}
	for id := range tc.Peers {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lis[id], peers[id] = l, l.Addr().String()
	}
	followerAddr := ""
	for id := range tc.Peers {
		b := tc.Broker(id)
		srv, err := grpcapi.New(grpcapi.Config{Listener: lis[id], BrokerName: "broker-a", NodeID: id, Peers: peers, Broker: b,
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
		if id != leaderID && followerAddr == "" {
			followerAddr = peers[id]
		}
	}
	admin, err := client.NewAdmin(client.WithAdminNameServers(tc.NamesrvAddr()), client.WithAdminCredentials("admin123", "admin-secret"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	if _, err := admin.CreateTopic(testCtx(t), client.TopicConfig{Topic: "AclRelay", ReadQueues: 2, WriteQueues: 2}, client.Target{}); err != nil {
		t.Fatal(err)
	}
	for id := range tc.Peers {
		b := tc.Broker(id)
		waitFor(t, "the topic on "+id, func() bool { _, ok := b.Topic("AclRelay"); return ok })
	}
	conn, err := grpc.NewClient(followerAddr, grpc.WithTransportCredentials(credentials.NewTLS(tlsconf.ForAddr(src.ClientConfig(), followerAddr))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	e := &secureEnv{mq: v2pb.NewMessagingServiceClient(conn), addr: followerAddr, files: files}
	ctx := testCtx(t)
	adm := signed(ctx, "admin123", "admin-secret")
	id := newID()
	r, err := e.mq.SendMessage(adm, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{msg("AclRelay", id, "relayed securely")}})
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("send through a follower: %v %v", r.GetStatus(), err)
	}
	if code, _ := e.receiveCode(t, signed(ctx, "producer1", "producer-secret"), "cg_acl", "AclRelay"); code != v2pb.Code_FORBIDDEN {
		t.Fatalf("receive without SUB on the topic: %v, want FORBIDDEN", code)
	}
	var got []*v2pb.Message
	waitFor(t, "the message received through the follower", func() bool {
		code, ms := e.receiveCode(t, signed(ctx, "admin123", "admin-secret"), "cg_relay", "AclRelay")
		if code != v2pb.Code_OK && code != v2pb.Code_MESSAGE_NOT_FOUND {
			t.Fatalf("receive through a follower: %v", code)
		}
		got = append(got, ms...)
		return len(got) > 0
	})
	if got[0].GetSystemProperties().GetMessageId() != id {
		t.Fatalf("received %v", got[0])
	}
	sp := got[0].GetSystemProperties()
	ack, err := e.mq.AckMessage(signed(ctx, "admin123", "admin-secret"), &v2pb.AckMessageRequest{Group: &v2pb.Resource{Name: "cg_relay"},
		Topic: &v2pb.Resource{Name: "AclRelay"}, Entries: []*v2pb.AckMessageEntry{{MessageId: sp.GetMessageId(), ReceiptHandle: sp.GetReceiptHandle()}}})
	if err != nil || ack.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("ack through a follower: %v %v", ack.GetStatus(), err)
	}
}
