//go:build unix

package compat

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/jepsen"
)

// TestJepsenRealClientSender is a jepsen run (kills, pauses and
// partitions of a 3-node group) whose queue producers are
// rocketmq-client-go's, checked for exactly-once: no acknowledged send
// lost, no value stored twice in the group, though the real client
// retries on its own. A chaos run of minutes, for make chaos: only with
// LEDGERMQ_JEPSEN_RCGO=1; LEDGERMQ_JEPSEN_TIME (default 2m),
// LEDGERMQ_JEPSEN_SEED (default 1) and LEDGERMQ_JEPSEN_DIR (default a
// temporary directory) set the run, LEDGERMQ_NODE_CONF adds to every
// node's config as for `ledgermq jepsen run`. The progress lines, the
// summary and the verdict line go to stdout.
func TestJepsenRealClientSender(t *testing.T) {
	if os.Getenv("LEDGERMQ_JEPSEN_RCGO") != "1" {
		t.Skip("a chaos run of minutes (make chaos): set LEDGERMQ_JEPSEN_RCGO=1")
	}
	total := 2 * time.Minute
	if v := os.Getenv("LEDGERMQ_JEPSEN_TIME"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("LEDGERMQ_JEPSEN_TIME: %v", err)
		}
		total = d
	}
	seed := int64(1)
	if v := os.Getenv("LEDGERMQ_JEPSEN_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("LEDGERMQ_JEPSEN_SEED: %v", err)
		}
		seed = n
	}
	dir := os.Getenv("LEDGERMQ_JEPSEN_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	nemeses, err := jepsen.ParseNemeses("kill,pause,partition")
	if err != nil {
		t.Fatal(err)
	}
	res, err := jepsen.Run(context.Background(), jepsen.RunConfig{
		Bin: devcluster.Build(t), Dir: dir, Plan: jepsen.GeneratePlan(seed, 3, total, nemeses),
		NodeConf: strings.Fields(os.Getenv("LEDGERMQ_NODE_CONF")), ExactlyOnce: true, Out: os.Stdout,
		Workload: jepsen.WorkloadConfig{Seed: seed, NewSender: newRcgoSender},
	})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(res.VerdictLine())
	t.Logf("rocketmq-client-go sent: acked=%d unknown=%d lost=%d exactly-once-duplicates=%d (run directory %s)",
		res.Acked, res.Unknown, res.Lost, res.GroupDuplicates, dir)
	if !res.Valid() {
		t.Fatalf("verdict FAIL: %s", strings.Join(res.Problems, "; "))
	}
}

// Timeouts of rcgoSender: each attempt on the wire (the client's send
// timeout), and one SendSync, its retries included (3 attempts and a
// route look-up).
const (
	rcgoAttemptTimeout = 2 * time.Second
	rcgoSendBound      = 10 * time.Second
)

// rcgoSender is a jepsen.Sender of rocketmq-client-go: a producer of a
// group of its own, 2 retries, the hash queue selector (a message with a
// sharding key goes to the queue its key hashes to, so one jepsen
// producer's messages share a queue).
//
// The real client retries within SendSync with the message's UNIQ_KEY
// unchanged (the broker's duplicate window covers them) and does not say
// how many attempts ran: an acknowledged send has Attempts 0 (not known)
// and MaybeDup true, so the checker never calls a copy of one
// "unjustified"; the exactly-once checker counts every value stored twice
// in the group regardless. Any error is an Unknown outcome: the client
// does not tell a send that never left from one whose answer was lost.
type rcgoSender struct {
	c *jepsen.Cluster
	p rocketmq.Producer
	// addr is where the last send's last attempt went (noteAddr).
	addr string
}

func newRcgoSender(c *jepsen.Cluster, id string) (jepsen.Sender, error) {
	s := &rcgoSender{c: c}
	name := "jepsen-rcgo-" + id
	p, err := rocketmq.NewProducer(producer.WithNameServer([]string{c.ClientNamesrv}),
		producer.WithGroupName(name), producer.WithInstanceName(name),
		producer.WithRetry(2), producer.WithSendMsgTimeout(rcgoAttemptTimeout),
		producer.WithQueueSelector(producer.NewHashQueueSelector()), producer.WithInterceptor(s.noteAddr))
	if err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		return nil, err
	}
	s.p = p
	return s, nil
}

// noteAddr is an interceptor keeping the broker address the send's last
// attempt went to: the one that answered when the send succeeds.
func (s *rcgoSender) noteAddr(ctx context.Context, req, reply interface{}, next primitive.Invoker) error {
	err := next(ctx, req, reply)
	if pc, ok := primitive.GetProducerCtx(ctx); ok {
		s.addr = pc.BrokerAddr
	}
	return err
}

func (s *rcgoSender) Send(m *client.Message, e *jepsen.Event) {
	msg := primitive.NewMessage(m.Topic, m.Body)
	msg.WithKeys(m.Keys)
	if m.ShardingKey != "" {
		msg.WithShardingKey(m.ShardingKey)
	}
	ctx, cancel := context.WithTimeout(context.Background(), rcgoSendBound)
	defer cancel()
	s.addr = ""
	res, err := s.p.SendSync(ctx, msg)
	switch {
	case err != nil:
		e.Outcome, e.Error = jepsen.Unknown, jepsen.ShortError(err)
	case res.Status != primitive.SendOK:
		// Stored, durability or replication not confirmed.
		e.Outcome, e.Error = jepsen.Unknown, fmt.Sprintf("send status %d", res.Status)
	default:
		e.Outcome = jepsen.OK
		e.Queue, e.Offset, e.MsgID = int32(res.MessageQueue.QueueId), res.QueueOffset, res.MsgID
		e.Node = s.c.NodeByAdvertised(s.addr)
		if s.c.Multi() {
			e.Group = res.MessageQueue.BrokerName
		}
		e.Attempts, e.MaybeDup = 0, true
	}
}

func (s *rcgoSender) Close() { _ = s.p.Shutdown() }
