package compat

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// createTopic creates topic on the group (4 queues) and waits for its
// route.
func createTopic(t *testing.T, ctx context.Context, ns []string, topic string) {
	t.Helper()
	a, err := client.NewAdmin(client.WithAdminNameServers(ns...))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.CreateTopic(ctx, client.TopicConfig{Topic: topic, ReadQueues: 4, WriteQueues: 4, Perm: 6}, client.Target{}); err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	waitFor(t, ctx, "the route of "+topic, func() bool {
		h := protocol.GetRouteInfoRequestHeader{Topic: topic}
		resp, err := rc.Invoke(ctx, ns[0], h.Request())
		return err == nil && resp.Code == remoting.Success
	})
}

// TestRealClientRequestReply: rocketmq-client-go's Producer.Request gets
// the reply a push consumer sends with the library's CreateReplyMessage:
// the broker stores the reply in DefaultCluster_REPLY_TOPIC and pushes it
// to the requester (PUSH_REPLY_MESSAGE_TO_CLIENT).
func TestRealClientRequestReply(t *testing.T) {
	tc, ns, ctx := startGroup(t, 90*time.Second)
	const topic = "CompatRequestTopic"
	createTopic(t, ctx, ns, topic)
	waitRoute(t, ctx, tc, protocol.ReplyTopic("DefaultCluster"))

	replier := startProducer(t, ns, "compat-reply-pg")
	c := startPush(t, ns, "compat-reply-cg", "compat-reply-cg", topic, consumer.Clustering,
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				body := []byte("re: " + string(m.Body))
				r, err := consumer.CreateReplyMessage(m, body)
				if err != nil {
					t.Errorf("CreateReplyMessage: %v", err)
					return consumer.ConsumeSuccess, nil
				}
				// The library's CreateReplyMessage parses the body as
				// properties and leaves the reply without one (its own
				// example never reads the body back); set it.
				r.Body = body
				if _, err := replier.SendSync(ctx, r); err != nil {
					return consumer.ConsumeRetryLater, nil
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	defer func() { _ = c.Shutdown() }()

	requester := startProducer(t, ns, "compat-request-pg")
	for i, body := range []string{"ping-1", "ping-2", "ping-3"} {
		reply, err := requester.Request(ctx, 20*time.Second, primitive.NewMessage(topic, []byte(body)))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if got, want := string(reply.Body), "re: "+body; got != want {
			t.Fatalf("request %d: reply body %q, want %q (properties %v)", i, got, want, reply.GetProperties())
		}
		if reply.GetProperty(protocol.PropertyPushReplyTime) == "" || reply.Topic != protocol.ReplyTopic("DefaultCluster") {
			t.Fatalf("request %d: reply %+v", i, reply)
		}
	}
}
