package compat

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// balanceLog is the real client's logger in these tests: it drops every
// line (unless LEDGERMQ_CLIENT_LOG is set: then it prints them) and
// records each "MessageQueue do balance done", which a clustering
// consumer logs when a rebalance of one topic gave it new queues.
//
// Why: rocketmq-client-go's consumer Shutdown writes a flag of its client
// without synchronisation that the rebalance Start runs in the background
// reads; a test that shuts a consumer down before that rebalance is over
// trips the race detector inside the client. waitBalanced waits for the
// rebalance to be logged, which happens after its last read, under the
// mutex here.
type balanceLog struct {
	print bool // LEDGERMQ_CLIENT_LOG: print every line to stderr

	mu   sync.Mutex
	done map[string]bool // group/topic/clientID
}

var balances = &balanceLog{done: map[string]bool{}}

func installBalanceLog() {
	balances.print = os.Getenv("LEDGERMQ_CLIENT_LOG") != ""
	rlog.SetLogger(balances)
}

func (l *balanceLog) out(level, msg string, f map[string]interface{}) {
	if l.print {
		fmt.Fprintln(os.Stderr, "rocketmq-client-go", level, msg, f)
	}
}

func (l *balanceLog) Debug(msg string, f map[string]interface{}) { l.out("debug", msg, f) }

func (l *balanceLog) Info(msg string, f map[string]interface{}) {
	if msg == "MessageQueue do balance done" {
		key := str(f[rlog.LogKeyConsumerGroup]) + "/" + str(f[rlog.LogKeyTopic]) + "/" + str(f["clientID"])
		l.mu.Lock()
		l.done[key] = true
		l.mu.Unlock()
	}
	l.out("info", msg, f)
}

func (l *balanceLog) Warning(msg string, f map[string]interface{}) { l.out("warning", msg, f) }

func (l *balanceLog) Error(msg string, f map[string]interface{}) { l.out("error", msg, f) }

func (l *balanceLog) Fatal(msg string, f map[string]interface{}) { l.out("fatal", msg, f) }

func (l *balanceLog) Level(string) {}

func (l *balanceLog) OutputPath(string) error { return nil }

func str(v interface{}) string {
	s, _ := v.(string)
	return s
}

// balanced reports whether the consumer of instance in group has logged
// a rebalance of topic that gave it queues.
func (l *balanceLog) balanced(group, topic, instance string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	prefix := group + "/" + topic + "/"
	for k := range l.done {
		if strings.HasPrefix(k, prefix) && strings.HasSuffix(k, "@"+instance) {
			return true
		}
	}
	return false
}

// waitBalanced waits until the consumer of instance in group has finished
// a rebalance of each topic (see balanceLog).
func waitBalanced(t *testing.T, group, instance string, topics ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, topic := range topics {
		waitFor(t, ctx, instance+"'s first rebalance of "+topic, func() bool { return balances.balanced(group, topic, instance) })
	}
}

// startBalanced starts c, a clustering consumer of instance in group, and
// returns once it has logged its start-up rebalance of each topic, so a
// Shutdown later cannot race that rebalance (see balanceLog). A group's
// first member gets every queue, its %RETRY% queue too: pass that topic
// when it is routed (ensureRetryTopic).
func startBalanced(t *testing.T, c rocketmq.PushConsumer, group, instance string, topics ...string) {
	t.Helper()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waitBalanced(t, group, instance, topics...)
}

// groupMembers counts the live consumers the tests started in each group
// in this process (ours and the real client's): a member shut down with
// shutdownMembers no longer counts, so one started after every other left
// is the first again (it gets the retry queue, whose start-up rebalance
// startPush must then wait for too).
type groupMembers struct {
	mu sync.Mutex
	n  map[string]int
}

var members = &groupMembers{n: map[string]int{}}

// join counts a new member of group and reports whether it is the first.
func (g *groupMembers) join(group string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n[group]++
	return g.n[group] == 1
}

// leave counts n members of group gone.
func (g *groupMembers) leave(group string, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n[group] = max(0, g.n[group]-n)
}
