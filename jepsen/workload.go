//go:build unix

package jepsen

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/protocol"
)

// Workload names.
const (
	Topic         = "JepsenTopic"
	ConsumerGroup = "jepsen-consumers"
	producerGroup = "jepsen-producers"
)

// WorkloadConfig sizes the at-least-once queue workload.
type WorkloadConfig struct {
	Producers int           // concurrent producers (default 4)
	Consumers int           // members of the consumer group (default 2)
	Interval  time.Duration // at most one send per producer per Interval (default 20 ms)
	// SendTimeout bounds each send, retries included (default 2 s).
	SendTimeout time.Duration
	// Txn transactional producers (workload_txn.go) and Register
	// consumer-offset register clients (workload_register.go) and Pop
	// POP consumers (workload_pop.go) run beside the queue workload; 0:
	// none. Seed drives the register clients' picks.
	Txn, Register, Pop int
	Seed               int64
	// NewSender makes the Sender of queue producer id (p0, p1, …) in
	// cluster c, closed when the producer stops; nil: our client (a
	// client.Producer with SendTimeout and 2 retries).
	NewSender func(c *Cluster, id string) (Sender, error)
}

func (w *WorkloadConfig) fill() {
	if w.Producers <= 0 {
		w.Producers = 4
	}
	if w.Consumers <= 0 {
		w.Consumers = 2
	}
	if w.Interval <= 0 {
		w.Interval = 20 * time.Millisecond
	}
	if w.SendTimeout <= 0 {
		w.SendTimeout = 2 * time.Second
	}
}

// workload is the producers and the consumer group of a run, recording
// into one history.
//
// Goroutines: one per producer, owned here and ended by stopProducers;
// the consumers own theirs and Close ends them.
type workload struct {
	cfg    WorkloadConfig
	c      *Cluster
	h      *History
	cancel context.CancelFunc
	wg     sync.WaitGroup
	cons   []*client.PushConsumer
	// txnProducers stay open after the load until stopConsumers, to
	// answer check-backs.
	txnProducers []*client.TransactionProducer
	// pop is the POP consumers (nil without them).
	pop     *popWorkload
	counts  counters
	recvMu  sync.Mutex
	recvSet map[string]bool // values delivered at least once
}

type counters struct {
	ok, failed, unknown, recv atomic.Int64
}

func newWorkload(cfg WorkloadConfig, c *Cluster, h *History) *workload {
	cfg.fill()
	return &workload{cfg: cfg, c: c, h: h, recvSet: map[string]bool{}}
}

// queues is the topic's queue count.
const queues = 8

// createTopic creates the topic on every group before the load, with
// queues queues each (through the proxies, as any admin would), and
// waits until the name server routes it to every group.
func (w *workload) createTopic(ctx context.Context) error {
	a, err := client.NewAdmin(w.c.AdminOptions()...)
	if err != nil {
		return err
	}
	defer a.Close()
	// Created, and routed by the name server (the consumers need the
	// route to start).
	var last error
	for range 40 {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		last = nil
		for _, g := range w.c.Groups {
			if _, err := a.CreateTopic(cctx, client.TopicConfig{Topic: Topic, ReadQueues: queues, WriteQueues: queues}, client.Target{BrokerName: g}); err != nil {
				last = err
				break
			}
		}
		if last == nil {
			var route *protocol.TopicRouteData
			if route, last = a.TopicRoute(cctx, Topic); last == nil {
				last = routesEvery(route, w.c.Groups)
			}
		}
		cancel()
		if last == nil || ctx.Err() != nil {
			break
		}
		sleepUntil(ctx, time.Now().Add(500*time.Millisecond))
	}
	if last != nil {
		return fmt.Errorf("jepsen: create topic %s: %w", Topic, last)
	}
	return nil
}

// routesEvery checks that route has queues of every group of groups.
func routesEvery(route *protocol.TopicRouteData, groups []string) error {
	for _, g := range groups {
		if !slices.ContainsFunc(route.QueueDatas, func(q protocol.QueueData) bool { return q.BrokerName == g }) {
			return fmt.Errorf("jepsen: the route of %s has no queues of %s yet", Topic, g)
		}
	}
	return nil
}

// startConsumers starts the consumer group (before the producers, from
// the first offset, so it sees everything).
func (w *workload) startConsumers() error {
	for i := range w.cfg.Consumers {
		name := fmt.Sprintf("c%d", i)
		pc, err := client.NewPushConsumer(w.c.ClientOptions(client.WithGroup(ConsumerGroup),
			client.WithInstanceName(name), client.WithConsumeFromWhere(client.ConsumeFromFirstOffset),
			client.WithLongPollTimeout(2*time.Second), client.WithCommitInterval(time.Second),
			client.WithRebalanceInterval(5*time.Second))...)
		if err != nil {
			return err
		}
		err = pc.Subscribe(Topic, client.Selector{Expression: "*"}, func(_ context.Context, m *client.MessageExt) client.ConsumeResult {
			w.received(name, m)
			return client.ConsumeSuccess
		})
		if err == nil {
			err = pc.Start()
		}
		if err != nil {
			_ = pc.Close()
			return err
		}
		w.cons = append(w.cons, pc)
	}
	return nil
}

func (w *workload) received(name string, m *client.MessageExt) {
	v := string(m.Body)
	seq, _ := parseValue(v)
	e := Event{Type: EvRecv, Process: name, Value: v, Seq: seq, Queue: m.Queue.QueueID, Offset: m.QueueOffset,
		MsgID: m.MsgID, Redeliv: m.ReconsumeTimes}
	if w.c.Multi() {
		e.Group = m.Queue.BrokerName
	}
	w.h.Add(e)
	w.counts.recv.Add(1)
	w.recvMu.Lock()
	w.recvSet[v] = true
	w.recvMu.Unlock()
}

// delivered reports whether every value in vals has been delivered.
func (w *workload) delivered(vals []string) (missing int) {
	w.recvMu.Lock()
	defer w.recvMu.Unlock()
	for _, v := range vals {
		if !w.recvSet[v] {
			missing++
		}
	}
	return missing
}

// startProducers starts the producers; they run until stopProducers.
func (w *workload) startProducers() error {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	for i := range w.cfg.Producers {
		id := fmt.Sprintf("p%d", i)
		var s Sender
		var err error
		if w.cfg.NewSender != nil {
			s, err = w.cfg.NewSender(w.c, id)
		} else {
			s, err = newOurSender(w)
		}
		if err != nil {
			cancel()
			return fmt.Errorf("jepsen: producer %s: %w", id, err)
		}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			defer s.Close()
			w.produce(ctx, id, s)
		}()
	}
	w.startRegister(ctx, w.cfg.Register, w.cfg.Seed)
	return w.startTxnProducers(ctx, w.cfg.Txn)
}

// produce sends p<id>-1, p<id>-2, … one at a time. In a one-group run
// every one has the producer's id as its sharding key (so one producer's
// messages share a queue and their order there is checkable); with two
// or more groups none has, so that the client spreads them over every
// group's queues by the name server's route and sends around a group
// that is down (order is still checked within each queue).
func (w *workload) produce(ctx context.Context, id string, s Sender) {
	key := id
	if w.c.Multi() {
		key = ""
	}
	paced(ctx, w.cfg.Interval, id, func(seq int64, v string) {
		m := &client.Message{Topic: Topic, Body: []byte(v), Keys: []string{v}, ShardingKey: key}
		e := Event{Type: EvSend, Process: id, Value: v, Seq: seq, Invoke: w.h.Now(), Queue: -1, Offset: -1}
		// The sender's own timeout bounds the send; one in flight when the
		// load stops is waited for, so its outcome is recorded.
		s.Send(m, &e)
		switch e.Outcome {
		case OK:
			w.counts.ok.Add(1)
		case Unknown:
			w.counts.unknown.Add(1)
		default:
			w.counts.failed.Add(1)
		}
		w.h.Add(e)
	})
}

// paced calls one(seq, "<id>-<seq>") for seq 1, 2, … at most once per
// every, each after the one before has returned, until ctx ends.
func paced(ctx context.Context, every time.Duration, id string, one func(seq int64, v string)) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for seq := int64(1); ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		one(seq, id+"-"+strconv.FormatInt(seq, 10))
	}
}

// noteOutcome records a send's outcome in e: for an acknowledged one its
// queue, id, node and attempts; for any other its error and attempts.
func (w *workload) noteOutcome(e *Event, res client.SendResult, err error) {
	switch client.OutcomeOf(err) {
	case client.OutcomeOK:
		e.Outcome = OK
		e.Queue, e.MsgID = res.Queue.QueueID, res.MsgID
		e.Node = w.c.NodeByAdvertised(res.Addr)
		if w.c.Multi() {
			e.Group = res.Queue.BrokerName
		}
		e.Attempts, e.MaybeDup = res.Attempts, res.MaybeDuplicated()
	case client.OutcomeUnknown:
		e.Outcome = Unknown
	default:
		e.Outcome = Failed
	}
	if err != nil {
		e.Error = shorten(err.Error())
		var se *client.SendError
		if errors.As(err, &se) {
			e.Attempts = len(se.Attempts)
		}
	}
}

// stopProducers stops new sends and waits for those in flight.
func (w *workload) stopProducers() {
	if w.cancel != nil {
		w.cancel()
	}
	w.wg.Wait()
}

// stopConsumers closes the consumer group.
func (w *workload) stopConsumers() {
	for _, c := range w.cons {
		_ = c.Close()
	}
	w.cons = nil
	for _, tp := range w.txnProducers {
		_ = tp.Close()
	}
	w.txnProducers = nil
	w.pop.stop()
	w.pop = nil
}

// parseValue reads a payload p<producer>-<seq>.
func parseValue(v string) (int64, string) {
	i := strings.LastIndexByte(v, '-')
	if i < 0 {
		return 0, ""
	}
	n, err := strconv.ParseInt(v[i+1:], 10, 64)
	if err != nil {
		return 0, ""
	}
	return n, v[:i]
}

func shorten(s string) string {
	const max = 300
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// finalRead reads every queue of the topic from every node separately
// (at the node's own address) and records each record as a read event.
func finalRead(ctx context.Context, c *Cluster, h *History) error {
	var errs []error
	for _, nd := range c.Nodes {
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		ms, err := devcluster.ReadTopic(rctx, c.status, nd.Addr, Topic, "jepsen-final-read")
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("final read of %s: %w", nd.ID, err))
		}
		for _, m := range ms {
			v := string(m.Body)
			seq, _ := parseValue(v)
			h.Add(Event{Type: EvRead, Node: nd.ID, Value: v, Seq: seq, Queue: m.QueueID, Offset: m.QueueOffset, MsgID: m.MsgID(), Group: c.eventGroup(nd.ID)})
		}
	}
	return errors.Join(errs...)
}
