package compat

import (
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
)

// TestRealNodeClientOrphanedTransaction: a transaction the official
// RocketMQ 5 Node.js client's producer left open (it sent the half message
// and shut down) is recovered over the telemetry stream of another
// producer of the topic: the broker's check-back sends it a
// RecoverOrphanedTransactionCommand with the message as sent, the
// client's transaction checker commits it (EndTransaction from
// SOURCE_SERVER_CHECK), and a consumer then receives the message, once
// (compat/nodejs/orphan.js, in its own process).
func TestRealNodeClientOrphanedTransaction(t *testing.T) {
	nodeBin, dir := nodeClient(t)
	const topic, group = "NodeOrphanTopic", "NodeOrphanGroup"
	_, srv, _, ctx := startGRPCNodeWith(t, topic, func(_ int, c *broker.Config) {
		c.TransactionTimeout = time.Second
		c.TransactionCheckInterval = 500 * time.Millisecond
	})
	var got struct {
		Sent    string `json:"sent"`
		Checked []struct {
			ID, Body, Topic string
		} `json:"checked"`
		Received *struct {
			ID, Body string
		} `json:"received"`
	}
	runNodeScript(t, ctx, nodeBin, dir, &got, nil, "orphan.js", srv.Addr().String(), topic, group)
	if len(got.Checked) == 0 {
		t.Fatal("the checker was never asked")
	}
	for _, c := range got.Checked {
		if c.ID != got.Sent || c.Body != "orphan body" || c.Topic != topic {
			t.Fatalf("checker asked about %+v, want the half message %s of %s", c, got.Sent, topic)
		}
	}
	if got.Received == nil || got.Received.ID != got.Sent || got.Received.Body != "orphan body" {
		t.Fatalf("received %+v, want the committed message %s", got.Received, got.Sent)
	}
}
