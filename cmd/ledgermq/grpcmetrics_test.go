package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/metadata"
)

// TestGRPCCallMetrics: the node's gRPC port, built as `ledgermq broker`
// builds it (nodeConfig.grpcServer with the node's metrics), counts each
// call by method, gRPC code and RocketMQ status code in the series its
// /metrics serves: a send (OK), a route of an unknown topic
// (TOPIC_NOT_FOUND) and a receive of the message (a stream: OK), each
// with its duration observed; the node's collector shows the received
// message in flight for its group, not yet due.
func TestGRPCCallMetrics(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g := tc.Raft.Node("n0").Group()
	// POP receives need the group at format version 4, raised by the
	// leader's tick after it is elected.
	waitFor(t, 20*time.Second, "the group at format version 4", func() bool { return g.FormatVersion() >= 4 })
	if err := g.ProposeMetadata(ctx, metadata.Op{Kind: metadata.OpPutTopic, Topic: &metadata.TopicConfig{TopicName: "GMetrics",
		ReadQueueNums: 1, WriteQueueNums: 1, Perm: metadata.PermRead | metadata.PermWrite}}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	labels := prometheus.Labels{"cluster": "DefaultCluster", "group": "broker-a", "node": "n0"}
	metrics := newBrokerMetrics(reg, labels)
	reg.MustRegister(newBrokerCollector(tc.Broker("n0"), labels))
	nc := &nodeConfig{BrokerName: "broker-a", NodeID: "n0", GRPCListen: "127.0.0.1:0", ClientAddr: tc.Peers["n0"], MaxMessageSize: 4 << 20}
	srv, err := nc.grpcServer(tc.Broker("n0"), hclog.NewNullLogger(), metrics)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	conn, err := grpc.NewClient(srv.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mq := v2pb.NewMessagingServiceClient(conn)

	sent, err := mq.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{{
		Topic: &v2pb.Resource{Name: "GMetrics"}, Body: []byte("m"),
		SystemProperties: &v2pb.SystemProperties{MessageId: "01AABBCCDDEEFF0000000001", MessageType: v2pb.MessageType_NORMAL,
			BodyEncoding: v2pb.Encoding_IDENTITY, BornTimestamp: timestamppb.Now()},
	}}})
	if err != nil || sent.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("send: %v %v", sent, err)
	}
	if r, err := mq.QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "NoSuchTopic"}}); err != nil || r.GetStatus().GetCode() != v2pb.Code_TOPIC_NOT_FOUND {
		t.Fatalf("route: %v %v", r, err)
	}
	rs, err := mq.ReceiveMessage(ctx, &v2pb.ReceiveMessageRequest{Group: &v2pb.Resource{Name: "cg_gm"},
		MessageQueue:     &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: "GMetrics"}},
		FilterExpression: &v2pb.FilterExpression{Type: v2pb.FilterType_TAG, Expression: "*"}, BatchSize: 1,
		InvisibleDuration: durationpb.New(time.Minute), LongPollingTimeout: durationpb.New(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	first, err := rs.Recv()
	if err != nil || first.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("receive: %v %v", first, err)
	}
	for err == nil {
		_, err = rs.Recv()
	}
	if err != io.EOF {
		t.Fatal(err)
	}

	web := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer web.Close()
	// The stream's observation follows its last answer: wait for it.
	want := []*regexp.Regexp{
		regexp.MustCompile(`ledgermq_grpc_calls_total\{cluster="DefaultCluster",code="OK",group="broker-a",grpc_code="OK",method="SendMessage",node="n0"\} 1\n`),
		regexp.MustCompile(`ledgermq_grpc_calls_total\{[^}]*code="TOPIC_NOT_FOUND",[^}]*method="QueryRoute"[^}]*\} 1\n`),
		regexp.MustCompile(`ledgermq_grpc_calls_total\{[^}]*code="OK",[^}]*grpc_code="OK",method="ReceiveMessage"[^}]*\} 1\n`),
		regexp.MustCompile(`ledgermq_grpc_call_seconds_count\{[^}]*method="SendMessage"[^}]*\} 1\n`),
		regexp.MustCompile(`ledgermq_grpc_call_seconds_count\{[^}]*method="ReceiveMessage"[^}]*\} 1\n`),
		regexp.MustCompile(`ledgermq_pop_inflight_messages\{[^}]*consumer_group="cg_gm",[^}]*topic="GMetrics"\} 1\n`),
		regexp.MustCompile(`ledgermq_pop_due_messages\{[^}]*consumer_group="cg_gm",[^}]*topic="GMetrics"\} 0\n`),
		regexp.MustCompile(`ledgermq_pop_oldest_invisible_until_seconds\{[^}]*consumer_group="cg_gm",[^}]*topic="GMetrics"\} \d`),
		regexp.MustCompile(`ledgermq_held_pulls\{[^}]*\} 0\n`),
	}
	var body string
	waitFor(t, 20*time.Second, "the calls in /metrics", func() bool {
		resp, err := http.Get(web.URL)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		for _, re := range want {
			if !re.MatchString(body) {
				return false
			}
		}
		return true
	})
	promtoolCheck(t, "n0", body)
}
