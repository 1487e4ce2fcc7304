package broker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// replyHeader is the send header of a reply to client requester.
func replyHeader(requester, correlation string) protocol.SendMessageRequestHeader {
	props := map[string]string{
		message.PropertyCorrelationID: correlation, message.PropertyReplyToClient: requester,
		message.PropertyMessageTTL: "3", message.PropertyMessageType: protocol.ReplyMessageType,
	}
	return protocol.SendMessageRequestHeader{ProducerGroup: "pg_replier", Topic: protocol.ReplyTopic("DefaultCluster"),
		DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: -1, BornTimestamp: 1_700_000_000_000,
		Properties: string(message.EncodeProperties(props))}
}

// newRequester is a client that takes the replies pushed to it (closed
// at the test's end if not before).
func newRequester(t *testing.T) (*remoting.Client, chan *remoting.Command) {
	pushed := make(chan *remoting.Command, 4)
	requester := remoting.NewClient(remoting.ClientConfig{
		OnRequest: remoting.HandlerFunc(func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
			if req.Code != remoting.PushReplyMessageToClient {
				return nil
			}
			pushed <- req
			return remoting.NewResponse(req, remoting.Success, "")
		}),
	})
	t.Cleanup(func() { _ = requester.Close() })
	return requester, pushed
}

// TestSendReplyMessage: SEND_REPLY_MESSAGE_V2 (325) and SEND_REPLY_MESSAGE
// (324) store the reply in DefaultCluster_REPLY_TOPIC, which the leader
// created as Java's broker does (1 queue), and push it with
// PUSH_REPLY_MESSAGE_TO_CLIENT (326) to the producer whose client id is
// in REPLY_TO_CLIENT, over its heartbeat connection. A requester the node
// does not hold is SYSTEM_ERROR naming it; the reply is stored all the
// same.
func TestSendReplyMessage(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	replyTopic := protocol.ReplyTopic("DefaultCluster")
	g, _ := leaderGroup(t, tc)
	broker.WaitFor(t, "the reply topic", func() bool {
		tcfg, ok := g.Metadata().Topic(replyTopic)
		return ok && tcfg.ReadQueueNums == 1 && tcfg.WriteQueueNums == 1 && tcfg.Perm == 6
	})

	requester, pushed := newRequester(t)
	hb, _ := json.Marshal(map[string]any{"clientID": "10.0.0.7@req", "producerDataSet": []map[string]string{{"groupName": "pg_requester"}}})
	if resp, err := requester.Invoke(testCtx(t), addr, remoting.NewRequest(remoting.HeartBeat, nil, hb)); err != nil || resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %v %v", resp, err)
	}

	replier := newTestClient(t)
	h := replyHeader("10.0.0.7@req", "corr-1")
	r := replier.call(t, addr, remoting.SendReplyMessageV2, (*protocol.SendMessageRequestHeaderV2)(&h).Encode(), []byte("pong"))
	if r.Code != remoting.Success || r.ExtFields["msgId"] == "" || r.ExtFields["queueId"] != "0" {
		t.Fatalf("reply: %d %q %v", r.Code, r.Remark, r.ExtFields)
	}
	var push *remoting.Command
	select {
	case push = <-pushed:
	case <-testCtx(t).Done():
		t.Fatal("no reply pushed")
	}
	var ph protocol.ReplyMessageRequestHeader
	if err := ph.Decode(push.ExtFields); err != nil {
		t.Fatalf("push header: %v (%v)", err, push.ExtFields)
	}
	props, err := message.DecodeProperties([]byte(ph.Properties))
	if err != nil || string(push.Body) != "pong" || ph.Topic != replyTopic || ph.ProducerGroup != "pg_replier" ||
		props[message.PropertyCorrelationID] != "corr-1" || props[protocol.PropertyPushReplyTime] == "" ||
		!strings.HasPrefix(ph.BornHost, "/127.0.0.1:") || ph.StoreHost != "/"+addr || ph.StoreTimestamp == 0 {
		t.Fatalf("pushed %+v %q (%v)", ph, push.Body, err)
	}

	// An unknown requester: refused with Java's remark, stored anyway.
	h = replyHeader("nobody@1", "corr-2")
	r = replier.call(t, addr, remoting.SendReplyMessage, h.Encode(), []byte("lost"))
	if r.Code != remoting.SystemError || !strings.Contains(r.Remark, "channel of <nobody@1> not found") {
		t.Fatalf("reply to nobody: %d %q", r.Code, r.Remark)
	}
	anon := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: replyTopic, DefaultTopic: "TBW102", DefaultTopicQueueNums: 4}
	r = replier.call(t, addr, remoting.SendReplyMessage, anon.Encode(), []byte("anon"))
	if r.Code != remoting.SystemError || !strings.Contains(r.Remark, "REPLY_TO_CLIENT") {
		t.Fatalf("reply without REPLY_TO_CLIENT: %d %q", r.Code, r.Remark)
	}

	q := replier.call(t, addr, remoting.PullMessage, pullExt("cg_reply_reader", replyTopic, 0, 0, broker.PullFlagSubscription, 0, "*"), nil)
	msgs, _ := decodePull(t, q)
	var bodies []string
	for _, m := range msgs {
		bodies = append(bodies, string(m.Body))
	}
	if strings.Join(bodies, ",") != "pong,lost,anon" || msgs[0].Property(message.PropertyCorrelationID) != "corr-1" {
		t.Fatalf("stored replies %v", bodies)
	}

	// The reply topic is one of the broker's system topics.
	st := replier.call(t, addr, remoting.GetSystemTopicListFromBroker, nil, nil)
	if !strings.Contains(string(st.Body), replyTopic) {
		t.Fatalf("system topics %s", st.Body)
	}
}

// TestReplyToRequesterWithoutHeartbeat: a requester whose heartbeat has
// not reached the leader yet (rocketmq-client-go sends none before a
// request to a topic the name server knows) still gets its reply: the
// leader pushes it over the connection the request message came on. Once
// that connection closes, the reply is refused as for an unknown
// requester (stored all the same).
func TestReplyToRequesterWithoutHeartbeat(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	createTestTopic(t, tc, "RequestTopic", 1)
	g, _ := leaderGroup(t, tc)
	broker.WaitFor(t, "the reply topic", func() bool {
		_, ok := g.Metadata().Topic(protocol.ReplyTopic("DefaultCluster"))
		return ok
	})

	requester, pushed := newRequester(t)
	// The request message: a plain send whose properties name the
	// requester and the correlation id, and no heartbeat before it.
	props := map[string]string{message.PropertyCorrelationID: "corr-r", message.PropertyReplyToClient: "10.0.0.9@req",
		message.PropertyMessageTTL: "3"}
	rh := protocol.SendMessageRequestHeader{ProducerGroup: "pg_requester", Topic: "RequestTopic", DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: 0, BornTimestamp: 1_700_000_000_000, Properties: string(message.EncodeProperties(props))}
	if r, err := requester.Invoke(testCtx(t), addr, remoting.NewRequest(remoting.SendMessage, rh.Encode(), []byte("ping"))); err != nil || r.Code != remoting.Success {
		t.Fatalf("request: %v %v", r, err)
	}

	replier := newTestClient(t)
	h := replyHeader("10.0.0.9@req", "corr-r")
	if r := replier.call(t, addr, remoting.SendReplyMessageV2, (*protocol.SendMessageRequestHeaderV2)(&h).Encode(), []byte("pong")); r.Code != remoting.Success {
		t.Fatalf("reply: %d %q", r.Code, r.Remark)
	}
	select {
	case push := <-pushed:
		if string(push.Body) != "pong" {
			t.Fatalf("pushed %q", push.Body)
		}
	case <-testCtx(t).Done():
		t.Fatal("no reply pushed")
	}

	_ = requester.Close()
	broker.WaitFor(t, "the requester's connection forgotten", func() bool {
		h := replyHeader("10.0.0.9@req", "corr-late")
		r := replier.call(t, addr, remoting.SendReplyMessage, h.Encode(), []byte("late"))
		return r.Code == remoting.SystemError && strings.Contains(r.Remark, "channel of <10.0.0.9@req> not found")
	})
}
