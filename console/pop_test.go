//go:build unix

package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ledgermq/ledgermq/grpcapi/grpcapitest"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
)

// consolePopGroup is the consumer group TestConsoleDevCluster holds a POP
// message in flight for (the pending page's POP state).
const consolePopGroup = "ConsolePop"

// holdPop receives one message of topic for group by POP, as a RocketMQ 5
// SimpleConsumer does, over the first node's gRPC port (a follower relays
// to the leader), and never acknowledges it: invisible for ten minutes,
// it stays in flight, not due, while the test runs.
func (c *devCluster) holdPop(t *testing.T, topic, group string) {
	t.Helper()
	var endpoint string
	for _, n := range c.p.File.Nodes {
		if n.GRPC != "" {
			endpoint = n.GRPC
			break
		}
	}
	if endpoint == "" {
		t.Fatal("cluster.json names no gRPC port")
	}
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mq := v2pb.NewMessagingServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitUntil(t, 30*time.Second, "a POP receive of "+topic, func() error {
		rs, err := mq.ReceiveMessage(ctx, grpcapitest.ReceiveRequest(group, topic, 1, 10*time.Minute, time.Second))
		if err != nil {
			return err
		}
		got := 0
		var code v2pb.Code
		for {
			r, err := rs.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			if st := r.GetStatus(); st != nil {
				code = st.GetCode()
			}
			if r.GetMessage() != nil {
				got++
			}
		}
		if got == 0 {
			return fmt.Errorf("received nothing (%v)", code)
		}
		return nil
	})
}
