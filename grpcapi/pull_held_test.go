package grpcapi_test

import (
	"context"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/grpcapi"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/remoting"
)

// countingBroker is a node's broker that counts the pulls it is asked.
type countingBroker struct {
	*broker.Broker
	pulls atomic.Int64
}

func (c *countingBroker) ServeLocal(ctx context.Context, peer netip.AddrPort, req *remoting.Command) *remoting.Command {
	if req.Code == remoting.PullMessage {
		c.pulls.Add(1)
	}
	return c.Broker.ServeLocal(ctx, peer, req)
}

func (c *countingBroker) ServeLocalWait(ctx context.Context, peer netip.AddrPort, req *remoting.Command) *remoting.Command {
	if req.Code == remoting.PullMessage {
		c.pulls.Add(1)
	}
	return c.Broker.ServeLocalWait(ctx, peer, req)
}

// TestPullHeldOnNodePort: a long poll on a node's own gRPC port is one
// pull the broker holds (one pull asked, one held while nothing comes),
// answered by the next message sent to its queue; a call that ends while
// its pull is held releases the hold, and nothing of it is left running.
func TestPullHeldOnNodePort(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	b := &countingBroker{Broker: tc.Broker("n0")}
	srv, err := grpcapi.New(grpcapi.Config{Addr: "127.0.0.1:0", BrokerName: "broker-a", NodeID: "n0", Broker: b})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	e := newEnv(t, tc, srv, srv.Addr().String())
	const topic, group = "HeldPull", "cg_held"
	e.createTopic(t, topic, 1)
	q := queueOf("broker-a", topic, 0)

	type result struct {
		a   pulledAnswer
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := pullMsgs(testCtx(t), e.mq, pullReq(group, q, 0, 4, 20*time.Second))
		done <- result{a, err}
	}()
	waitFor(t, "the pull held by the broker", func() bool { return b.HeldPulls() == 1 })
	id := newID()
	e.send(t, msg(topic, id, "wakes the pull"))
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.a.code != v2pb.Code_OK || len(r.a.msgs) != 1 || r.a.msgs[0].GetSystemProperties().GetMessageId() != id || r.a.next != 1 {
		t.Fatalf("held pull: %v, %v, next %d", r.a.code, r.a.msgs, r.a.next)
	}
	if n := b.pulls.Load(); n != 1 {
		t.Fatalf("the long poll asked the broker %d pulls, want 1", n)
	}
	if n := b.HeldPulls(); n != 0 {
		t.Fatalf("%d pulls held after the answer", n)
	}

	// The client goes while its pull is held.
	leaks := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(testCtx(t))
	go func() {
		a, err := pullMsgs(ctx, e.mq, pullReq(group, q, 1, 4, 20*time.Second))
		done <- result{a, err}
	}()
	waitFor(t, "the second pull held by the broker", func() bool { return b.HeldPulls() == 1 })
	cancel()
	if r := <-done; r.err == nil {
		t.Fatalf("a cancelled pull answered %v", r.a)
	}
	waitFor(t, "the hold released", func() bool { return b.HeldPulls() == 0 })
	goleak.VerifyNone(t, leaks)
	if n := b.pulls.Load(); n != 2 {
		t.Fatalf("the two long polls asked the broker %d pulls, want 2", n)
	}
}
