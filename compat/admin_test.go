package compat

import (
	"slices"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestRealClientAdmin drives the group with the client's admin API: create
// a topic on the broker, find it in the name server's topic list and
// routes, list subscription groups (one created by a consumer's
// heartbeat), and delete the topic from broker and name server.
func TestRealClientAdmin(t *testing.T) {
	tc, ns, ctx := startGroup(t, 60*time.Second)
	leader, err := tc.Raft.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	addr := tc.Peers[leader.ID]
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver(ns)))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()

	const topic = "AdminCompatTopic"
	if err := adm.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(addr),
		admin.WithReadQueueNums(6), admin.WithWriteQueueNums(6)); err != nil {
		t.Fatal(err)
	}
	list, err := adm.FetchAllTopicList(ctx)
	if err != nil || !slices.Contains(list.TopicList, topic) {
		t.Fatalf("topic list %+v %v lacks %s", list, err, topic)
	}
	mqs, err := adm.FetchPublishMessageQueues(ctx, topic)
	if err != nil || len(mqs) != 6 {
		t.Fatalf("publish queues %v %v, want 6", mqs, err)
	}

	// A push consumer's heartbeat creates its group; the admin lists it
	// from a follower's replica as well.
	group := freshGroup("admin-compat-cg")
	col := newCollector()
	c := startPush(t, ns, group, "admin-c1", topic, consumer.Clustering, col.handler("c1"))
	defer c.Shutdown()
	// The client's Shutdown races with its own first rebalance (a data race
	// inside the client); consuming one message first lets that finish.
	p := startProducer(t, ns, "admin-compat-pg")
	if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("admin-1"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the consumer to receive a message", func() bool { return col.consumedAll(map[string]bool{"admin-1": true}) })
	for _, n := range tc.Raft.Up() {
		waitFor(t, ctx, "the consumer group listed by "+n.ID, func() bool {
			w, err := adm.GetAllSubscriptionGroup(ctx, tc.Peers[n.ID], 3*time.Second)
			if err != nil {
				return false
			}
			g, ok := w.SubscriptionGroupTable[group]
			return ok && g.ConsumeEnable && g.RetryMaxTimes == 16
		})
	}

	if err := adm.DeleteTopic(ctx, admin.WithTopicDelete(topic), admin.WithBrokerAddrDelete(addr),
		admin.WithNameSrvAddr(ns)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the topic gone from the name server's list", func() bool {
		list, err := adm.FetchAllTopicList(ctx)
		return err == nil && !slices.Contains(list.TopicList, topic)
	})
	if _, ok := leader.Group().Metadata().Topic(topic); ok {
		t.Fatal("topic still in the broker's metadata after DeleteTopic")
	}
}
