package client

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
)

// TestClientTraces: our producer and push consumer with WithTrace write
// the Pub, SubBefore and SubAfter events RocketMQ's clients write, and the
// admin API reads each message's path back from the trace topic.
func TestClientTraces(t *testing.T) {
	tc := startCluster(t, func(_ int, c *broker.Config) { c.TraceTopic = DefaultTraceTopic })
	rc := testClient(t)
	const topic = "TracedT"
	createTopic(t, tc, rc, topic, 2)
	ns := tc.NamesrvAddr()
	a, err := NewAdmin(WithAdminNameServers(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitFor(t, "the trace topic", func() bool {
		_, err := a.TopicRoute(ctx, DefaultTraceTopic)
		return err == nil
	})

	p := newProducer(t, WithNameServers(ns), WithGroup("traced-pg"), WithTrace(""))
	var ids []string
	for i := 0; i < 4; i++ {
		r, err := p.Send(ctx, &Message{Topic: topic, Tag: "TagT", Keys: []string{fmt.Sprintf("tk%d", i)}, Body: []byte("traced")})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.MsgID)
	}
	startPush(t, topic, Selector{}, func(context.Context, *MessageExt) ConsumeResult { return ConsumeSuccess },
		fastPush(ns, "traced-cg", WithInstanceName("traced-c"), WithTrace(""))...)

	for _, id := range ids {
		waitFor(t, "the trace of "+id, func() bool {
			evs, err := a.MessageTrace(ctx, "", id)
			if err != nil {
				if !errors.Is(err, ErrNoSuchMessage) {
					t.Fatalf("trace of %s: %v", id, err)
				}
				return false
			}
			seen := map[string]bool{}
			for _, e := range evs {
				switch {
				case e.Type == "Pub" && e.Group == "traced-pg" && e.Topic == topic && e.Status == "success" && e.Tags == "TagT" && e.StoreHost != "":
					seen["Pub"] = true
				case e.Type == "SubBefore" && e.Group == "traced-cg":
					seen["SubBefore"] = true
				case e.Type == "SubAfter" && e.Group == "traced-cg" && e.Status == "success":
					seen["SubAfter"] = true
				}
			}
			return len(seen) == 3
		})
	}
}
