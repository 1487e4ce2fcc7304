package compat

import (
	"slices"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/testwait"
)

// TestRealNodeClientFIFOGroup: the official RocketMQ 5 Node.js client's
// SimpleConsumer in a FIFO group (consumeMessageOrderly) receives the
// messages of one message group in the order they were sent, and none
// past those it holds until it acknowledges them
// (compat/nodejs/fifo_consumer.js, in its own process).
func TestRealNodeClientFIFOGroup(t *testing.T) {
	nodeBin, dir := nodeClient(t)
	const topic, group = "NodeFifoTopic", "NodeFifoGroup"
	tc, srv, admin, ctx := startGRPCNode(t, topic)
	g := tc.Raft.Nodes[0].Group()
	testwait.For(t, 20*time.Second, "the group at format version 5", func() bool { return g.FormatVersion() >= 5 })
	cfg := client.DefaultGroupConfig(group)
	cfg.ConsumeMessageOrderly = true
	if _, err := admin.CreateGroup(ctx, cfg, client.Target{}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Sent    []string `json:"sent"`
		First   []string `json:"first"`
		Between int      `json:"between"`
		Rest    []string `json:"rest"`
	}
	runNodeScript(t, ctx, nodeBin, dir, &got, nil, "fifo_consumer.js", srv.Addr().String(), topic, group)
	if len(got.Sent) != 6 || !slices.Equal(got.First, got.Sent[:2]) {
		t.Fatalf("first receive %v, want the first two sent of %v", got.First, got.Sent)
	}
	if got.Between != 0 {
		t.Fatalf("%d messages received while two were in flight", got.Between)
	}
	if !slices.Equal(got.Rest, got.Sent[2:]) {
		t.Fatalf("after the acks %v, want %v in order", got.Rest, got.Sent[2:])
	}
}
