package broker_test

import (
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// TestQueryConsumeQueue: QUERY_CONSUME_QUEUE (321) answers a queue's
// units from an index (CommitLog offset, size, tags hash), its min and
// max index, and with a consumer group its subscription and each unit's
// verdict; an index past the queue and an unknown queue are answered as
// Java's broker answers them.
func TestQueryConsumeQueue(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	createTestTopic(t, tc, "CQT", 2)
	putTestMessages(t, tc, "CQT", 1, "TagA", "TagB", "TagA")
	c := newTestClient(t)
	if r := c.call(t, addr, remoting.HeartBeat, nil, heartbeatBody("10.0.0.5@cq", "cg_cq", map[string]string{"CQT": "TagA"})); r.Code != remoting.Success {
		t.Fatalf("heartbeat: %d %q", r.Code, r.Remark)
	}

	query := func(h protocol.QueryConsumeQueueRequestHeader) (*remoting.Command, *protocol.QueryConsumeQueueResponseBody) {
		t.Helper()
		r := c.call(t, addr, remoting.QueryConsumeQueue, h.Encode(), nil)
		if r.Code != remoting.Success {
			return r, nil
		}
		body, err := protocol.DecodeQueryConsumeQueueBody(r.Body)
		if err != nil {
			t.Fatalf("body %s: %v", r.Body, err)
		}
		return r, body
	}
	_, body := query(protocol.QueryConsumeQueueRequestHeader{Topic: "CQT", QueueID: 1, Index: 0, Count: 10, ConsumerGroup: "cg_cq"})
	if body.MinQueueIndex != 0 || body.MaxQueueIndex != 3 || len(body.QueueData) != 3 || body.SubscriptionData == nil ||
		body.SubscriptionData.SubString != "TagA" {
		t.Fatalf("query: %+v", body)
	}
	var evals []bool
	for i, d := range body.QueueData {
		evals = append(evals, d.Eval)
		if d.PhysicSize <= 0 || (i > 0 && d.PhysicOffset <= body.QueueData[i-1].PhysicOffset) {
			t.Fatalf("unit %d: %+v", i, d)
		}
	}
	if evals[0] != true || evals[1] != false || evals[2] != true || body.QueueData[0].TagsCode != int64(message.JavaStringHash("TagA")) {
		t.Fatalf("verdicts %v, units %+v", evals, body.QueueData)
	}

	// From index 1, two units; without a group no verdicts; a group that
	// is not online says so.
	_, body = query(protocol.QueryConsumeQueueRequestHeader{Topic: "CQT", QueueID: 1, Index: 1, Count: 2})
	if len(body.QueueData) != 2 || body.QueueData[0].Eval || body.SubscriptionData != nil || body.FilterData != "" {
		t.Fatalf("from 1: %+v", body)
	}
	_, body = query(protocol.QueryConsumeQueueRequestHeader{Topic: "CQT", QueueID: 1, Index: 0, Count: 1, ConsumerGroup: "nobody"})
	if body.FilterData != "nobody@CQT is not online!" || len(body.QueueData) != 1 {
		t.Fatalf("offline group: %+v", body)
	}
	r, body := query(protocol.QueryConsumeQueueRequestHeader{Topic: "CQT", QueueID: 1, Index: 9, Count: 1})
	if r.Remark != "Index 9 of 1@CQT is not exist!" || len(body.QueueData) != 0 || body.MaxQueueIndex != 3 {
		t.Fatalf("past the end: %q %+v", r.Remark, body)
	}
	r, _ = query(protocol.QueryConsumeQueueRequestHeader{Topic: "CQT", QueueID: 7, Count: 1})
	if r.Code != remoting.SystemError || !strings.Contains(r.Remark, "7@CQT is not exist!") {
		t.Fatalf("unknown queue: %d %q", r.Code, r.Remark)
	}
}
