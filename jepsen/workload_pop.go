//go:build unix

package jepsen

import (
	"context"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the RocketMQ 5 clients' signature
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
	"github.com/ledgermq/ledgermq/remoting"
)

// The POP workload (--workload pop): consumers s0… of one consumer group
// (PopGroup) receive the topic the producers send to as RocketMQ 5's
// SimpleConsumer does, over the nodes' gRPC ports (every node serves one
// with ClusterConfig.GRPC, each reached through a client proxy of its
// own, so every fault of a node's client links reaches it, and a
// follower relays to the leader's port through a proxy of that link):
// ReceiveMessage of up to popBatch messages, each invisible for
// popInvisible, long-polling popLongPoll (while draining popDrainBatch,
// popDrainLongPoll); then, by a hash of the value,
// most are acknowledged (one AckMessage for the batch), about one in ten
// is left un-acknowledged (it must come back after its invisible time
// with attempt 2), one in ten has its invisible time cut to popShort and
// is left (back sooner), one in ten has it changed and is acknowledged
// with the new receipt handle. A redelivery (attempt 2 or more) is always
// acknowledged, and so is everything once the load ends (the drain). Each
// receive goes to the leader of a group (in turn over the groups) as the
// name server routes it, through the client proxies, as the register
// workload does; the route is refreshed every second and after any
// failure. Every receive (those that failed too), ack entry and change
// is a "pop" event of the history (check_pop.go judges them).
const (
	PopGroup     = "jepsen-pop"
	popBatch     = 8
	popInvisible = 3 * time.Second
	// While draining, receives take more at once and long-poll briefly: a
	// consumer goes over the groups in turn, so a group already drained
	// would otherwise hold it popLongPoll per round, and a group left far
	// behind by its faults (receives fail while it has no leader) could
	// not be caught up within the drain's bound.
	popDrainBatch    = 32
	popDrainLongPoll = 200 * time.Millisecond
	popShort         = time.Second
	popLongPoll      = 2 * time.Second
	// popCallTTL bounds a receive (its long poll and the answer);
	// popOpTTL an ack or a change.
	popCallTTL = popLongPoll + 2*time.Second
	popOpTTL   = 2 * time.Second
	// popRouteTTL is how long a group's leader is taken as routed.
	popRouteTTL = time.Second
)

// popAction is what a consumer does with a delivery.
type popAction int

const (
	popAckIt      popAction = iota
	popLeave                // not acknowledged: back after popInvisible
	popShorten              // invisible time cut to popShort, not acknowledged
	popChangeAck            // invisible time changed, then acknowledged with the new handle
	popActionSpan = 10      // the hash's range: one value in popActionSpan each
)

// popActionOf is what happens to value's delivery of attempt: the first
// is left, shortened or changed by the value's hash; redeliveries, and
// every delivery while draining, are acknowledged.
func popActionOf(value string, attempt int, draining bool) popAction {
	if attempt > 1 || draining {
		return popAckIt
	}
	h := fnv.New32a()
	h.Write([]byte(value))
	switch h.Sum32() % popActionSpan {
	case 0:
		return popLeave
	case 1:
		return popShorten
	case 2:
		return popChangeAck
	}
	return popAckIt
}

// popWorkload is the POP consumers of a run.
//
// Goroutines: one per consumer, owned here: stop ends them and waits.
type popWorkload struct {
	c        *Cluster
	h        *History
	interval time.Duration
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	draining atomic.Bool
	// delivered counts deliveries (the drain waits for them to stop).
	delivered atomic.Int64
	mu        sync.Mutex
	received  map[string]bool // values delivered at least once

	connMu sync.Mutex
	conns  map[string]*grpc.ClientConn // by address, closed by stop
}

// startPop starts n POP consumers (none when n is 0).
func (w *workload) startPop(n int) {
	if n <= 0 {
		return
	}
	p := &popWorkload{c: w.c, h: w.h, interval: w.cfg.Interval, received: map[string]bool{}, conns: map[string]*grpc.ClientConn{}}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	for i := range n {
		id := fmt.Sprintf("s%d", i)
		w.h.Add(Event{Type: EvPop, Kind: PopStart, Process: id, Queue: -1, Offset: -1})
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.consume(ctx, id, i)
		}()
	}
	w.pop = p
}

// drain makes the consumers acknowledge everything from now on.
func (p *popWorkload) drain() {
	if p != nil {
		p.draining.Store(true)
	}
}

// missing counts the values of vals never delivered to the POP group.
func (p *popWorkload) missing(vals []string) int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, v := range vals {
		if !p.received[v] {
			n++
		}
	}
	return n
}

// deliveries is the number of deliveries so far.
func (p *popWorkload) deliveries() int64 {
	if p == nil {
		return 0
	}
	return p.delivered.Load()
}

// stop ends the consumers, waits for them and closes the connections.
func (p *popWorkload) stop() {
	if p == nil {
		return
	}
	p.cancel()
	p.wg.Wait()
	p.connMu.Lock()
	defer p.connMu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = map[string]*grpc.ClientConn{}
}

// client is a client of the gRPC port at addr (a proxy), its connection
// shared by the consumers.
func (p *popWorkload) client(addr string) (v2pb.MessagingServiceClient, error) {
	p.connMu.Lock()
	defer p.connMu.Unlock()
	if c := p.conns[addr]; c != nil {
		return v2pb.NewMessagingServiceClient(c), nil
	}
	c, err := grpc.NewClient(addr, p.c.grpcDialOptions(addr)...)
	if err != nil {
		return nil, fmt.Errorf("jepsen: a gRPC client of %s: %w", addr, err)
	}
	p.conns[addr] = c
	return v2pb.NewMessagingServiceClient(c), nil
}

// popRoute is a group's leader as the name server last routed it.
type popRoute struct {
	node *Node
	at   time.Time
}

// consume is consumer id's loop: a receive at most every two intervals,
// each to the next group's leader, its deliveries handled before the
// next, until ctx ends.
func (p *popWorkload) consume(ctx context.Context, id string, first int) {
	rc := remoting.NewClient(p.c.Remoting(remoting.ClientConfig{DialTimeout: popOpTTL}))
	defer rc.Close()
	routes := map[string]popRoute{}
	tick := time.NewTicker(2 * p.interval)
	defer tick.Stop()
	for round := first; ; round++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		g := p.c.Groups[round%len(p.c.Groups)]
		rt := routes[g]
		if rt.node == nil || time.Since(rt.at) > popRouteTTL {
			rctx, cancel := context.WithTimeout(ctx, popOpTTL)
			addr, err := devcluster.Leader(rctx, rc, p.c.ClientNamesrv, g)
			cancel()
			if nd := p.c.node(p.c.NodeByAdvertised(addr)); err == nil && nd != nil {
				rt = popRoute{nd, time.Now()}
				routes[g] = rt
			}
			if rt.node == nil {
				continue
			}
		}
		if !p.round(ctx, id, g, rt.node) {
			delete(routes, g) // ask the name server again, as a client would after a failure
		}
	}
}

// round is one receive from node (group g's leader as routed) and what
// follows for each message; false when the receive failed.
func (p *popWorkload) round(ctx context.Context, id, g string, nd *Node) bool {
	mq, err := p.client(nd.GRPCAdvertised)
	if err != nil {
		p.h.Add(p.event(PopRecv, id, g, nd, Event{Outcome: Failed, Error: shorten(err.Error())}))
		return false
	}
	got, failure := p.receive(ctx, mq, id, g, nd)
	if failure != nil {
		p.h.Add(*failure)
	}
	var acks []Event
	for _, e := range got {
		switch popActionOf(e.Value, e.Attempts, p.draining.Load()) {
		case popLeave:
		case popShorten:
			p.change(mq, id, g, nd, e, popShort)
		case popChangeAck:
			if nh, ok := p.change(mq, id, g, nd, e, popInvisible); ok {
				e.Receipt = nh
				acks = append(acks, e)
			}
		default:
			acks = append(acks, e)
		}
	}
	if len(acks) > 0 {
		p.ack(mq, id, g, nd, acks)
	}
	return failure == nil
}

// event is a "pop" event of kind by consumer id at node of group g, on
// base's fields.
func (p *popWorkload) event(kind, id, g string, nd *Node, base Event) Event {
	base.Type, base.Kind, base.Process, base.Node = EvPop, kind, id, nd.ID
	if p.c.Multi() {
		base.Group = g
	}
	if base.Value == "" {
		base.Queue, base.Offset = -1, -1
	}
	return base
}

// receive is one ReceiveMessage: every message delivered (recorded as it
// arrives, even if the stream then fails), and the failure's event, if
// any (nil when the receive was answered, found messages or not).
func (p *popWorkload) receive(ctx context.Context, mq v2pb.MessagingServiceClient, id, g string, nd *Node) ([]Event, *Event) {
	invoke := p.h.Now()
	fail := func(outcome string, err error) *Event {
		e := p.event(PopRecv, id, g, nd, Event{Invoke: invoke, Outcome: outcome, Error: shorten(err.Error())})
		return &e
	}
	cctx, cancel := context.WithTimeout(ctx, popCallTTL)
	defer cancel()
	req := &v2pb.ReceiveMessageRequest{
		Group:              &v2pb.Resource{Name: PopGroup},
		MessageQueue:       &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: Topic}, Broker: &v2pb.Broker{Name: g}},
		FilterExpression:   &v2pb.FilterExpression{Type: v2pb.FilterType_TAG, Expression: "*"},
		BatchSize:          popBatch,
		InvisibleDuration:  durationpb.New(popInvisible),
		LongPollingTimeout: durationpb.New(popLongPoll),
		AutoRenew:          false,
	}
	if p.draining.Load() {
		req.BatchSize, req.LongPollingTimeout = popDrainBatch, durationpb.New(popDrainLongPoll)
	}
	rs, err := mq.ReceiveMessage(cctx, req)
	if err != nil {
		return nil, fail(Unknown, err)
	}
	var got []Event
	for {
		r, err := rs.Recv()
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if err != nil {
			// The messages not read come back after their invisible time.
			return got, fail(Unknown, err)
		}
		if st := r.GetStatus(); st != nil && st.GetCode() != v2pb.Code_OK && st.GetCode() != v2pb.Code_MESSAGE_NOT_FOUND {
			return got, fail(Failed, fmt.Errorf("receive: %s %s", st.GetCode(), st.GetMessage()))
		}
		m := r.GetMessage()
		if m == nil {
			continue
		}
		sp := m.GetSystemProperties()
		v := string(m.GetBody())
		seq, _ := parseValue(v)
		e := p.event(PopRecv, id, g, nd, Event{Invoke: invoke, Outcome: OK, Value: v, Seq: seq, Queue: sp.GetQueueId(),
			Offset: sp.GetQueueOffset(), MsgID: sp.GetMessageId(), Attempts: int(sp.GetDeliveryAttempt()), Receipt: sp.GetReceiptHandle()})
		p.h.Add(e)
		p.delivered.Add(1)
		p.mu.Lock()
		p.received[v] = true
		p.mu.Unlock()
		got = append(got, e)
	}
}

// ack acknowledges the deliveries of ds in one AckMessage and records each
// entry's outcome: ok, failed (the handle was refused: acknowledged
// before, or delivered again since), unknown (no answer, or another
// error).
func (p *popWorkload) ack(mq v2pb.MessagingServiceClient, id, g string, nd *Node, ds []Event) {
	req := &v2pb.AckMessageRequest{Group: &v2pb.Resource{Name: PopGroup}, Topic: &v2pb.Resource{Name: Topic}}
	for _, d := range ds {
		req.Entries = append(req.Entries, &v2pb.AckMessageEntry{MessageId: d.MsgID, ReceiptHandle: d.Receipt})
	}
	invoke := p.h.Now()
	ctx, cancel := context.WithTimeout(context.Background(), popOpTTL)
	resp, err := mq.AckMessage(ctx, req)
	cancel()
	at := p.h.Now()
	for i, d := range ds {
		e := p.event(PopAck, id, g, nd, Event{Invoke: invoke, T: at, Value: d.Value, Seq: d.Seq, Queue: d.Queue, Offset: d.Offset,
			MsgID: d.MsgID, Attempts: d.Attempts, Receipt: d.Receipt})
		var st *v2pb.Status
		if err == nil && i < len(resp.GetEntries()) {
			st = resp.GetEntries()[i].GetStatus()
		}
		switch {
		case err != nil:
			e.Outcome, e.Error = Unknown, shorten(err.Error())
		case st == nil:
			e.Outcome, e.Error = Unknown, shorten(fmt.Sprintf("no entry answered: %s %s", resp.GetStatus().GetCode(), resp.GetStatus().GetMessage()))
		case st.GetCode() == v2pb.Code_OK:
			e.Outcome = OK
		case st.GetCode() == v2pb.Code_INVALID_RECEIPT_HANDLE:
			e.Outcome, e.Error = Failed, shorten(st.GetCode().String()+" "+st.GetMessage())
		default:
			e.Outcome, e.Error = Unknown, shorten(st.GetCode().String()+" "+st.GetMessage())
		}
		p.h.Add(e)
	}
}

// change sets d's invisible time to dur from now and records it; it
// answers the new receipt handle when the change was answered OK.
func (p *popWorkload) change(mq v2pb.MessagingServiceClient, id, g string, nd *Node, d Event, dur time.Duration) (string, bool) {
	e := p.event(PopChange, id, g, nd, Event{Invoke: p.h.Now(), Value: d.Value, Seq: d.Seq, Queue: d.Queue, Offset: d.Offset,
		MsgID: d.MsgID, Attempts: d.Attempts, Receipt: d.Receipt})
	ctx, cancel := context.WithTimeout(context.Background(), popOpTTL)
	resp, err := mq.ChangeInvisibleDuration(ctx, &v2pb.ChangeInvisibleDurationRequest{
		Group: &v2pb.Resource{Name: PopGroup}, Topic: &v2pb.Resource{Name: Topic},
		ReceiptHandle: d.Receipt, InvisibleDuration: durationpb.New(dur), MessageId: d.MsgID,
	})
	cancel()
	st := resp.GetStatus()
	switch {
	case err != nil:
		e.Outcome, e.Error = Unknown, shorten(err.Error())
	case st.GetCode() == v2pb.Code_OK:
		e.Outcome, e.Detail = OK, fmt.Sprintf("invisible %v; receipt %s", dur, resp.GetReceiptHandle())
	case st.GetCode() == v2pb.Code_INVALID_RECEIPT_HANDLE:
		e.Outcome, e.Error = Failed, shorten(st.GetCode().String()+" "+st.GetMessage())
	default:
		e.Outcome, e.Error = Unknown, shorten(st.GetCode().String()+" "+st.GetMessage())
	}
	p.h.Add(e)
	return resp.GetReceiptHandle(), e.Outcome == OK
}

// grpcDialOptions are the options of a gRPC client of addr: the run's TLS,
// the application account's signature, and reconnection within a second
// of a node's restart.
func (c *Cluster) grpcDialOptions(addr string) []grpc.DialOption {
	creds := insecure.NewCredentials()
	if c.sec.clientTLS != nil {
		creds = credentials.NewTLS(tlsconf.ForAddr(c.sec.clientTLS, addr))
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds), grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, MaxDelay: time.Second},
		MinConnectTimeout: popOpTTL,
	})}
	if c.sec.ACL {
		opts = append(opts, grpc.WithPerRPCCredentials(grpcSigner{c.sec.app.AccessKey, c.sec.app.SecretKey}))
	}
	return opts
}

// grpcSigner signs every call as the RocketMQ 5 clients do (grpcapi/auth.go
// checks it): x-mq-date-time, and authorization with the hex HMAC-SHA1 of
// it keyed with the secret key.
type grpcSigner struct{ accessKey, secretKey string }

func (s grpcSigner) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	dt := time.Now().UTC().Format("20060102T150405Z")
	mac := hmac.New(sha1.New, []byte(s.secretKey))
	mac.Write([]byte(dt))
	return map[string]string{
		"x-mq-date-time": dt,
		"authorization":  fmt.Sprintf("MQv2-HMAC-SHA1 Credential=%s, SignedHeaders=x-mq-date-time, Signature=%X", s.accessKey, mac.Sum(nil)),
	}, nil
}

func (grpcSigner) RequireTransportSecurity() bool { return false }
