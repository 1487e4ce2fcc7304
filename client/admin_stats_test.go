package client

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// TestAdminStatsAndReads drives the methods behind mqadmin's
// producerConnection, statsAll, brokerConsumeStats, cloneGroupOffset,
// consumeMessage and queryMsgTraceById against one node.
func TestAdminStatsAndReads(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	ns := tc.NamesrvAddr()
	ctx := ctxGuard(t)
	a := newAdmin(t, ns)
	if _, err := a.CreateTopic(ctx, TopicConfig{Topic: "StatsT", ReadQueues: 2, WriteQueues: 2, Perm: 6}, Target{}); err != nil {
		t.Fatal(err)
	}
	waitLeaderRoute(t, tc, "StatsT")
	p := newProducer(t, WithNameServers(ns), WithGroup("StatsPG"))
	var sent []SendResult
	for i := 0; i < 6; i++ {
		tag := []string{"TagA", "TagB"}[i%2]
		res, err := p.Send(ctx, &Message{Topic: "StatsT", Body: []byte(fmt.Sprint("m", i)), Tag: tag})
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, res)
	}

	// A producer of StatsPG heartbeats (a transactional one would).
	leader, err := tc.LeaderAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	hb, _ := (&protocol.HeartbeatData{ClientID: "127.0.0.1@stats-test", ProducerDataSet: []protocol.ProducerData{{GroupName: "StatsPG"}}}).Encode()
	if resp, err := rc.Invoke(ctx, leader, remoting.NewRequest(remoting.HeartBeat, nil, hb)); err != nil || resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %v %+v", err, resp)
	}
	var pcs []ProducerClient
	waitFor(t, "the producer group online", func() bool {
		var err error
		pcs, err = a.ProducerConnections(ctx, "StatsPG", "StatsT")
		return err == nil && len(pcs) == 1
	})
	if pcs[0].ClientID != "127.0.0.1@stats-test" || len(pcs[0].Brokers) != 1 {
		t.Fatalf("producer clients %+v", pcs)
	}
	if _, err := a.ProducerConnections(ctx, "NoSuchPG", ""); !errors.Is(err, ErrNoSuchGroup) {
		t.Fatalf("unknown producer group: %v", err)
	}

	// A group consumes queue 0 to its end and commits.
	var q0 int64
	for _, r := range sent {
		if r.Queue.QueueID == 0 {
			q0 = max(q0, r.QueueOffset+1)
		}
	}
	if _, err := a.CreateGroup(ctx, DefaultGroupConfig("StatsCG"), Target{}); err != nil {
		t.Fatal(err)
	}
	c, err := NewPullConsumer(WithNameServers(ns), WithGroup("StatsCG"), WithConsumeFromWhere(ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Assign([]Queue{{Topic: "StatsT", BrokerName: sent[0].Queue.BrokerName, QueueID: 0}})
	for got := 0; int64(got) < q0; {
		msgs, err := c.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got += len(msgs)
	}
	if err := c.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var all []TopicStats
	waitFor(t, "the commit in statsAll", func() bool {
		all, err = a.StatsAll(ctx, "")
		return err == nil && len(all) > 0 && statsOf(all, "StatsT").Groups != nil && len(statsOf(all, "StatsT").Groups) == 1 &&
			statsOf(all, "StatsT").Groups[0].Consumed == q0
	})
	st := statsOf(all, "StatsT")
	if st.Written != 6 || st.Stored != 6 || st.Groups[0].Group != "StatsCG" || st.Groups[0].Lag != 6-q0 {
		t.Fatalf("stats %+v", st)
	}
	for _, ts := range all {
		if strings.HasPrefix(ts.Topic, protocol.RetryTopicPrefix) {
			t.Fatalf("a retry topic in statsAll: %+v", ts)
		}
	}
	bcs, err := a.BrokerConsumeStats(ctx, leader)
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, r := range bcs {
		if r.Group == "StatsCG" && r.Topic == "StatsT" {
			rows++
			if r.QueueID == 0 && (r.ConsumerOffset != q0 || r.Lag != 0) {
				t.Fatalf("queue 0 in broker consume stats (GET_BROKER_CONSUME_STATS): %+v, want consumed to %d", r, q0)
			}
		}
	}
	if rows != 2 {
		t.Fatalf("broker consume stats %+v", bcs)
	}

	// Clone the group's offsets to a new one.
	clones, err := a.CloneGroupOffset(ctx, "StatsCG", "StatsCG2", "StatsT")
	if err != nil || len(clones) != 1 || clones[0].QueueID != 0 || clones[0].Offset != q0 {
		t.Fatalf("clone %+v %v", clones, err)
	}
	waitFor(t, "the cloned offsets", func() bool {
		p, err := a.ConsumerProgress(ctx, "StatsCG2", "StatsT")
		return err == nil && p.TotalLag == 6-q0
	})
	if _, err := a.CloneGroupOffset(ctx, "NoSuchCG", "X", "StatsT"); !errors.Is(err, ErrNoSuchGroup) {
		t.Fatalf("clone of a group without offsets: %v", err)
	}

	// Reads by queue, offset and tag.
	msgs, err := a.ReadMessages(ctx, ReadRequest{Topic: "StatsT", Queues: []int32{0}, Offset: 1})
	if err != nil || int64(len(msgs)) != q0-1 || msgs[0].QueueOffset != 1 || msgs[0].QueueID != 0 {
		t.Fatalf("queue 0 from offset 1: %d %v", len(msgs), err)
	}
	msgs, err = a.ReadMessages(ctx, ReadRequest{Topic: "StatsT", Tags: []string{"TagB"}, Max: 2})
	if err != nil || len(msgs) != 2 || msgs[0].Tags() != "TagB" || msgs[1].Tags() != "TagB" {
		t.Fatalf("TagB, 2: %v %v", msgs, err)
	}

	// A trace as RocketMQ's clients write it.
	id := sent[0].MsgID
	if _, err := a.MessageTrace(ctx, "", id); !errors.Is(err, ErrNoSuchTopic) {
		t.Fatalf("no trace topic: %v", err)
	}
	body := traceRecord("Pub", "1700000000000", "DefaultRegion", "StatsPG", "StatsT", id, "TagA", "", "127.0.0.1:10911", "2", "4", "0", sent[0].OffsetMsgID, "true", "127.0.0.1")
	if _, err := p.Send(ctx, &Message{Topic: DefaultTraceTopic, Body: []byte(body), Keys: []string{id}}); err != nil {
		t.Fatal(err)
	}
	var evs []TraceEvent
	waitFor(t, "the trace indexed", func() bool {
		evs, err = a.MessageTrace(ctx, "", id)
		return err == nil
	})
	if len(evs) != 1 || evs[0].Type != "Pub" || evs[0].Group != "StatsPG" || evs[0].CostMs != 4 || evs[0].ClientHost != "127.0.0.1" {
		t.Fatalf("trace %+v", evs)
	}
}

// statsOf is topic's line of StatsAll's answer.
func statsOf(all []TopicStats, topic string) TopicStats {
	for _, ts := range all {
		if ts.Topic == topic {
			return ts
		}
	}
	return TopicStats{}
}
