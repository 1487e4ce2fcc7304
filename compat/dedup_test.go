package compat

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/dledger/messagestore"
)

// stored counts the messages the leader's replica holds in topic.
func stored(t *testing.T, ctx context.Context, tc *brokertest.Cluster, topic string, queues int32) int64 {
	t.Helper()
	l, err := tc.Raft.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for q := int32(0); q < queues; q++ {
		m, err := messagestore.Of(l.Group()).MaxOffset(topic, q)
		if err != nil {
			t.Fatal(err)
		}
		n += m
	}
	return n
}

// TestRealClientRetryStoredOnce: rocketmq-client-go keeps a message's
// UNIQ_KEY across its retries (it sets one only when the message has
// none). A send that repeats a stored message's key, as its retry does
// after a lost answer, is answered SEND_OK with the first store's queue,
// offset and message id, and the topic holds the message once. A topic
// whose dedup.window attribute is 0 stores it again.
func TestRealClientRetryStoredOnce(t *testing.T) {
	tc, ns, ctx := startGroup(t, 60*time.Second)
	p := startProducer(t, ns, "dedup-pg")
	const topic = "DedupCompatTopic"
	if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("create"))); err != nil {
		t.Fatal(err)
	}
	send := func(topic, key string) *primitive.SendResult {
		t.Helper()
		m := primitive.NewMessage(topic, []byte("once"))
		m.WithProperty(primitive.PropertyUniqueClientMessageIdKeyIndex, key)
		r, err := p.SendSync(ctx, m)
		if err != nil || r.Status != primitive.SendOK {
			t.Fatalf("send %s: %v %v", key, r, err)
		}
		return r
	}
	const key = "0A00000100002A9F0000DEDUP0000001"
	first := send(topic, key)
	before := stored(t, ctx, tc, topic, 8)
	for i := 0; i < 3; i++ {
		again := send(topic, key)
		if again.OffsetMsgID != first.OffsetMsgID || again.QueueOffset != first.QueueOffset ||
			again.MessageQueue.QueueId != first.MessageQueue.QueueId || again.MsgID != key {
			t.Fatalf("repeat answered %v, the first send %v", again, first)
		}
	}
	if n := stored(t, ctx, tc, topic, 8); n != before {
		t.Fatalf("repeats were stored: %d messages, %d before", n, before)
	}

	// A delayed message waits in SCHEDULE_TOPIC_XXXX (queue level-1): a
	// repeat is not parked again, and one copy is delivered.
	const delayed, dkey = "DedupDelayTopic", "0A00000100002A9F0000DEDUP0000002"
	send(delayed, "0A00000100002A9F0000DEDUP0000003") // creates the topic
	parked := stored(t, ctx, tc, "SCHEDULE_TOPIC_XXXX", 1)
	for i := 0; i < 2; i++ {
		m := primitive.NewMessage(delayed, []byte("later"))
		m.WithProperty(primitive.PropertyUniqueClientMessageIdKeyIndex, dkey)
		m.WithDelayTimeLevel(1)
		if r, err := p.SendSync(ctx, m); err != nil || r.Status != primitive.SendOK {
			t.Fatalf("delayed send: %v %v", r, err)
		}
	}
	if n := stored(t, ctx, tc, "SCHEDULE_TOPIC_XXXX", 1); n != parked+1 {
		t.Fatalf("the delayed message was parked %d times", n-parked)
	}
	for stored(t, ctx, tc, delayed, 8) < 2 {
		select {
		case <-ctx.Done():
			t.Fatal("the delayed message was not delivered")
		case <-time.After(20 * time.Millisecond):
		}
	}

	// The off switch: a topic attribute, set as RocketMQ 5's mqadmin -a.
	const off = "DedupOffTopic"
	a, err := client.NewAdmin(client.WithAdminNameServers(ns...))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.CreateTopic(ctx, client.TopicConfig{Topic: off, ReadQueues: 1, WriteQueues: 1, Attributes: "+dedup.window=0"}, client.Target{}); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, ctx, tc, off)
	send(off, key)
	send(off, key)
	if n := stored(t, ctx, tc, off, 1); n != 2 {
		t.Fatalf("topic with dedup.window=0 holds %d messages, want 2", n)
	}
	if _, err := a.CreateTopic(ctx, client.TopicConfig{Topic: off, ReadQueues: 1, WriteQueues: 1, Attributes: "+dedup.window=later"}, client.Target{}); err == nil {
		t.Fatal("a window that is not a duration was taken")
	}
}
