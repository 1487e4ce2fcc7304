package grpcapi_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/protocol"
)

// sendTimer sends a DELAY message due in d and returns its send entry.
func (e *env) sendTimer(t *testing.T, topic, id string, d time.Duration) *v2pb.SendResultEntry {
	t.Helper()
	m := msg(topic, id, "recall me")
	m.SystemProperties.MessageType = v2pb.MessageType_DELAY
	m.SystemProperties.DeliveryTimestamp = timestamppb.New(time.Now().Add(d))
	return e.send(t, m)
}

func (e *env) recall(t *testing.T, topic, handle string) *v2pb.RecallMessageResponse {
	t.Helper()
	r, err := e.mq.RecallMessage(testCtx(t), &v2pb.RecallMessageRequest{Topic: &v2pb.Resource{Name: topic}, RecallHandle: handle})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkRecall runs the recall scenario on e: the send's handle (Java's
// form, naming the topic, the group and the message), a recall answered
// OK with the message id, a normal message without a handle, and the
// refusals: a garbage handle BAD_REQUEST, a handle whose time passed
// INTERNAL_SERVER_ERROR (the broker's ILLEGAL_OPERATION, as RocketMQ's
// proxy maps it), another topic's handle the same.
func checkRecall(t *testing.T, e *env, topic string) {
	t.Helper()
	id := newID()
	entry := e.sendTimer(t, topic, id, time.Minute)
	h, err := protocol.DecodeRecallHandle(entry.GetRecallHandle())
	if err != nil {
		t.Fatalf("the send of a timer answered recall handle %q: %v", entry.GetRecallHandle(), err)
	}
	if h.Topic != topic || h.MessageID != id || h.BrokerName == "" || h.TimestampMS() <= time.Now().UnixMilli() {
		t.Fatalf("recall handle %+v for %s of %s", h, id, topic)
	}
	r := e.recall(t, topic, entry.GetRecallHandle())
	if r.GetStatus().GetCode() != v2pb.Code_OK || r.GetMessageId() != id {
		t.Fatalf("recall: %v", r)
	}
	if got, _ := e.pulled(t, topic, 1, id); got != nil {
		t.Fatalf("a recalled timer is readable: %+v", got)
	}

	if normal := e.send(t, msg(topic, newID(), "now")); normal.GetRecallHandle() != "" {
		t.Fatalf("a normal message's send answered a recall handle %q", normal.GetRecallHandle())
	}
	if r := e.recall(t, topic, "garbage!"); r.GetStatus().GetCode() != v2pb.Code_BAD_REQUEST {
		t.Fatalf("a garbage handle: %v", r)
	}
	passed := protocol.RecallHandle{Topic: topic, BrokerName: h.BrokerName,
		Timestamp: strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10), MessageID: id}.String()
	if r := e.recall(t, topic, passed); r.GetStatus().GetCode() != v2pb.Code_INTERNAL_SERVER_ERROR ||
		!strings.Contains(r.GetStatus().GetMessage(), "ILLEGAL_OPERATION") {
		t.Fatalf("a handle whose time passed: %v", r)
	}
	if r := e.recall(t, "GRecallOther", entry.GetRecallHandle()); r.GetStatus().GetCode() != v2pb.Code_INTERNAL_SERVER_ERROR ||
		!strings.Contains(r.GetStatus().GetMessage(), "topic not match") {
		t.Fatalf("another topic's recall: %v", r)
	}
}

// TestRecallOnNodePort recalls a timer message through a node's own gRPC
// port.
func TestRecallOnNodePort(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	e := startEnv(t, tc, "n0", nil)
	e.createTopic(t, "GRecall", 1)
	e.createTopic(t, "GRecallOther", 1)
	checkRecall(t, e, "GRecall")
}

// TestRecallThroughProxy recalls a timer message through `ledgermq
// proxy`, which sends RECALL_MESSAGE to the leader of the group the handle
// names.
func TestRecallThroughProxy(t *testing.T) {
	e := startProxyEnv(t)
	e.createTopic(t, "GRecall", 1)
	e.createTopic(t, "GRecallOther", 1)
	checkRecall(t, e.env, "GRecall")
}
