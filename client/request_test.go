package client

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
)

// TestRequestReply: our producer's Request gets the reply a consumer sends
// with NewReply through another producer; the broker stores the reply in
// the cluster's reply topic and pushes it to the requester. A request
// nobody answers times out with ErrRequestTimeout.
func TestRequestReply(t *testing.T) {
	tc := startCluster(t, nil)
	rc := testClient(t)
	const topic = "RequestT"
	createTopic(t, tc, rc, topic, 2)
	ns := tc.NamesrvAddr()
	replier := newProducer(t, WithNameServers(ns), WithGroup("replier-pg"))
	startPush(t, topic, Selector{}, func(ctx context.Context, m *MessageExt) ConsumeResult {
		if string(m.Body) == "no answer" {
			return ConsumeSuccess
		}
		r, err := NewReply(m, []byte("re: "+string(m.Body)))
		if err != nil {
			t.Errorf("NewReply: %v", err)
			return ConsumeSuccess
		}
		if _, err := replier.Send(ctx, r); err != nil {
			return ConsumeRetryLater
		}
		return ConsumeSuccess
	}, fastPush(ns, "request-cg", WithInstanceName("replier"))...)

	requester := newProducer(t, WithNameServers(ns), WithGroup("requester-pg"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < 3; i++ {
		body := fmt.Sprintf("ping %d", i)
		reply, err := requester.Request(ctx, &Message{Topic: topic, Body: []byte(body)}, 20*time.Second)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if got, want := string(reply.Body), "re: "+body; got != want {
			t.Fatalf("request %d: reply %q, want %q (%+v)", i, got, want, reply)
		}
		if reply.Topic != protocol.ReplyTopic("DefaultCluster") || reply.Properties[message.PropertyMessageType] != protocol.ReplyMessageType ||
			reply.Properties[protocol.PropertyPushReplyTime] == "" {
			t.Fatalf("request %d: reply %+v", i, reply)
		}
	}
	_, err := requester.Request(ctx, &Message{Topic: topic, Body: []byte("no answer")}, 500*time.Millisecond)
	if !errors.Is(err, ErrRequestTimeout) {
		t.Fatalf("unanswered request: %v", err)
	}
	if _, err := NewReply(&MessageExt{}, nil); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("reply to a message that is no request: %v", err)
	}
}
