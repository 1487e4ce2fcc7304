package broker

import (
	"sync"

	"github.com/ledgermq/ledgermq/message"
)

// TxnCheck is a half message whose producer group is asked how its
// transaction ended: Msg is the message as its producer sent it (its real
// topic and queue, the store's time and host), QueueOffset and
// CommitLogOffset where its half copy is stored in the half topic, and
// OffsetMsgID that copy's offset message id. The answer is an
// END_TRANSACTION naming them, from the check.
type TxnCheck struct {
	Msg             *message.Ext
	QueueOffset     int64
	CommitLogOffset int64
	OffsetMsgID     string
}

// TxnAsker asks one producer about a half message, without waiting for
// the answer; false when it cannot (its client is gone, or does not
// publish to the message's topic).
type TxnAsker func(TxnCheck) bool

// txnAskers are the producers that front ends other than the remoting port
// serve (a RocketMQ 5 client's telemetry stream), by producer group.
type txnAskers struct {
	mu     sync.Mutex
	next   int
	byName map[string]map[int]TxnAsker
}

// AddTxnAsker adds a producer of group served by another front end: the
// transaction check-back asks it about the group's half messages as it
// asks the group's remoting producers. remove takes it out again.
func (b *Broker) AddTxnAsker(group string, ask TxnAsker) (remove func()) {
	a := &b.txnAskers
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byName == nil {
		a.byName = map[string]map[int]TxnAsker{}
	}
	if a.byName[group] == nil {
		a.byName[group] = map[int]TxnAsker{}
	}
	id := a.next
	a.next++
	a.byName[group][id] = ask
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		delete(a.byName[group], id)
		if len(a.byName[group]) == 0 {
			delete(a.byName, group)
		}
	}
}

// of is the group's askers.
func (a *txnAskers) of(group string) []TxnAsker {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]TxnAsker, 0, len(a.byName[group]))
	for _, ask := range a.byName[group] {
		out = append(out, ask)
	}
	return out
}
