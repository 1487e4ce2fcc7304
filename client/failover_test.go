package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/message"
)

// ackLog records the sends of a load generator.
type ackLog struct {
	mu      sync.Mutex
	acks    []time.Time
	ids     map[string]bool // UNIQ_KEY of every acknowledged send
	failed  int
	unknown int
	retried int // acknowledged after more than one attempt
	maybe   int // acknowledged with MaybeDuplicated
	errs    []string
}

func (l *ackLog) record(res SendResult, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		if OutcomeOf(err) == OutcomeUnknown {
			l.unknown++
		} else {
			l.failed++
		}
		if len(l.errs) < 5 {
			l.errs = append(l.errs, err.Error())
		}
		return
	}
	l.acks = append(l.acks, time.Now())
	l.ids[res.MsgID] = true
	if res.Attempts > 1 {
		l.retried++
	}
	if res.MaybeDuplicated() {
		l.maybe++
	}
}

func (l *ackLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acks)
}

func (l *ackLog) countSince(t0 time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, a := range l.acks {
		if a.After(t0) {
			n++
		}
	}
	return n
}

// gapAround returns the longest gap between two consecutive acks after
// from (the last ack before from counts as the start), and the time from
// from to the first ack after it.
func (l *ackLog) gapAround(from time.Time) (longest, toFirst time.Duration) {
	l.mu.Lock()
	acks := slices.Clone(l.acks)
	l.mu.Unlock()
	slices.SortFunc(acks, func(a, b time.Time) int { return a.Compare(b) })
	prev := time.Time{}
	for _, a := range acks {
		if !a.After(from) {
			prev = a
			continue
		}
		if toFirst == 0 {
			toFirst = a.Sub(from)
		}
		if !prev.IsZero() && a.Sub(prev) > longest {
			longest = a.Sub(prev)
		}
		prev = a
	}
	return longest, toFirst
}

// TestLeaderKillFailover kills the leader of a 3-node group under a
// stream of synchronous sends and measures the longest gap between two
// acknowledged sends. It asserts only that sends resume after the kill
// and that every acknowledged message is readable afterwards; the figures
// are logged. LEDGERMQ_FAILOVER_KILLS=n kills n leaders in a row, each
// victim restarted before the next kill (off by default: a later kill can
// hang in dledger's Kill, see kill).
func TestLeaderKillFailover(t *testing.T) {
	kills := 1
	if v := os.Getenv("LEDGERMQ_FAILOVER_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("LEDGERMQ_FAILOVER_KILLS=%q", v)
		}
		kills = n
	}
	tc := startCluster(t, nil)
	rc := testClient(t)
	const topic = "FailoverTopic"
	createTopic(t, tc, rc, topic, 4)
	p := newProducer(t, WithNameServers(tc.NamesrvAddr()), WithGroup("failover-pg"))

	log := &ackLog{ids: map[string]bool{}}
	ctx, stop := context.WithCancel(ctxGuard(t))
	var wg sync.WaitGroup
	const senders = 4
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				res, err := p.Send(ctx, &Message{Topic: topic, Body: []byte(fmt.Sprintf("s%d-%d", g, i))})
				if ctx.Err() != nil && err != nil {
					return // stopped mid-send: neither acknowledged nor a failure
				}
				log.record(res, err)
			}
		}()
	}
	defer func() {
		stop()
		wg.Wait()
	}()

	waitFor(t, "sends before the first kill", func() bool { return log.count() >= 200 })
	for round := 1; round <= kills; round++ {
		leader, err := tc.Raft.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		kill(t, tc, leader.ID)
		waitFor(t, "a new leader on the name server", func() bool {
			r, ok := tc.Namesrv.Table().Route(topic)
			if !ok || len(r.BrokerDatas) == 0 {
				return false
			}
			addr, ok := r.BrokerDatas[0].BrokerAddrs[0]
			return ok && addr != tc.Peers[leader.ID]
		})
		listed := time.Since(killed)
		waitFor(t, fmt.Sprintf("sends after kill %d", round), func() bool { return log.countSince(killed) >= 200 })
		longest, toFirst := log.gapAround(killed)
		t.Logf("kill %d (leader %s): new leader on the name server after %v (±5 ms), first ack after %v, longest gap between acks %v",
			round, leader.ID, listed.Round(time.Millisecond), toFirst.Round(time.Millisecond), longest.Round(time.Millisecond))
		if round == kills {
			break
		}
		tc.Restart(leader.ID)
		waitFor(t, "the restarted node back in the route", func() bool {
			r, ok := tc.Namesrv.Table().Route(topic)
			return ok && len(r.BrokerDatas) == 1 && len(r.BrokerDatas[0].BrokerAddrs) == 3
		})
	}
	stop()
	wg.Wait()

	log.mu.Lock()
	acked, failed, unknown, retried, maybe, errs := len(log.ids), log.failed, log.unknown, log.retried, log.maybe, log.errs
	ids := log.ids
	log.mu.Unlock()
	t.Logf("%d acknowledged (%d after retries, %d maybe duplicated), %d failed, %d unknown; first errors: %q",
		acked, retried, maybe, failed, unknown, errs)

	addr, err := tc.LeaderAddr(ctxGuard(t))
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string][]*message.Ext
	waitFor(t, "every acknowledged message readable", func() bool {
		stored = byUniqKey(readTopic(t, tc, rc, addr, topic))
		for id := range ids {
			if len(stored[id]) == 0 {
				return false
			}
		}
		return true
	})
	dups := 0
	for _, ms := range stored {
		if len(ms) > 1 {
			dups++
		}
	}
	t.Logf("%d distinct messages stored, %d stored more than once", len(stored), dups)
}

// kill kills node id, failing the test after killTimeout rather than
// hanging it. Killing a leader under load sometimes never returns (about
// one run in fifteen here): dledger's Kill waits for its proposer, which
// waits on a raft apply future that hashicorp/raft never answers when it
// shuts down with the entry's commit batch still queued for the FSM
// (hashicorp/raft#498). That is dledger's bug to fix; this test reports it.
func kill(t *testing.T, tc *brokertest.Cluster, id string) {
	t.Helper()
	const killTimeout = 10 * time.Second
	done := make(chan struct{})
	go func() {
		defer close(done)
		tc.Kill(id)
	}()
	select {
	case <-done:
	case <-time.After(killTimeout):
		t.Fatalf("killing node %s did not return within %v: dledger's Kill is stuck waiting for a raft apply future (hashicorp/raft#498)", id, killTimeout)
	}
}

// TestUnknownOutcomeOnRealBroker: a real leader stores a message whose
// answer is lost (the client's connection swallows it); the send reports
// an unknown outcome, and the message is there.
func TestUnknownOutcomeOnRealBroker(t *testing.T) {
	tc := startCluster(t, nil)
	rc := testClient(t)
	const topic = "UnknownTopic"
	createTopic(t, tc, rc, topic, 2)
	ctx := ctxGuard(t)
	leader, err := tc.LeaderAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := newFaultDialer()
	d.nextConn(leader, muteReads)
	p := newProducer(t, WithNameServers(tc.NamesrvAddr()), WithDial(d.dial), WithSendTimeout(500*time.Millisecond))
	_, err = p.Send(ctx, &Message{Topic: topic, Body: []byte("lost answer"), Properties: map[string]string{message.PropertyUniqKey: "LOST-ANSWER-1"}})
	if !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("send: %v", err)
	}
	waitFor(t, "the message stored anyway", func() bool {
		return len(byUniqKey(readTopic(t, tc, rc, leader, topic))["LOST-ANSWER-1"]) == 1
	})
}
