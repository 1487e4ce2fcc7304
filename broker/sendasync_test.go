package broker_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/dledger/dledgertest"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/remoting"
	"github.com/ledgermq/ledgermq/store"
)

// heldProposals holds every asynchronous proposal until released.
type heldProposals struct {
	broker.Replica
	mu   sync.Mutex
	held []func()
	n    atomic.Int64
}

func (h *heldProposals) ProposeAsync(msgs []*message.Ext, done func([]store.PutResult, error)) {
	h.ProposeSendAsync(msgs, 0, done)
}

func (h *heldProposals) ProposeSendAsync(msgs []*message.Ext, window time.Duration, done func([]store.PutResult, error)) {
	h.mu.Lock()
	h.held = append(h.held, func() { h.Replica.ProposeSendAsync(msgs, window, done) })
	h.mu.Unlock()
	h.n.Add(1)
}

func (h *heldProposals) release() {
	h.mu.Lock()
	held := h.held
	h.held = nil
	h.mu.Unlock()
	for _, f := range held {
		f()
	}
}

// TestSendDoesNotHoldAWorker: on the leader a send is proposed and its
// worker goes back to the pool at once; the answer comes when the entry is
// applied. More sends than the send pool has workers (256) are all
// proposed while none is answered, then all are answered, each with its
// own queue offset.
func TestSendDoesNotHoldAWorker(t *testing.T) {
	const n = 400
	node := dledgertest.MakeNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader, err := node.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g := leader.Group()
	if err := g.ProposeMetadata(ctx, metadata.Op{Kind: metadata.OpPutTopic, Topic: &metadata.TopicConfig{TopicName: "Held",
		ReadQueueNums: 1, WriteQueueNums: 1, Perm: metadata.PermRead | metadata.PermWrite}}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := &heldProposals{Replica: broker.OverGroup(g)}
	b, err := broker.New(broker.Config{BrokerName: "broker-a", NodeID: leader.ID, Peers: map[string]string{leader.ID: ln.Addr().String()},
		Addr: ln.Addr().String(), Listener: ln}, held, broker.NewHooks())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	c := remoting.NewClient(remoting.ClientConfig{})
	defer c.Close()
	type answer struct {
		resp *remoting.Command
		err  error
	}
	answers := make(chan answer, n)
	for i := range n {
		go func() {
			resp, err := c.Invoke(ctx, ln.Addr().String(), broker.SendRequest("Held", 0, nil, fmt.Sprint("m", i)))
			answers <- answer{resp, err}
		}()
	}
	broker.WaitFor(t, fmt.Sprintf("%d sends proposed at once", n), func() bool { return held.n.Load() == n })
	held.release()
	offsets := map[string]bool{}
	for range n {
		a := <-answers
		if a.err != nil || a.resp.Code != remoting.Success {
			t.Fatalf("send: %v %+v", a.err, a.resp)
		}
		off := a.resp.ExtMap()["queueOffset"]
		if offsets[off] {
			t.Fatalf("queue offset %s answered twice", off)
		}
		offsets[off] = true
	}
}
