package grpcapi_test

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/grpcapi"
	"github.com/ledgermq/ledgermq/grpcapi/grpcapitest"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
)

// proxyEnv is a three-node broker group whose nodes serve gRPC (and
// publish it), and a proxy in cluster mode in front of it: env's client
// talks to the proxy.
type proxyEnv struct {
	*env
	nodes map[string]*grpcapi.Server
}

func startProxyEnv(t *testing.T) *proxyEnv {
	t.Helper()
	pc := grpcapitest.StartProxyCluster(t)
	conn, err := grpc.NewClient(pc.Proxy.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	admin, err := client.NewAdmin(client.WithAdminNameServers(pc.TC.NamesrvAddr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	return &proxyEnv{nodes: pc.Nodes, env: &env{tc: pc.TC, srv: pc.Proxy, mq: v2pb.NewMessagingServiceClient(conn), admin: admin, target: pc.Proxy.Addr().String()}}
}

// receiveOne receives through the proxy until the message id comes, and
// acknowledges it. A relay that fails while the route still names a
// leader that is gone answers INTERNAL_SERVER_ERROR, which clients retry.
func (e *env) receiveOne(t *testing.T, group, topic, id string) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for {
		code, ms := e.receive(t, group, topic, 4, 30*time.Second, time.Second)
		switch code {
		case v2pb.Code_OK, v2pb.Code_MESSAGE_NOT_FOUND, v2pb.Code_INTERNAL_SERVER_ERROR:
		default:
			t.Fatalf("receive through the proxy: %v", code)
		}
		for _, m := range ms {
			if r := e.ack(t, group, topic, m); r.GetStatus().GetCode() != v2pb.Code_OK {
				t.Fatalf("ack through the proxy: %v", r)
			}
			if m.GetSystemProperties().GetMessageId() == id {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %s was not received through the proxy", id)
		}
	}
}

// TestProxyClusterMode: a proxy in cluster mode routes every queue to
// itself, stores what a client sends in the group (through its leader),
// serves POP receives and acks by relaying to the leader's gRPC port, and
// keeps doing so after the leader is killed: a send waits for the name
// server to list the new leader and goes there.
func TestProxyClusterMode(t *testing.T) {
	e := startProxyEnv(t)
	const topic, group = "ProxyTopic", "cg_proxy"
	e.createTopic(t, topic, 4)

	var route *v2pb.QueryRouteResponse
	waitFor(t, "the topic's route through the proxy", func() bool {
		r, err := e.mq.QueryRoute(testCtx(t), &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: topic}})
		route = r
		return err == nil && r.GetStatus().GetCode() == v2pb.Code_OK
	})
	if len(route.GetMessageQueues()) != 4 {
		t.Fatalf("route: %v", route)
	}
	for _, q := range route.GetMessageQueues() {
		a := q.GetBroker().GetEndpoints().GetAddresses()
		if q.GetBroker().GetName() != "broker-a" || len(a) != 1 || fmt.Sprintf("%s:%d", a[0].GetHost(), a[0].GetPort()) != e.target {
			t.Fatalf("queue %v: want broker-a at the proxy %s", q, e.target)
		}
	}
	as, err := e.mq.QueryAssignment(testCtx(t), &v2pb.QueryAssignmentRequest{Topic: &v2pb.Resource{Name: topic}, Group: &v2pb.Resource{Name: group}})
	if err != nil || len(as.GetAssignments()) != 1 || as.GetAssignments()[0].GetMessageQueue().GetBroker().GetName() != "broker-a" {
		t.Fatalf("assignment: %v %v", as, err)
	}

	id := newID()
	e.send(t, msg(topic, id, "before"))
	if m, _ := e.pulled(t, topic, 4, id); m == nil || string(m.Body) != "before" {
		t.Fatalf("stored %v", m)
	}
	e.receiveOne(t, group, topic, id)

	leader, err := e.tc.Raft.Leader(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	grpcapitest.Stop(e.nodes[leader.ID])
	e.tc.Kill(leader.ID)

	id2 := newID()
	e.send(t, msg(topic, id2, "after"))
	e.receiveOne(t, group, topic, id2)
	now, err := e.tc.Raft.Leader(testCtx(t))
	if err != nil || now.ID == leader.ID {
		t.Fatalf("leader %v after killing %s: %v", now, leader.ID, err)
	}
}
