//go:build unix

package jepsen

import (
	"context"
	"fmt"
	"sync"

	"github.com/ledgermq/ledgermq/client"
)

// The transactions workload: transactional producers t0…, each sending
// t<i>-<seq> one at a time to Topic through our client's
// TransactionProducer (a half message, the local transaction, its
// outcome), received by the same consumer group as the queue workload.
// The local transaction's outcome is a function of the payload
// (txnDecision): commit, rollback, or unknown — then the broker's
// check-back gets the decision the payload names. A transaction whose
// local transaction never ran (the half send failed or its outcome is
// unknown) is answered rollback on check-back: the application's records
// say it never happened. The listener's records are shared by every
// producer of the group, since any of them may be asked.
//
// With two or more broker groups the client spreads the transactions over
// every group's queues; each is ended on the group that stored its half
// message (the client sends END_TRANSACTION to that group's leader, and
// retries a half message whose outcome was unknown on the same queue, so
// no other group holds a copy), and checked back by that group.

const txnProducerGroup = "jepsen-txn-producers"

// txnDecision is the local transaction's outcome a payload names, and
// the decision a check-back answers (txnFinalCommit).
func txnDecision(seq int64) (local, final client.LocalTransactionState) {
	final = client.TransactionRollback
	if txnFinalCommit(seq) {
		final = client.TransactionCommit
	}
	switch seq % 5 {
	case 0, 1:
		return client.TransactionCommit, final
	case 2:
		return client.TransactionRollback, final
	default:
		return client.TransactionUnknown, final
	}
}

// txnListener is the application side: the local transactions that ran;
// the check-backs it answers go to the history.
type txnListener struct {
	h     *History
	multi bool // two or more broker groups: check-backs name theirs
	mu    sync.Mutex
	ran   map[string]bool // values whose local transaction ran
}

func (l *txnListener) ExecuteLocalTransaction(_ context.Context, m *client.Message) client.LocalTransactionState {
	v := string(m.Body)
	seq, _ := parseValue(v)
	local, _ := txnDecision(seq)
	l.mu.Lock()
	l.ran[v] = true
	l.mu.Unlock()
	return local
}

func (l *txnListener) CheckLocalTransaction(_ context.Context, m *client.MessageExt) client.LocalTransactionState {
	v := string(m.Body)
	seq, _ := parseValue(v)
	_, final := txnDecision(seq)
	l.mu.Lock()
	ran := l.ran[v]
	l.mu.Unlock()
	if !ran {
		final = client.TransactionRollback
	}
	e := Event{Type: EvTxnCheck, Process: "txn-listener", Value: v, Seq: seq, Outcome: final.String(), Queue: -1, Offset: -1}
	if l.multi {
		e.Group = m.Queue.BrokerName // the group that asked
	}
	l.h.Add(e)
	return final
}

// startTxnProducers starts n transactional producers under ctx (they
// stop with the queue producers).
func (w *workload) startTxnProducers(ctx context.Context, n int) error {
	if n <= 0 {
		return nil
	}
	l := &txnListener{h: w.h, multi: w.c.Multi(), ran: map[string]bool{}}
	for i := range n {
		tp, err := client.NewTransactionProducer(l, w.c.ClientOptions(client.WithGroup(txnProducerGroup),
			client.WithSendTimeout(w.cfg.SendTimeout), client.WithRetries(2))...)
		if err != nil {
			return err
		}
		// Closed with the consumers, after the drain: until then the
		// producers answer the check-backs of undecided transactions.
		w.txnProducers = append(w.txnProducers, tp)
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.produceTxn(ctx, fmt.Sprintf("t%d", i), tp)
		}()
	}
	return nil
}

// produceTxn sends t<id>-1, t<id>-2, … in transactions, one at a time,
// at most one per 5 intervals.
func (w *workload) produceTxn(ctx context.Context, id string, tp *client.TransactionProducer) {
	paced(ctx, 5*w.cfg.Interval, id, func(seq int64, v string) {
		m := &client.Message{Topic: Topic, Body: []byte(v), Keys: []string{v}}
		invoke := w.h.Now()
		res, err := tp.SendInTransaction(context.Background(), m)
		e := Event{Type: EvTxn, Process: id, Value: v, Seq: seq, Invoke: invoke, Queue: -1, Offset: -1}
		w.noteOutcome(&e, res.SendResult, err)
		if e.Outcome == OK {
			e.Kind = res.State.String() // the local transaction's outcome
			if res.EndErr != nil {
				e.Error = shorten("end transaction: " + res.EndErr.Error())
			}
		}
		w.h.Add(e)
	})
}
