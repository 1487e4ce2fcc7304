package broker_test

import (
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/grpcapi/grpcapitest"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// remotePopped is a message a remoting POP_MESSAGE handed out and the
// ExtraInfo a Java client builds for it from the answer's header.
type remotePopped struct {
	msg   *message.Ext
	extra protocol.ExtraInfo
}

// remotePop sends one POP_MESSAGE over TCP, as a Java POP consumer does
// (a JSON header, every field a string), and returns the answer's code
// and messages.
func remotePop(t *testing.T, c *testClient, addr, group, topic string, invisible, poll time.Duration) (int32, []remotePopped) {
	t.Helper()
	h := protocol.PopMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: -1, MaxMsgNums: 32,
		InvisibleTime: invisible.Milliseconds(), PollTime: poll.Milliseconds(), BornTime: time.Now().UnixMilli()}
	resp, err := c.Invoke(testCtx(t), addr, h.Request())
	if err != nil {
		t.Fatalf("POP_MESSAGE: %v", err)
	}
	var rh protocol.PopMessageResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		t.Fatalf("POP_MESSAGE answer %d %q: %v", resp.Code, resp.Remark, err)
	}
	if resp.Code != remoting.Success {
		return resp.Code, nil
	}
	msgs, err := message.DecodeRecords(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	starts := map[string]int64{}
	for _, e := range strings.Split(rh.StartOffsetInfo, ";") {
		f := strings.Fields(e)
		if len(f) != 3 {
			t.Fatalf("startOffsetInfo %q", rh.StartOffsetInfo)
		}
		starts[f[1]], _ = strconv.ParseInt(f[2], 10, 64)
	}
	out := make([]remotePopped, len(msgs))
	for i, m := range msgs {
		out[i] = remotePopped{msg: m, extra: protocol.ExtraInfo{StartOffset: starts[strconv.Itoa(int(m.QueueID))], PopTime: rh.PopTime,
			InvisibleTime: rh.InvisibleTime, ReviveQid: rh.ReviveQid, Retry: protocol.PopRetryNormal, BrokerName: "broker-a",
			QueueID: m.QueueID, QueueOffset: m.QueueOffset}}
	}
	return resp.Code, out
}

// ackHeader is the ACK_MESSAGE header of p.
func ackHeader(group string, p remotePopped) protocol.AckMessageRequestHeader {
	return protocol.AckMessageRequestHeader{ConsumerGroup: group, Topic: p.msg.Topic, QueueID: p.msg.QueueID,
		ExtraInfo: p.extra.String(), Offset: p.msg.QueueOffset}
}

func remoteAck(t *testing.T, c *testClient, addr, group string, p remotePopped) int32 {
	t.Helper()
	h := ackHeader(group, p)
	resp, err := c.Invoke(testCtx(t), addr, h.Request())
	if err != nil {
		t.Fatalf("ACK_MESSAGE: %v", err)
	}
	return resp.Code
}

// remoteChange changes p's invisible time and returns p with the ExtraInfo
// the client builds from the answer.
func remoteChange(t *testing.T, c *testClient, addr, group string, p remotePopped, d time.Duration) remotePopped {
	t.Helper()
	h := protocol.ChangeInvisibleTimeRequestHeader{AckMessageRequestHeader: ackHeader(group, p), InvisibleTime: d.Milliseconds()}
	resp, err := c.Invoke(testCtx(t), addr, h.Request())
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("CHANGE_MESSAGE_INVISIBLETIME: %v %+v", err, resp)
	}
	var rh protocol.ChangeInvisibleTimeResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		t.Fatal(err)
	}
	p.extra.PopTime, p.extra.InvisibleTime, p.extra.ReviveQid = rh.PopTime, rh.InvisibleTime, rh.ReviveQid
	return p
}

// TestRemotingPopSharesGRPCState: over real TCP against the leader of a
// 3-node group, POP_MESSAGE hands out messages, ACK_MESSAGE acknowledges
// one (a second ack of it is NO_MESSAGE), CHANGE_MESSAGE_INVISIBLETIME
// gives another a new ExtraInfo (the old one is refused from then on), and
// the third comes again after its invisible time with reconsume times 1.
// A gRPC SimpleConsumer of the same group then receives only the message
// made visible again, never the ones acknowledged through remoting.
func TestRemotingPopSharesGRPCState(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	popReady(t, tc)
	createTestTopic(t, tc, "PopRM", 2)
	putTestMessages(t, tc, "PopRM", 0, "a", "b")
	putTestMessages(t, tc, "PopRM", 1, "c")
	leaderID, _ := popReady(t, tc)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t)
	const group = "cg_poprm"
	byBody := map[string]remotePopped{}
	broker.WaitFor(t, "three messages popped over remoting", func() bool {
		code, got := remotePop(t, c, addr, group, "PopRM", 2*time.Second, time.Second)
		if code != remoting.Success && code != remoting.PollingTimeout {
			t.Fatalf("POP_MESSAGE answered %d", code)
		}
		for _, p := range got {
			if p.msg.ReconsumeTimes != 0 {
				t.Fatalf("first delivery of %q with reconsume times %d", p.msg.Body, p.msg.ReconsumeTimes)
			}
			byBody[string(p.msg.Body[len(p.msg.Body)-1:])] = p
		}
		return len(byBody) == 3
	})
	a, b, cm := byBody["a"], byBody["b"], byBody["c"]

	if code := remoteAck(t, c, addr, group, a); code != remoting.Success {
		t.Fatalf("ack of a: %d", code)
	}
	if code := remoteAck(t, c, addr, group, a); code != remoting.NoMessage {
		t.Fatalf("second ack of a: %d, want NO_MESSAGE", code)
	}
	nb := remoteChange(t, c, addr, group, b, time.Minute)
	if code := remoteAck(t, c, addr, group, b); code != remoting.NoMessage {
		t.Fatalf("ack of b with the ExtraInfo before the change: %d, want NO_MESSAGE", code)
	}

	// c's invisible time ends: it comes again, attempt 2.
	var again remotePopped
	broker.WaitFor(t, "c delivered again", func() bool {
		_, got := remotePop(t, c, addr, group, "PopRM", 2*time.Second, 3*time.Second)
		for _, p := range got {
			if string(p.msg.Body) != string(cm.msg.Body) {
				t.Fatalf("redelivered %q; only c is due", p.msg.Body)
			}
			again = p
		}
		return again.msg != nil
	})
	if again.msg.ReconsumeTimes != 1 {
		t.Fatalf("c again with reconsume times %d, want 1", again.msg.ReconsumeTimes)
	}
	if code := remoteAck(t, c, addr, group, cm); code != remoting.NoMessage {
		t.Fatalf("ack of c's first delivery: %d, want NO_MESSAGE", code)
	}
	if code := remoteAck(t, c, addr, group, again); code != remoting.Success {
		t.Fatalf("ack of c: %d", code)
	}
	// b visible at once: a gRPC consumer of the group gets b, and neither
	// a nor c, whose invisible times have ended but which are acknowledged.
	remoteChange(t, c, addr, group, nb, 0)

	mq := startGRPC(t, tc, leaderID)
	var bodies []string
	broker.WaitFor(t, "b received over gRPC", func() bool {
		for _, m := range grpcReceive(t, mq, group, "PopRM") {
			bodies = append(bodies, string(m.GetBody()))
			if m.GetSystemProperties().GetDeliveryAttempt() != 2 {
				t.Fatalf("gRPC got %q at attempt %d, want 2", m.GetBody(), m.GetSystemProperties().GetDeliveryAttempt())
			}
		}
		return len(bodies) > 0
	})
	if len(bodies) != 1 || bodies[0] != string(b.msg.Body) {
		t.Fatalf("gRPC received %q; want only %q", bodies, b.msg.Body)
	}
	if code, got := remotePop(t, c, addr, group, "PopRM", 2*time.Second, 0); code != remoting.PollingTimeout || len(got) != 0 {
		t.Fatalf("remoting POP after gRPC took b: %d, %d messages", code, len(got))
	}
}

// startGRPC serves the RocketMQ 5 gRPC protocol on every node of tc, on
// loopback ports, and returns a client of node id's.
func startGRPC(t *testing.T, tc *brokertest.Cluster, id string) v2pb.MessagingServiceClient {
	t.Helper()
	ids := make([]string, 0, len(tc.Peers))
	for n := range tc.Peers {
		ids = append(ids, n)
	}
	lis, peers := grpcapitest.Listen(t, ids...)
	grpcapitest.Serve(t, tc, lis, peers)
	conn, err := grpc.NewClient(peers[id], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return v2pb.NewMessagingServiceClient(conn)
}

// grpcReceive is one ReceiveMessage of up to 32 messages, waiting up to a
// second.
func grpcReceive(t *testing.T, mq v2pb.MessagingServiceClient, group, topic string) []*v2pb.Message {
	t.Helper()
	rs, err := mq.ReceiveMessage(testCtx(t), grpcapitest.ReceiveRequest(group, topic, 32, 10*time.Second, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var out []*v2pb.Message
	for range 64 {
		r, err := rs.Recv()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if m := r.GetMessage(); m != nil {
			out = append(out, m)
		}
	}
	t.Fatal("ReceiveMessage did not end")
	return nil
}
