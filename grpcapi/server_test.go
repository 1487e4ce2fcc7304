package grpcapi_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/grpcapi"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/message"
)

const testWait = 30 * time.Second

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds or the test's wait ends.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// env is a broker group with a gRPC port on node, a gRPC client of it and
// an admin client of the group's name server.
type env struct {
	tc     *brokertest.Cluster
	srv    *grpcapi.Server
	mq     v2pb.MessagingServiceClient
	admin  *client.Admin
	target string
}

func startEnv(t *testing.T, tc *brokertest.Cluster, node string, peers map[string]string) *env {
	t.Helper()
	srv, err := grpcapi.New(grpcapi.Config{Addr: "127.0.0.1:0", BrokerName: "broker-a", NodeID: node,
		Peers: peers, Broker: tc.Broker(node)})
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
	return newEnv(t, tc, srv, srv.Addr().String())
}

// newEnv is the env of srv, a node of tc, called at target: a gRPC client
// and an admin client, closed with the test.
func newEnv(t *testing.T, tc *brokertest.Cluster, srv *grpcapi.Server, target string) *env {
	t.Helper()
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	admin, err := client.NewAdmin(client.WithAdminNameServers(tc.NamesrvAddr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	return &env{tc: tc, srv: srv, mq: v2pb.NewMessagingServiceClient(conn), admin: admin, target: target}
}

func (e *env) createTopic(t *testing.T, topic string, queues int32) {
	t.Helper()
	if _, err := e.admin.CreateTopic(testCtx(t), client.TopicConfig{Topic: topic, ReadQueues: queues, WriteQueues: queues}, client.Target{}); err != nil {
		t.Fatal(err)
	}
	for id := range e.tc.Peers {
		if b := e.tc.Broker(id); b != nil {
			waitFor(t, "topic on "+id, func() bool { _, ok := b.Topic(topic); return ok })
		}
	}
}

var idSeq int

func newID() string {
	idSeq++
	return fmt.Sprintf("01AABBCCDDEEFF%010d", idSeq)
}

func msg(topic, id, body string) *v2pb.Message {
	return &v2pb.Message{
		Topic: &v2pb.Resource{Name: topic},
		Body:  []byte(body),
		SystemProperties: &v2pb.SystemProperties{
			MessageId: id, MessageType: v2pb.MessageType_NORMAL,
			BodyEncoding: v2pb.Encoding_IDENTITY, BornTimestamp: timestamppb.Now(),
		},
	}
}

func (e *env) send(t *testing.T, m *v2pb.Message) *v2pb.SendResultEntry {
	t.Helper()
	resp, err := e.mq.SendMessage(testCtx(t), &v2pb.SendMessageRequest{Messages: []*v2pb.Message{m}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus().GetCode() != v2pb.Code_OK || len(resp.GetEntries()) != 1 {
		t.Fatalf("send: %v", resp)
	}
	e1 := resp.GetEntries()[0]
	if e1.GetMessageId() != m.GetSystemProperties().GetMessageId() {
		t.Fatalf("send answered message id %q, sent %q", e1.GetMessageId(), m.GetSystemProperties().GetMessageId())
	}
	return e1
}

// pulled finds the message whose UNIQ_KEY is id in topic's queues through
// the remoting pull path, with its queue id (nil when not there).
func (e *env) pulled(t *testing.T, topic string, queues int32, id string) (*message.Ext, int32) {
	t.Helper()
	for q := int32(0); q < queues; q++ {
		for off := int64(0); ; off++ {
			m, err := e.admin.MessageAtOffset(testCtx(t), topic, "", q, off)
			if err != nil {
				break
			}
			if m.UniqKey() == id {
				return m, q
			}
		}
	}
	return nil, -1
}

func TestQueryRoute(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	e := startEnv(t, tc, "n0", nil)
	e.createTopic(t, "GRoute", 4)

	resp, err := e.mq.QueryRoute(testCtx(t), &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "GRoute"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus().GetCode() != v2pb.Code_OK || len(resp.GetMessageQueues()) != 4 {
		t.Fatalf("route: %v", resp)
	}
	for i, q := range resp.GetMessageQueues() {
		b := q.GetBroker()
		addr := b.GetEndpoints().GetAddresses()
		if q.GetId() != int32(i) || q.GetPermission() != v2pb.Permission_READ_WRITE || b.GetName() != "broker-a" || b.GetId() != 0 ||
			b.GetEndpoints().GetScheme() != v2pb.AddressScheme_IPv4 || len(addr) != 1 ||
			fmt.Sprintf("%s:%d", addr[0].GetHost(), addr[0].GetPort()) != e.target || len(q.GetAcceptMessageTypes()) != 4 {
			t.Fatalf("queue %d: %v", i, q)
		}
	}
	resp, err = e.mq.QueryRoute(testCtx(t), &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "NoSuchTopic"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus().GetCode() != v2pb.Code_TOPIC_NOT_FOUND {
		t.Fatalf("unknown topic: %v", resp.GetStatus())
	}
}

func TestSendNormalReadByPull(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	e := startEnv(t, tc, "n0", nil)
	e.createTopic(t, "GNormal", 2)

	id := newID()
	m := msg("GNormal", id, "hello grpc")
	tag := "TagA"
	m.SystemProperties.Tag = &tag
	m.SystemProperties.Keys = []string{"k1", "k2"}
	m.UserProperties = map[string]string{"color": "blue"}
	e.send(t, m)

	got, _ := e.pulled(t, "GNormal", 2, id)
	if got == nil {
		t.Fatal("the message is not readable by pull")
	}
	if string(got.Body) != "hello grpc" || got.Tags() != "TagA" || got.Properties[message.PropertyKeys] != "k1 k2" ||
		got.Properties["color"] != "blue" || got.UniqKey() != id {
		t.Fatalf("pulled %+v", got)
	}
	byID, err := e.admin.MessageByID(testCtx(t), "GNormal", id)
	if err != nil || string(byID.Body) != "hello grpc" {
		t.Fatalf("by id: %v %v", byID, err)
	}
}

func TestSendRefusals(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	e := startEnv(t, tc, "n0", nil)
	e.createTopic(t, "GRefuse", 1)
	for _, tt := range []struct {
		name string
		m    *v2pb.Message
		code v2pb.Code
	}{
		{"unknown topic", msg("NoSuchTopic", newID(), "x"), v2pb.Code_TOPIC_NOT_FOUND},
		{"no message id", msg("GRefuse", "", "x"), v2pb.Code_ILLEGAL_MESSAGE_ID},
		{"empty body", msg("GRefuse", newID(), ""), v2pb.Code_MESSAGE_BODY_EMPTY},
		{"reserved property", func() *v2pb.Message {
			m := msg("GRefuse", newID(), "x")
			m.UserProperties = map[string]string{message.PropertyUniqKey: "mine"}
			return m
		}(), v2pb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY},
		{"fifo without group", func() *v2pb.Message {
			m := msg("GRefuse", newID(), "x")
			m.SystemProperties.MessageType = v2pb.MessageType_FIFO
			return m
		}(), v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := e.mq.SendMessage(testCtx(t), &v2pb.SendMessageRequest{Messages: []*v2pb.Message{tt.m}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetStatus().GetCode() != tt.code || resp.GetEntries()[0].GetStatus().GetCode() != tt.code {
				t.Fatalf("want %v, got %v", tt.code, resp)
			}
		})
	}
}

func TestSendFIFOKeepsGroupOnOneQueue(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	e := startEnv(t, tc, "n0", nil)
	e.createTopic(t, "GFifo", 4)
	var ids []string
	var offsets []int64
	for i := 0; i < 5; i++ {
		id := newID()
		m := msg("GFifo", id, fmt.Sprintf("step %d", i))
		group := "order-42"
		m.SystemProperties.MessageType = v2pb.MessageType_FIFO
		m.SystemProperties.MessageGroup = &group
		offsets = append(offsets, e.send(t, m).GetOffset())
		ids = append(ids, id)
	}
	queue := int32(-1)
	for i, id := range ids {
		got, q := e.pulled(t, "GFifo", 4, id)
		if got == nil {
			t.Fatalf("message %d not readable", i)
		}
		if queue >= 0 && q != queue {
			t.Fatalf("message %d on queue %d, the group's first on %d", i, q, queue)
		}
		queue = q
		if got.QueueOffset != offsets[i] || got.Properties[message.PropertyJavaShardingKey] != "order-42" ||
			got.Properties[message.PropertyShardingKey] != "order-42" || string(got.Body) != fmt.Sprintf("step %d", i) {
			t.Fatalf("message %d: %+v (answered offset %d)", i, got, offsets[i])
		}
	}
}

func TestSendDelayed(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	e := startEnv(t, tc, "n0", nil)
	e.createTopic(t, "GDelay", 1)
	id := newID()
	m := msg("GDelay", id, "later")
	due := time.Now().Add(1500 * time.Millisecond)
	m.SystemProperties.MessageType = v2pb.MessageType_DELAY
	m.SystemProperties.DeliveryTimestamp = timestamppb.New(due)
	e.send(t, m)
	if got, _ := e.pulled(t, "GDelay", 1, id); got != nil {
		t.Fatalf("a delayed message is readable before its time: %+v", got)
	}
	waitFor(t, "the delayed message", func() bool { got, _ := e.pulled(t, "GDelay", 1, id); return got != nil })
	if time.Now().Before(due) {
		t.Fatalf("delivered before %v", due)
	}
}

func TestTransactionCommitAndRollback(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	e := startEnv(t, tc, "n0", nil)
	e.createTopic(t, "GTxn", 1)

	half := func() (string, *v2pb.SendResultEntry) {
		id := newID()
		m := msg("GTxn", id, "txn "+id)
		m.SystemProperties.MessageType = v2pb.MessageType_TRANSACTION
		r := e.send(t, m)
		if r.GetTransactionId() == "" {
			t.Fatalf("no transaction id: %v", r)
		}
		return id, r
	}
	end := func(id, txID string, res v2pb.TransactionResolution) *v2pb.Status {
		resp, err := e.mq.EndTransaction(testCtx(t), &v2pb.EndTransactionRequest{Topic: &v2pb.Resource{Name: "GTxn"},
			MessageId: id, TransactionId: txID, Resolution: res, Source: v2pb.TransactionSource_SOURCE_CLIENT})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetStatus()
	}

	commitID, r := half()
	if got, _ := e.pulled(t, "GTxn", 1, commitID); got != nil {
		t.Fatal("a half message is readable before its commit")
	}
	if st := end(commitID, r.GetTransactionId(), v2pb.TransactionResolution_COMMIT); st.GetCode() != v2pb.Code_OK {
		t.Fatalf("commit: %v", st)
	}
	got, _ := e.pulled(t, "GTxn", 1, commitID)
	if got == nil || string(got.Body) != "txn "+commitID {
		t.Fatalf("committed message: %+v", got)
	}

	rbID, r2 := half()
	if st := end(rbID, r2.GetTransactionId(), v2pb.TransactionResolution_ROLLBACK); st.GetCode() != v2pb.Code_OK {
		t.Fatalf("rollback: %v", st)
	}
	if got, _ := e.pulled(t, "GTxn", 1, rbID); got != nil {
		t.Fatal("a rolled back message is readable")
	}
	if st := end(rbID, "not-a-transaction", v2pb.TransactionResolution_COMMIT); st.GetCode() != v2pb.Code_INVALID_TRANSACTION_ID {
		t.Fatalf("bad transaction id: %v", st)
	}
}

func TestTelemetrySettingsAndStop(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	e := startEnv(t, tc, "n0", nil)
	stream, err := e.mq.Telemetry(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	producer := v2pb.ClientType_PRODUCER
	settings := &v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: &producer,
		PubSub:     &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{Topics: []*v2pb.Resource{{Name: "T"}}}},
	}}}
	for i := 0; i < 2; i++ { // the stream stays open: a second sync is answered too
		if err := stream.Send(settings); err != nil {
			t.Fatal(err)
		}
		got, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		s := got.GetSettings()
		if got.GetStatus().GetCode() != v2pb.Code_OK || s.GetPublishing().GetMaxBodySize() != 4<<20 ||
			s.GetBackoffPolicy().GetExponentialBackoff() == nil || s.GetBackoffPolicy().GetMaxAttempts() <= 0 ||
			s.GetRequestTimeout().AsDuration() != 3*time.Second || len(s.GetPublishing().GetTopics()) != 1 {
			t.Fatalf("settings answer: %v", got)
		}
	}
	// Stop ends the open stream instead of waiting for the client.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err == nil {
		t.Fatalf("the stream is still open after Stop: %v", err)
	}
}

// A recall without a topic and a consumer request without a group are
// refused.
func TestNotServedAnswers(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	e := startEnv(t, tc, "n0", nil)
	ack, err := e.mq.AckMessage(testCtx(t), &v2pb.AckMessageRequest{})
	if err != nil || ack.GetStatus().GetCode() != v2pb.Code_ILLEGAL_CONSUMER_GROUP {
		t.Fatalf("ack: %v %v", ack, err)
	}
	rc, err := e.mq.RecallMessage(testCtx(t), &v2pb.RecallMessageRequest{})
	if err != nil || rc.GetStatus().GetCode() != v2pb.Code_ILLEGAL_TOPIC {
		t.Fatalf("recall: %v %v", rc, err)
	}
	hb, err := e.mq.Heartbeat(testCtx(t), &v2pb.HeartbeatRequest{ClientType: v2pb.ClientType_PRODUCER})
	if err != nil || hb.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("heartbeat: %v %v", hb, err)
	}
}

// A follower's gRPC port routes clients to the leader's when it knows the
// leader's gRPC address, and stores what it is sent itself by forwarding.
func TestFollowerForwardsAndRoutesToLeader(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	leader, err := tc.Raft.Leader(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	follower := "n0"
	if leader.ID == follower {
		follower = "n1"
	}
	e := startEnv(t, tc, follower, map[string]string{leader.ID: "127.0.0.1:18081"})
	e.createTopic(t, "GFollow", 2)

	resp, err := e.mq.QueryRoute(testCtx(t), &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "GFollow"}})
	if err != nil {
		t.Fatal(err)
	}
	if a := resp.GetMessageQueues()[0].GetBroker().GetEndpoints().GetAddresses()[0]; a.GetPort() != 18081 {
		t.Fatalf("route names %v, not the leader's gRPC address", a)
	}
	id := newID()
	e.send(t, msg("GFollow", id, "via a follower"))
	if got, _ := e.pulled(t, "GFollow", 2, id); got == nil || string(got.Body) != "via a follower" {
		t.Fatalf("forwarded message: %+v", got)
	}
}
