package grpcapi_test

import (
	"io"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/grpcapi/grpcapitest"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
)

// popEnv is a one-node group with a gRPC port, a topic and the group at
// the format version POP needs.
func popEnv(t *testing.T, topic string, queues int32) *env {
	t.Helper()
	tc := brokertest.StartNode(t, nil)
	e := startEnv(t, tc, "n0", nil)
	e.createTopic(t, topic, queues)
	waitFor(t, "format version 4", func() bool {
		return tc.Raft.Nodes[0].Group() != nil && tc.Raft.Nodes[0].Group().FormatVersion() >= 4
	})
	return e
}

// receive sends a ReceiveMessage and returns the Status and messages,
// checking the answer's order: Status, messages, delivery timestamp.
func (e *env) receive(t *testing.T, group, topic string, batch int32, invisible, wait time.Duration) (v2pb.Code, []*v2pb.Message) {
	t.Helper()
	rs, err := e.mq.ReceiveMessage(testCtx(t), grpcapitest.ReceiveRequest(group, topic, batch, invisible, wait))
	if err != nil {
		t.Fatal(err)
	}
	first, err := rs.Recv()
	if err != nil || first.GetStatus() == nil {
		t.Fatalf("first answer %v, %v: want a status", first, err)
	}
	var msgs []*v2pb.Message
	stamped := false
	for {
		r, err := rs.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case r.GetMessage() != nil && !stamped:
			msgs = append(msgs, r.GetMessage())
		case r.GetDeliveryTimestamp() != nil:
			stamped = true
		default:
			t.Fatalf("unexpected answer %v", r)
		}
	}
	if len(msgs) > 0 && !stamped {
		t.Fatal("messages without a delivery timestamp")
	}
	return first.GetStatus().GetCode(), msgs
}

func (e *env) ack(t *testing.T, group, topic string, ms ...*v2pb.Message) *v2pb.AckMessageResponse {
	t.Helper()
	req := &v2pb.AckMessageRequest{Group: &v2pb.Resource{Name: group}, Topic: &v2pb.Resource{Name: topic}}
	for _, m := range ms {
		req.Entries = append(req.Entries, &v2pb.AckMessageEntry{MessageId: m.GetSystemProperties().GetMessageId(),
			ReceiptHandle: m.GetSystemProperties().GetReceiptHandle()})
	}
	resp, err := e.mq.AckMessage(testCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestReceiveAck: sent messages are received once each (attempt 1, with
// their id, body, tag, digest and a receipt handle), an acknowledged
// message is not delivered again, an empty long poll is
// MESSAGE_NOT_FOUND, and a second ack of a handle is refused.
func TestReceiveAck(t *testing.T) {
	e := popEnv(t, "PopT", 4)
	if code, _ := e.receive(t, "cg_pop", "PopT", 10, 10*time.Millisecond, 0); code != v2pb.Code_ILLEGAL_INVISIBLE_TIME {
		t.Fatalf("a 10 ms invisible duration: %v", code)
	}
	ids := map[string]bool{}
	for i := 0; i < 3; i++ {
		id := newID()
		m := msg("PopT", id, "body")
		tag := "TagA"
		m.SystemProperties.Tag = &tag
		e.send(t, m)
		ids[id] = true
	}
	var got []*v2pb.Message
	for len(got) < 3 {
		code, ms := e.receive(t, "cg_pop", "PopT", 10, 30*time.Second, 2*time.Second)
		if code != v2pb.Code_OK && code != v2pb.Code_MESSAGE_NOT_FOUND {
			t.Fatalf("receive: %v", code)
		}
		got = append(got, ms...)
	}
	for _, m := range got {
		sp := m.GetSystemProperties()
		if !ids[sp.GetMessageId()] || string(m.GetBody()) != "body" || sp.GetTag() != "TagA" || sp.GetDeliveryAttempt() != 1 ||
			sp.GetReceiptHandle() == "" || sp.GetBodyDigest().GetType() != v2pb.DigestType_CRC32 {
			t.Fatalf("received %v", m)
		}
		delete(ids, sp.GetMessageId())
	}
	if r := e.ack(t, "cg_pop", "PopT", got...); r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("ack: %v", r)
	}
	start := time.Now()
	if code, ms := e.receive(t, "cg_pop", "PopT", 10, 30*time.Second, 500*time.Millisecond); code != v2pb.Code_MESSAGE_NOT_FOUND || len(ms) != 0 {
		t.Fatalf("after the acks: %v, %d messages", code, len(ms))
	}
	if waited := time.Since(start); waited < 400*time.Millisecond {
		t.Fatalf("the empty long poll answered after %v", waited)
	}
	if r := e.ack(t, "cg_pop", "PopT", got[0]); r.GetStatus().GetCode() != v2pb.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("second ack: %v", r)
	}
}

// TestRedeliveryAndChangeInvisible: a message not acknowledged comes back
// after its invisible time with attempt 2 (a long poll woken by the
// expiry), its first handle refused from then on; a new invisible time
// answers a new handle, the old one stale.
func TestRedeliveryAndChangeInvisible(t *testing.T) {
	e := popEnv(t, "PopR", 2)
	id := newID()
	e.send(t, msg("PopR", id, "again"))
	_, first := e.receive(t, "cg_r", "PopR", 1, 500*time.Millisecond, 5*time.Second)
	if len(first) != 1 || first[0].GetSystemProperties().GetMessageId() != id {
		t.Fatalf("first receive: %v", first)
	}
	start := time.Now()
	_, second := e.receive(t, "cg_r", "PopR", 1, 30*time.Second, 10*time.Second)
	if len(second) != 1 || second[0].GetSystemProperties().GetMessageId() != id || second[0].GetSystemProperties().GetDeliveryAttempt() != 2 {
		t.Fatalf("redelivery: %v", second)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("redelivered after %v", waited)
	}
	if r := e.ack(t, "cg_r", "PopR", first[0]); r.GetStatus().GetCode() != v2pb.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("ack with the first delivery's handle: %v", r)
	}
	ci, err := e.mq.ChangeInvisibleDuration(testCtx(t), &v2pb.ChangeInvisibleDurationRequest{
		Group: &v2pb.Resource{Name: "cg_r"}, Topic: &v2pb.Resource{Name: "PopR"},
		ReceiptHandle:     second[0].GetSystemProperties().GetReceiptHandle(),
		InvisibleDuration: durationpb.New(300 * time.Millisecond), MessageId: id,
	})
	if err != nil || ci.GetStatus().GetCode() != v2pb.Code_OK || ci.GetReceiptHandle() == "" ||
		ci.GetReceiptHandle() == second[0].GetSystemProperties().GetReceiptHandle() {
		t.Fatalf("change invisible duration: %v %v", ci, err)
	}
	if r := e.ack(t, "cg_r", "PopR", second[0]); r.GetStatus().GetCode() != v2pb.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("ack with the handle before the change: %v", r)
	}
	_, third := e.receive(t, "cg_r", "PopR", 1, 30*time.Second, 10*time.Second)
	if len(third) != 1 || third[0].GetSystemProperties().GetDeliveryAttempt() != 3 {
		t.Fatalf("after the shorter invisible time: %v", third)
	}
	if r := e.ack(t, "cg_r", "PopR", third[0]); r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("ack: %v", r)
	}
}

// TestForwardToDeadLetterQueue: a received message the client gives up
// on goes to %DLQ%<group> at once, where another group receives it; its
// handle is stale from then on.
func TestForwardToDeadLetterQueue(t *testing.T) {
	e := popEnv(t, "PopD", 1)
	id := newID()
	e.send(t, msg("PopD", id, "given up"))
	_, got := e.receive(t, "cg_d", "PopD", 1, 30*time.Second, 5*time.Second)
	if len(got) != 1 {
		t.Fatalf("received %v", got)
	}
	resp, err := e.mq.ForwardMessageToDeadLetterQueue(testCtx(t), &v2pb.ForwardMessageToDeadLetterQueueRequest{
		Group: &v2pb.Resource{Name: "cg_d"}, Topic: &v2pb.Resource{Name: "PopD"},
		ReceiptHandle: got[0].GetSystemProperties().GetReceiptHandle(), MessageId: id, DeliveryAttempt: 1, MaxDeliveryAttempts: 16,
	})
	if err != nil || resp.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("forward to the DLQ: %v %v", resp, err)
	}
	if r := e.ack(t, "cg_d", "PopD", got[0]); r.GetStatus().GetCode() != v2pb.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("ack after the DLQ: %v", r)
	}
	_, dlq := e.receive(t, "cg_dlq_reader", "%DLQ%cg_d", 1, 30*time.Second, 5*time.Second)
	if len(dlq) != 1 || dlq[0].GetSystemProperties().GetMessageId() != id || string(dlq[0].GetBody()) != "given up" {
		t.Fatalf("dead-letter queue: %v", dlq)
	}
}

// TestQueryAssignmentAndConsumerSettings: a push consumer is assigned the
// broker group (queue -1) at the leader's endpoint; a consumer's settings
// carry the subscription with the group's max attempts.
func TestQueryAssignmentAndConsumerSettings(t *testing.T) {
	e := popEnv(t, "PopA", 4)
	qa, err := e.mq.QueryAssignment(testCtx(t), &v2pb.QueryAssignmentRequest{Topic: &v2pb.Resource{Name: "PopA"}, Group: &v2pb.Resource{Name: "cg_a"}})
	if err != nil || qa.GetStatus().GetCode() != v2pb.Code_OK || len(qa.GetAssignments()) != 1 {
		t.Fatalf("assignment: %v %v", qa, err)
	}
	mq := qa.GetAssignments()[0].GetMessageQueue()
	if mq.GetId() != -1 || mq.GetBroker().GetName() != "broker-a" || mq.GetPermission() != v2pb.Permission_READ_WRITE {
		t.Fatalf("assigned %v", mq)
	}
	stream, err := e.mq.Telemetry(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	simple := v2pb.ClientType_SIMPLE_CONSUMER
	if err := stream.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: &simple,
		PubSub:     &v2pb.Settings_Subscription{Subscription: &v2pb.Subscription{Group: &v2pb.Resource{Name: "cg_a"}}},
	}}}); err != nil {
		t.Fatal(err)
	}
	got, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	s := got.GetSettings()
	if s.GetSubscription().GetGroup().GetName() != "cg_a" || s.GetBackoffPolicy().GetMaxAttempts() != 16 ||
		s.GetBackoffPolicy().GetExponentialBackoff() == nil {
		t.Fatalf("consumer settings: %v", s)
	}
	_ = stream.CloseSend()
	hb, err := e.mq.Heartbeat(testCtx(t), &v2pb.HeartbeatRequest{ClientType: v2pb.ClientType_SIMPLE_CONSUMER, Group: &v2pb.Resource{Name: "cg_a"}})
	if err != nil || hb.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("consumer heartbeat: %v %v", hb, err)
	}
}

// TestFollowerRelaysConsumersToLeader: a consumer that reaches a follower's
// gRPC port (a route older than a leadership move) is served by the
// leader: the follower relays receive and ack there.
func TestFollowerRelaysConsumersToLeader(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	var leaderID string
	waitFor(t, "a leader serving POP", func() bool {
		n, err := tc.Raft.Leader(testCtx(t))
		if err != nil || n.Group() == nil || n.Group().FormatVersion() < 4 || !n.Group().IsLeader() {
			return false
		}
		leaderID = n.ID
		return true
	})
	ids := make([]string, 0, len(tc.Peers))
	for id := range tc.Peers {
		ids = append(ids, id)
	}
	lis, peers := grpcapitest.Listen(t, ids...)
	var follower *env
	for id, srv := range grpcapitest.Serve(t, tc, lis, peers) {
		if id != leaderID && follower == nil {
			follower = newEnv(t, tc, srv, peers[id])
		}
	}
	follower.createTopic(t, "PopRelay", 2)
	id := newID()
	follower.send(t, msg("PopRelay", id, "relayed"))
	var got []*v2pb.Message
	for len(got) == 0 {
		code, ms := follower.receive(t, "cg_relay", "PopRelay", 4, 30*time.Second, 3*time.Second)
		if code != v2pb.Code_OK && code != v2pb.Code_MESSAGE_NOT_FOUND {
			t.Fatalf("receive through a follower: %v", code)
		}
		got = ms
	}
	if len(got) != 1 || got[0].GetSystemProperties().GetMessageId() != id {
		t.Fatalf("received %v", got)
	}
	if r := follower.ack(t, "cg_relay", "PopRelay", got[0]); r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("ack through a follower: %v", r)
	}
	if code, ms := follower.receive(t, "cg_relay", "PopRelay", 4, 30*time.Second, 300*time.Millisecond); code != v2pb.Code_MESSAGE_NOT_FOUND || len(ms) != 0 {
		t.Fatalf("after the ack: %v %v", code, ms)
	}
}
