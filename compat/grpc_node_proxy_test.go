package compat

import (
	"context"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/grpcapi/grpcapitest"
)

// TestRealNodeClientThroughProxy: the official RocketMQ 5 Node.js client,
// given only the address of a proxy in cluster mode (ledgermq proxy) in
// front of a three-node group, sends a normal, a FIFO, a delayed and a
// committed transactional message, each stored in the group as sent
// (producer.js), and consumes with a SimpleConsumer — receive, ack,
// changeInvisibleDuration and redelivery — through the proxy's relay to
// the group's leader (simple_consumer.js), the same checks as against a
// node's own gRPC port.
func TestRealNodeClientThroughProxy(t *testing.T) {
	nodeBin, dir := nodeClient(t)
	pc := grpcapitest.StartProxyCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin, err := client.NewAdmin(client.WithAdminNameServers(pc.TC.NamesrvAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const topic, consumeTopic, group = "NodeProxyTopic", "NodeProxyConsume", "NodeProxyGroup"
	for _, tp := range []string{topic, consumeTopic} {
		if _, err := admin.CreateTopic(ctx, client.TopicConfig{Topic: tp, ReadQueues: 4, WriteQueues: 4}, client.Target{}); err != nil {
			t.Fatal(err)
		}
	}
	endpoint := pc.Proxy.Addr().String()
	runNodeProducer(t, ctx, nodeBin, dir, endpoint, topic, admin)
	runNodeSimpleConsumer(t, ctx, nodeBin, dir, endpoint, consumeTopic, group)
}
