package grpcapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/grpcapi/grpcapitest"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
)

// pulledAnswer is a PullMessage's answer: its Status, messages and next offset.
type pulledAnswer struct {
	code v2pb.Code
	msgs []*v2pb.Message
	next int64
	// hasNext is set when the answer carried a next offset.
	hasNext bool
}

// queueOf is queue id of topic in broker group broker.
func queueOf(broker, topic string, id int32) *v2pb.MessageQueue {
	return &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: topic}, Id: id, Broker: &v2pb.Broker{Name: broker}}
}

// pullMsgs pulls with ctx and checks the answer's order, as RocketMQ's
// proxy writes it: a Status first, then the messages, then the next
// offset, last.
func pullMsgs(ctx context.Context, mq v2pb.MessagingServiceClient, req *v2pb.PullMessageRequest) (pulledAnswer, error) {
	var a pulledAnswer
	ps, err := mq.PullMessage(ctx, req)
	if err != nil {
		return a, err
	}
	first, err := ps.Recv()
	if err != nil || first.GetStatus() == nil {
		return a, fmt.Errorf("first answer %v, %v: want a status", first, err)
	}
	a.code = first.GetStatus().GetCode()
	for {
		r, err := ps.Recv()
		if errors.Is(err, io.EOF) {
			return a, nil
		}
		if err != nil {
			return a, err
		}
		switch {
		case a.hasNext:
			return a, fmt.Errorf("%v after the next offset", r)
		case r.GetMessage() != nil:
			a.msgs = append(a.msgs, r.GetMessage())
		case r.GetContent() != nil && r.GetStatus() == nil:
			a.next, a.hasNext = r.GetNextOffset(), true
		default:
			return a, fmt.Errorf("unexpected answer %v", r)
		}
	}
}

func pullReq(group string, q *v2pb.MessageQueue, offset int64, batch int32, wait time.Duration) *v2pb.PullMessageRequest {
	return &v2pb.PullMessageRequest{
		Group:              &v2pb.Resource{Name: group},
		MessageQueue:       q,
		Offset:             offset,
		BatchSize:          batch,
		FilterExpression:   &v2pb.FilterExpression{Type: v2pb.FilterType_TAG, Expression: "*"},
		LongPollingTimeout: durationpb.New(wait),
	}
}

// mustPull is pullMsgs failing the test on an error.
func mustPull(t *testing.T, mq v2pb.MessagingServiceClient, req *v2pb.PullMessageRequest) pulledAnswer {
	t.Helper()
	a, err := pullMsgs(testCtx(t), mq, req)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func queryOffset(t *testing.T, mq v2pb.MessagingServiceClient, q *v2pb.MessageQueue, p v2pb.QueryOffsetPolicy, ts *timestamppb.Timestamp) (v2pb.Code, int64) {
	t.Helper()
	r, err := mq.QueryOffset(testCtx(t), &v2pb.QueryOffsetRequest{MessageQueue: q, QueryOffsetPolicy: p, Timestamp: ts})
	if err != nil {
		t.Fatal(err)
	}
	return r.GetStatus().GetCode(), r.GetOffset()
}

func getOffset(t *testing.T, mq v2pb.MessagingServiceClient, group string, q *v2pb.MessageQueue) (v2pb.Code, int64) {
	t.Helper()
	r, err := mq.GetOffset(testCtx(t), &v2pb.GetOffsetRequest{Group: &v2pb.Resource{Name: group}, MessageQueue: q})
	if err != nil {
		t.Fatal(err)
	}
	return r.GetStatus().GetCode(), r.GetOffset()
}

func updateOffset(t *testing.T, mq v2pb.MessagingServiceClient, group string, q *v2pb.MessageQueue, off int64) v2pb.Code {
	t.Helper()
	r, err := mq.UpdateOffset(testCtx(t), &v2pb.UpdateOffsetRequest{Group: &v2pb.Resource{Name: group}, MessageQueue: q, Offset: off})
	if err != nil {
		t.Fatal(err)
	}
	return r.GetStatus().GetCode()
}

// groupEnvs serves gRPC on every node of a three-node group (each knowing
// the others' ports) and returns a client env of the leader's port and
// one of a follower's.
func groupEnvs(t *testing.T) (leader, follower *env) {
	t.Helper()
	tc := brokertest.StartCluster(t, 3, nil)
	n, err := tc.Raft.Leader(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, len(tc.Peers))
	for id := range tc.Peers {
		ids = append(ids, id)
	}
	lis, peers := grpcapitest.Listen(t, ids...)
	for id, srv := range grpcapitest.Serve(t, tc, lis, peers) {
		e := newEnv(t, tc, srv, peers[id])
		switch {
		case id == n.ID:
			leader = e
		case follower == nil:
			follower = e
		}
	}
	return leader, follower
}

// TestPullConsumerOffsets: in a three-node group, offsets of a queue are
// queried by policy; pulls read a queue in order from an offset, answer
// the next offset, refuse an offset past the queue, long-poll at its end
// until a message comes; a group's committed offset is read back through
// another node.
func TestPullConsumerOffsets(t *testing.T) {
	e, follower := groupEnvs(t)
	const topic, group = "PullTopic", "cg_pull"
	e.createTopic(t, topic, 1)
	q := queueOf("broker-a", topic, 0)

	before := timestamppb.New(time.Now().Add(-time.Minute))
	const n = 6
	ids := make([]string, n)
	for i := range ids {
		ids[i] = newID()
		e.send(t, msg(topic, ids[i], fmt.Sprintf("body %d", i)))
	}

	if code, off := queryOffset(t, e.mq, q, v2pb.QueryOffsetPolicy_BEGINNING, nil); code != v2pb.Code_OK || off != 0 {
		t.Fatalf("BEGINNING: %v %d", code, off)
	}
	if code, off := queryOffset(t, e.mq, q, v2pb.QueryOffsetPolicy_END, nil); code != v2pb.Code_OK || off != n {
		t.Fatalf("END: %v %d, want %d", code, off, n)
	}
	if code, off := queryOffset(t, e.mq, q, v2pb.QueryOffsetPolicy_TIMESTAMP, before); code != v2pb.Code_OK || off != 0 {
		t.Fatalf("TIMESTAMP before every message: %v %d", code, off)
	}
	if code, off := queryOffset(t, e.mq, q, v2pb.QueryOffsetPolicy_TIMESTAMP, timestamppb.New(time.Now().Add(time.Hour))); code != v2pb.Code_OK || off != n {
		t.Fatalf("TIMESTAMP after every message: %v %d, want %d", code, off, n)
	}
	if code, _ := queryOffset(t, e.mq, q, v2pb.QueryOffsetPolicy_TIMESTAMP, nil); code != v2pb.Code_BAD_REQUEST {
		t.Fatalf("TIMESTAMP without a timestamp: %v", code)
	}

	a := mustPull(t, e.mq, pullReq(group, q, 0, 4, 0))
	if a.code != v2pb.Code_OK || len(a.msgs) != 4 || !a.hasNext || a.next != 4 {
		t.Fatalf("pull from 0: %v, %d messages, next %d (%v)", a.code, len(a.msgs), a.next, a.hasNext)
	}
	for i, m := range a.msgs {
		sp := m.GetSystemProperties()
		if sp.GetMessageId() != ids[i] || sp.GetQueueOffset() != int64(i) || string(m.GetBody()) != fmt.Sprintf("body %d", i) {
			t.Fatalf("message %d: %v", i, m)
		}
		if sp.ReceiptHandle != nil || sp.GetStoreTimestamp() == nil {
			t.Fatalf("message %d: receipt handle %q, store time %v", i, sp.GetReceiptHandle(), sp.GetStoreTimestamp())
		}
	}
	// The store times: a search from one that differs from the one
	// before it finds its message.
	rest := mustPull(t, e.mq, pullReq(group, q, 4, 32, 0))
	if rest.code != v2pb.Code_OK || len(rest.msgs) != n-4 || rest.next != n {
		t.Fatalf("pull from 4: %v, %d messages, next %d", rest.code, len(rest.msgs), rest.next)
	}
	all := append(a.msgs, rest.msgs...)
	for i := 1; i < len(all); i++ {
		ts := all[i].GetSystemProperties().GetStoreTimestamp()
		if ts.AsTime().After(all[i-1].GetSystemProperties().GetStoreTimestamp().AsTime()) {
			if code, off := queryOffset(t, e.mq, q, v2pb.QueryOffsetPolicy_TIMESTAMP, ts); code != v2pb.Code_OK || off != int64(i) {
				t.Fatalf("TIMESTAMP of message %d: %v %d", i, code, off)
			}
			break
		}
	}

	if a := mustPull(t, e.mq, pullReq(group, q, n, 4, 0)); a.code != v2pb.Code_MESSAGE_NOT_FOUND || len(a.msgs) != 0 || a.next != n {
		t.Fatalf("pull at the end: %v, %d messages, next %d", a.code, len(a.msgs), a.next)
	}
	if a := mustPull(t, e.mq, pullReq(group, q, 100, 4, 0)); a.code != v2pb.Code_ILLEGAL_OFFSET || !a.hasNext || a.next != n {
		t.Fatalf("pull past the end: %v, next %d (%v)", a.code, a.next, a.hasNext)
	}
	start := time.Now()
	if a := mustPull(t, e.mq, pullReq(group, q, n, 4, 300*time.Millisecond)); a.code != v2pb.Code_MESSAGE_NOT_FOUND || a.next != n {
		t.Fatalf("long poll with nothing coming: %v, next %d", a.code, a.next)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("a long poll of 300ms answered after %v", took)
	}

	// A long poll at the end is answered by the next message sent.
	type result struct {
		a   pulledAnswer
		err error
	}
	done := make(chan result, 1)
	ctx := testCtx(t)
	go func() {
		a, err := pullMsgs(ctx, e.mq, pullReq(group, q, n, 4, 20*time.Second))
		done <- result{a, err}
	}()
	late := newID()
	e.send(t, msg(topic, late, "late"))
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.a.code != v2pb.Code_OK || len(r.a.msgs) != 1 || r.a.msgs[0].GetSystemProperties().GetMessageId() != late || r.a.next != n+1 {
		t.Fatalf("long poll: %v, %v, next %d", r.a.code, r.a.msgs, r.a.next)
	}

	// Offsets: committed through the leader, read through a follower.
	if code := updateOffset(t, e.mq, group, q, 4); code != v2pb.Code_OK {
		t.Fatalf("update offset: %v", code)
	}
	waitFor(t, "the committed offset through a follower", func() bool {
		code, off := getOffset(t, follower.mq, group, q)
		return code == v2pb.Code_OK && off == 4
	})
	// A group with no offset: OFFSET_NOT_FOUND (setZeroIfNotFound=false,
	// as Java's proxy asks), although the queue still holds its first
	// message, so the client starts where its policy says.
	if code, _ := getOffset(t, e.mq, "cg_none", q); code != v2pb.Code_OFFSET_NOT_FOUND {
		t.Fatalf("offset of a group with none: %v", code)
	}
}

// TestPullRefusals: what a pull-consumer call names is checked: group,
// topic, broker group, queue id, batch size, offset and polling time.
func TestPullRefusals(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	e := startEnv(t, tc, "n0", nil)
	e.createTopic(t, "PullChecked", 2)
	good := queueOf("broker-a", "PullChecked", 1)
	for name, c := range map[string]struct {
		req  *v2pb.PullMessageRequest
		want v2pb.Code
	}{
		"no group":      {pullReq("", good, 0, 4, 0), v2pb.Code_ILLEGAL_CONSUMER_GROUP},
		"bad group":     {pullReq("cg bad", good, 0, 4, 0), v2pb.Code_ILLEGAL_CONSUMER_GROUP},
		"no topic":      {pullReq("cg", queueOf("broker-a", "", 0), 0, 4, 0), v2pb.Code_ILLEGAL_TOPIC},
		"unknown topic": {pullReq("cg", queueOf("broker-a", "NoSuchPullTopic", 0), 0, 4, 0), v2pb.Code_TOPIC_NOT_FOUND},
		"other broker":  {pullReq("cg", queueOf("broker-z", "PullChecked", 0), 0, 4, 0), v2pb.Code_BAD_REQUEST},
		"queue id":      {pullReq("cg", queueOf("broker-a", "PullChecked", 2), 0, 4, 0), v2pb.Code_BAD_REQUEST},
		"negative id":   {pullReq("cg", queueOf("broker-a", "PullChecked", -1), 0, 4, 0), v2pb.Code_BAD_REQUEST},
		"batch":         {pullReq("cg", good, 0, 0, 0), v2pb.Code_BAD_REQUEST},
		"offset":        {pullReq("cg", good, -1, 4, 0), v2pb.Code_ILLEGAL_OFFSET},
		"polling time":  {pullReq("cg", good, 0, 4, -time.Second), v2pb.Code_ILLEGAL_POLLING_TIME},
	} {
		a := mustPull(t, e.mq, c.req)
		if a.code != c.want || a.hasNext {
			t.Errorf("%s: %v (next offset %v), want %v", name, a.code, a.hasNext, c.want)
		}
	}
	// No broker named: the only group serving the topic.
	if a := mustPull(t, e.mq, pullReq("cg", queueOf("", "PullChecked", 1), 0, 4, 0)); a.code != v2pb.Code_MESSAGE_NOT_FOUND || a.next != 0 {
		t.Fatalf("pull naming no broker: %v %d", a.code, a.next)
	}
	if code := updateOffset(t, e.mq, "cg", good, -1); code != v2pb.Code_ILLEGAL_OFFSET {
		t.Fatalf("update to -1: %v", code)
	}
	if code, _ := getOffset(t, e.mq, "", good); code != v2pb.Code_ILLEGAL_CONSUMER_GROUP {
		t.Fatalf("get offset without a group: %v", code)
	}
	if code, _ := queryOffset(t, e.mq, queueOf("broker-a", "PullChecked", 5), v2pb.QueryOffsetPolicy_END, nil); code != v2pb.Code_BAD_REQUEST {
		t.Fatalf("query offset of queue 5: %v", code)
	}
}

// TestProxyPullOffsets: through a proxy in cluster mode, offsets are
// queried, pulls read from the group's leader, a long poll (held by the
// leader's broker) is answered by a new message, and an offset committed
// is read back.
func TestProxyPullOffsets(t *testing.T) {
	e := startProxyEnv(t)
	const topic, group = "ProxyPull", "cg_proxy_pull"
	e.createTopic(t, topic, 1)
	waitFor(t, "the topic's route through the proxy", func() bool {
		r, err := e.mq.QueryRoute(testCtx(t), &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: topic}})
		return err == nil && r.GetStatus().GetCode() == v2pb.Code_OK
	})
	q := queueOf("broker-a", topic, 0)
	ids := []string{newID(), newID()}
	for _, id := range ids {
		e.send(t, msg(topic, id, "via the proxy"))
	}
	if code, off := queryOffset(t, e.mq, q, v2pb.QueryOffsetPolicy_END, nil); code != v2pb.Code_OK || off != 2 {
		t.Fatalf("END through the proxy: %v %d", code, off)
	}
	a := mustPull(t, e.mq, pullReq(group, q, 0, 4, time.Second))
	if a.code != v2pb.Code_OK || len(a.msgs) != 2 || a.next != 2 ||
		a.msgs[0].GetSystemProperties().GetMessageId() != ids[0] || a.msgs[1].GetSystemProperties().GetMessageId() != ids[1] {
		t.Fatalf("pull through the proxy: %v, %v, next %d", a.code, a.msgs, a.next)
	}

	done := make(chan pulledAnswer, 1)
	errc := make(chan error, 1)
	ctx := testCtx(t)
	go func() {
		a, err := pullMsgs(ctx, e.mq, pullReq(group, q, 2, 4, 20*time.Second))
		errc <- err
		done <- a
	}()
	late := newID()
	e.send(t, msg(topic, late, "late"))
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if a := <-done; a.code != v2pb.Code_OK || len(a.msgs) != 1 || a.msgs[0].GetSystemProperties().GetMessageId() != late || a.next != 3 {
		t.Fatalf("long poll through the proxy: %v, %v, next %d", a.code, a.msgs, a.next)
	}

	if code := updateOffset(t, e.mq, group, q, 3); code != v2pb.Code_OK {
		t.Fatalf("update offset through the proxy: %v", code)
	}
	waitFor(t, "the committed offset through the proxy", func() bool {
		code, off := getOffset(t, e.mq, group, q)
		return code == v2pb.Code_OK && off == 3
	})
}

// TestPullAccess: with the ACL on, a pull and an offset's update or read
// need SUB on the topic and the group, a query of a queue's offset SUB on
// the topic; an unsigned call is UNAUTHORIZED.
func TestPullAccess(t *testing.T) {
	e := startSecureEnv(t)
	prod := signed(testCtx(t), "producer1", "producer-secret")
	sub, pub := queueOf("broker-a", "AclSub", 0), queueOf("broker-a", "AclPub", 0)
	pullCode := func(ctx context.Context, group string, q *v2pb.MessageQueue) v2pb.Code {
		t.Helper()
		a, err := pullMsgs(ctx, e.mq, pullReq(group, q, 0, 4, 0))
		if err != nil {
			t.Fatal(err)
		}
		return a.code
	}
	if code := pullCode(testCtx(t), "cg_acl", sub); code != v2pb.Code_UNAUTHORIZED {
		t.Fatalf("unsigned pull: %v", code)
	}
	if code := pullCode(prod, "cg_acl", sub); code != v2pb.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("pull: %v", code)
	}
	if code := pullCode(prod, "cg_other", sub); code != v2pb.Code_FORBIDDEN {
		t.Fatalf("pull in a group without SUB: %v", code)
	}
	if code := pullCode(prod, "cg_acl", pub); code != v2pb.Code_FORBIDDEN {
		t.Fatalf("pull of a PUB-only topic: %v", code)
	}
	offsetCodes := func(ctx context.Context, group string, q *v2pb.MessageQueue) (v2pb.Code, v2pb.Code) {
		t.Helper()
		u, err := e.mq.UpdateOffset(ctx, &v2pb.UpdateOffsetRequest{Group: &v2pb.Resource{Name: group}, MessageQueue: q, Offset: 0})
		if err != nil {
			t.Fatal(err)
		}
		g, err := e.mq.GetOffset(ctx, &v2pb.GetOffsetRequest{Group: &v2pb.Resource{Name: group}, MessageQueue: q})
		if err != nil {
			t.Fatal(err)
		}
		return u.GetStatus().GetCode(), g.GetStatus().GetCode()
	}
	if u, g := offsetCodes(prod, "cg_acl", sub); u != v2pb.Code_OK || g != v2pb.Code_OK {
		t.Fatalf("offsets: update %v, get %v", u, g)
	}
	if u, g := offsetCodes(prod, "cg_other", sub); u != v2pb.Code_FORBIDDEN || g != v2pb.Code_FORBIDDEN {
		t.Fatalf("offsets in a group without SUB: update %v, get %v", u, g)
	}
	if u, g := offsetCodes(testCtx(t), "cg_acl", sub); u != v2pb.Code_UNAUTHORIZED || g != v2pb.Code_UNAUTHORIZED {
		t.Fatalf("unsigned offsets: update %v, get %v", u, g)
	}
	queryCode := func(ctx context.Context, q *v2pb.MessageQueue) v2pb.Code {
		t.Helper()
		r, err := e.mq.QueryOffset(ctx, &v2pb.QueryOffsetRequest{MessageQueue: q, QueryOffsetPolicy: v2pb.QueryOffsetPolicy_END})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetStatus().GetCode()
	}
	if code := queryCode(prod, sub); code != v2pb.Code_OK {
		t.Fatalf("query offset: %v", code)
	}
	if code := queryCode(prod, pub); code != v2pb.Code_FORBIDDEN {
		t.Fatalf("query offset of a PUB-only topic: %v", code)
	}
}
