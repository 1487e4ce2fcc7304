package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// mustCLI runs the command line and fails the test on an error.
func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// jsonCLI runs the command line with --output json and decodes its output.
func jsonCLI(t *testing.T, v any, args ...string) {
	t.Helper()
	out := mustCLI(t, append(args, "--output", "json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// heartbeat registers a consumer client of group on topic at addr, as a
// push consumer's HEART_BEAT does.
func heartbeat(t *testing.T, rc *remoting.Client, addr, group, topic string) {
	t.Helper()
	body := fmt.Sprintf(`{"clientID":"127.0.0.1@admin-test","producerDataSet":[],"consumerDataSet":[{"groupName":%q,`+
		`"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",`+
		`"subscriptionDataSet":[{"topic":%q,"subString":"TagA || TagB","subVersion":1,"expressionType":"TAG"}],"unitMode":false}]}`, group, topic)
	resp, err := rc.Invoke(context.Background(), addr, remoting.NewRequest(remoting.HeartBeat, nil, []byte(body)))
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %v %+v", err, resp)
	}
}

// TestAdminCLI runs every admin verb against an in-process 3-node group,
// grouped names and mqadmin aliases, tables and JSON, and the error cases.
func TestAdminCLI(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	ns := tc.NamesrvAddr()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Topics.
	if out := mustCLI(t, "admin", "updateTopic", "-n", ns, "-t", "AdminT", "-r", "2", "-w", "2"); !strings.Contains(out, "topic AdminT created or updated on broker-a") {
		t.Fatalf("updateTopic: %s", out)
	}
	var tl struct{ Topics []string }
	jsonCLI(t, &tl, "admin", "topic", "list", "-n", ns)
	if !strings.Contains(strings.Join(tl.Topics, ","), "AdminT") {
		t.Fatalf("topic list %v", tl.Topics)
	}
	if out := mustCLI(t, "admin", "topicList", "-n", ns); !regexp.MustCompile(`(?m)^AdminT\s*$`).MatchString(out) {
		t.Fatalf("topicList:\n%s", out)
	}
	var route struct {
		BrokerDatas []struct {
			BrokerName  string
			BrokerAddrs map[string]string
		}
		QueueDatas []struct{ ReadQueueNums, WriteQueueNums int32 }
	}
	jsonCLI(t, &route, "admin", "topicRoute", "-n", ns, "-t", "AdminT")
	if len(route.QueueDatas) != 1 || route.QueueDatas[0].WriteQueueNums != 2 || route.BrokerDatas[0].BrokerAddrs["0"] == "" {
		t.Fatalf("route %+v", route)
	}

	// Messages, sent by the client's producer.
	p, err := client.NewProducer(client.WithNameServers(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var sent []client.SendResult
	for i := 0; i < 6; i++ {
		res, err := p.Send(ctx, &client.Message{Topic: "AdminT", Body: []byte(fmt.Sprintf("body-%d", i)), Tag: "TagA", Keys: []string{fmt.Sprintf("key-%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, res)
	}
	var st struct {
		Queues []client.QueueStatus
	}
	jsonCLI(t, &st, "admin", "topic", "status", "-n", ns, "-t", "AdminT")
	var total int64
	for _, q := range st.Queues {
		total += q.MaxOffset - q.MinOffset
		if q.MaxOffset > 0 && q.LastUpdate.IsZero() {
			t.Fatalf("queue without last update: %+v", q)
		}
	}
	if len(st.Queues) != 2 || total != 6 {
		t.Fatalf("topic status %+v", st)
	}
	if out := mustCLI(t, "admin", "topicStatus", "-n", ns, "-t", "AdminT"); !regexp.MustCompile(`(?m)^BROKER\s+QID\s+MIN\s+MAX\s+LAST UPDATE`).MatchString(out) {
		t.Fatalf("topicStatus table:\n%s", out)
	}

	type msgs struct{ Messages []msgView }
	var m msgs
	jsonCLI(t, &m, "admin", "queryMsgById", "-n", ns, "-i", sent[0].OffsetMsgID)
	if len(m.Messages) != 1 || m.Messages[0].Body != "body-0" || m.Messages[0].MsgID != sent[0].MsgID {
		t.Fatalf("by offset msgId: %+v", m)
	}
	jsonCLI(t, &m, "admin", "msg", "id", "-n", ns, "-t", "AdminT", "-i", sent[1].MsgID)
	if len(m.Messages) != 1 || m.Messages[0].Body != "body-1" {
		t.Fatalf("by UNIQ_KEY: %+v", m)
	}
	jsonCLI(t, &m, "admin", "queryMsgByKey", "-n", ns, "-t", "AdminT", "-k", "key-2")
	if len(m.Messages) != 1 || m.Messages[0].Body != "body-2" {
		t.Fatalf("by key: %+v", m)
	}
	q3 := sent[3].Queue
	jsonCLI(t, &m, "admin", "queryMsgByOffset", "-n", ns, "-t", "AdminT", "-b", q3.BrokerName, "-i", strconv.Itoa(int(q3.QueueID)),
		"--offset", strconv.FormatInt(sent[3].QueueOffset, 10))
	if len(m.Messages) != 1 || m.Messages[0].Body != "body-3" {
		t.Fatalf("by queue offset: %+v", m)
	}
	jsonCLI(t, &m, "admin", "msg", "time", "-n", ns, "-t", "AdminT", "-b", "0")
	if len(m.Messages) != 6 {
		t.Fatalf("by time: %d messages", len(m.Messages))
	}
	if out := mustCLI(t, "admin", "msg", "key", "-n", ns, "-t", "AdminT", "-k", "key-4"); !strings.Contains(out, "body-4") || !strings.Contains(out, "OFFSET MSGID") {
		t.Fatalf("msg key table:\n%s", out)
	}

	// Groups, progress, connections, offset reset.
	mustCLI(t, "admin", "updateSubGroup", "-n", ns, "-g", "AdminG", "-r", "3")
	var gl struct{ Groups []client.BrokerGroupConfig }
	jsonCLI(t, &gl, "admin", "group", "list", "-n", ns)
	found := false
	for _, g := range gl.Groups {
		found = found || g.GroupName == "AdminG" && g.RetryMaxTimes == 3
	}
	if !found {
		t.Fatalf("group list %+v", gl)
	}
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	leader, err := tc.LeaderAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	heartbeat(t, rc, leader, "AdminG", "AdminT")
	for qid := 0; qid < 2; qid++ {
		req := remoting.NewRequest(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": "AdminG", "topic": "AdminT",
			"queueId": strconv.Itoa(qid), "commitOffset": "1"}, nil)
		if _, err := rc.Invoke(ctx, leader, req); err != nil {
			t.Fatal(err)
		}
	}
	var prog client.Progress
	waitFor(t, 10*time.Second, "the commits to show in consumerProgress", func() bool {
		prog = client.Progress{}
		jsonCLI(t, &prog, "admin", "consumerProgress", "-n", ns, "-g", "AdminG", "-t", "AdminT")
		return len(prog.Queues) == 2 && prog.Queues[0].ConsumerOffset == 1 && prog.Queues[1].ConsumerOffset == 1
	})
	if prog.TotalLag != 4 {
		t.Fatalf("progress %+v", prog)
	}
	if out := mustCLI(t, "admin", "group", "progress", "-n", ns, "-g", "AdminG"); !strings.Contains(out, "total lag: 4") {
		t.Fatalf("progress table:\n%s", out)
	}
	var cc client.ConsumerConnections
	jsonCLI(t, &cc, "admin", "consumerConnection", "-n", ns, "-g", "AdminG")
	if len(cc.Clients) != 1 || cc.Clients[0].ClientID != "127.0.0.1@admin-test" || len(cc.Subscriptions) != 1 || len(cc.Subscriptions[0].TagsSet) != 2 {
		t.Fatalf("connections %+v", cc)
	}
	var reset struct {
		Executed bool
		Queues   []client.OffsetReset
	}
	jsonCLI(t, &reset, "admin", "resetOffsetByTime", "-n", ns, "-g", "AdminG", "-t", "AdminT", "-s", "0")
	if reset.Executed || len(reset.Queues) != 2 || reset.Queues[0].Old != 1 || reset.Queues[0].New != 0 {
		t.Fatalf("dry run %+v", reset)
	}
	jsonCLI(t, &prog, "admin", "consumerProgress", "-n", ns, "-g", "AdminG", "-t", "AdminT")
	if prog.TotalLag != 4 {
		t.Fatalf("the dry run moved offsets: %+v", prog)
	}
	if out := mustCLI(t, "admin", "offset", "reset", "-n", ns, "-g", "AdminG", "-t", "AdminT", "-s", "-1", "--execute"); !strings.Contains(out, "reset") {
		t.Fatalf("reset:\n%s", out)
	}
	jsonCLI(t, &prog, "admin", "consumerProgress", "-n", ns, "-g", "AdminG", "-t", "AdminT")
	if prog.TotalLag != 0 {
		t.Fatalf("after a reset to the end: %+v", prog)
	}

	// Cluster.
	var cl struct{ Nodes []client.MemberStatus }
	jsonCLI(t, &cl, "admin", "clusterList", "-n", ns)
	leaders := 0
	for _, n := range cl.Nodes {
		if n.Role == "leader" && n.BrokerID == 0 {
			leaders++
		}
		if n.Term == 0 || n.AppliedIndex == 0 || !n.Voter {
			t.Fatalf("node %+v", n)
		}
	}
	if len(cl.Nodes) != 3 || leaders != 1 {
		t.Fatalf("cluster list %+v", cl)
	}
	if out := mustCLI(t, "admin", "cluster", "list", "-n", ns); !regexp.MustCompile(`(?m)^DefaultCluster\s+broker-a\s+0\s+n\d\s+\S+\s+leader\s`).MatchString(out) {
		t.Fatalf("cluster list table:\n%s", out)
	}
	var bs map[string]map[string]string
	jsonCLI(t, &bs, "admin", "brokerStatus", "-n", ns, "-b", leader)
	if bs[leader]["brokerRole"] != "SYNC_MASTER" {
		t.Fatalf("brokerStatus %+v", bs)
	}

	// Deletes, then errors.
	mustCLI(t, "admin", "deleteSubGroup", "-n", ns, "-g", "AdminG")
	mustCLI(t, "admin", "deleteTopic", "-n", ns, "-t", "AdminT")
	for _, args := range [][]string{
		{"topicRoute", "-t", "AdminT"},
		{"topicStatus", "-t", "NoSuchTopic"},
		{"deleteTopic", "-t", "NoSuchTopic"},
		{"deleteSubGroup", "-g", "NoSuchGroup"},
		{"consumerProgress", "-g", "NoSuchGroup"},
		{"consumerConnection", "-g", "NoSuchGroup"},
		{"queryMsgByKey", "-t", "NoSuchTopic", "-k", "k"},
		{"queryMsgById", "-i", "nothex"},
		{"updateTopic", "-b", "127.0.0.1:1", "-t", "X"},
		{"updateTopic"}, // -t missing
		{"topic", "status", "-t", "AdminT", "-o", "yaml"}, // bad --output
		{"resetOffsetByTime", "-g", "g", "-t", "T", "-s", "yesterday"},
	} {
		if out, _, err := runCLI(t, append([]string{"admin", "-n", ns}, args...)...); err == nil {
			t.Errorf("%v succeeded:\n%s", args, out)
		}
	}
}

// TestAdminClusterHealth: healthy, then unhealthy while a follower is
// down (the exit error names it), then healthy again with --wait after it
// restarts.
func TestAdminClusterHealth(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	ns := tc.NamesrvAddr()
	mustCLI(t, "admin", "cluster", "health", "-n", ns, "--wait", "--timeout", "30s")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader, err := tc.Raft.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	victim := "n0"
	if leader.ID == victim {
		victim = "n1"
	}
	tc.Kill(victim)
	out, _, err := runCLI(t, "admin", "cluster", "health", "-n", ns)
	if err == nil || !strings.Contains(out, victim) || !strings.Contains(err.Error(), "unhealthy") {
		t.Fatalf("health with %s down: %v\n%s", victim, err, out)
	}
	var rep client.HealthReport
	if out, _, err := runCLI(t, "admin", "cluster", "health", "-n", ns, "-o", "json"); err == nil || json.Unmarshal([]byte(out), &rep) != nil || rep.Healthy || len(rep.Problems) == 0 {
		t.Fatalf("json health: %v %+v\n%s", err, rep, out)
	}
	tc.Restart(victim)
	if out := mustCLI(t, "admin", "cluster", "health", "-n", ns, "--wait", "--timeout", "30s"); !strings.HasPrefix(out, "healthy") {
		t.Fatalf("after restart:\n%s", out)
	}
}

// TestAdminBrokerDrain drains the leader with `ledgermq admin broker
// drain`: another node leads, raft status shows the node drained, a second
// node cannot be drained meanwhile, and undrain clears it.
func TestAdminBrokerDrain(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	ns := tc.NamesrvAddr()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader, err := tc.Raft.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Node, Leader string
		Drained      bool
	}
	jsonCLI(t, &res, "admin", "broker", "drain", leader.ID, "-n", ns)
	if res.Node != leader.ID || !res.Drained || res.Leader == leader.ID || res.Leader == "" {
		t.Fatalf("drain of the leader %s: %+v", leader.ID, res)
	}
	ac, err := client.NewAdmin(client.WithAdminNameServers(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	st, err := ac.RaftStatus(ctx, tc.Peers[leader.ID])
	if err != nil || !st.Drained || st.Role != "follower" {
		t.Fatalf("raft status of the drained node: %+v %v", st, err)
	}
	if out, _, err := runCLI(t, "admin", "broker", "drain", res.Leader, "-n", ns); err == nil || !strings.Contains(err.Error()+out, "drained already") {
		t.Fatalf("second drain: %v\n%s", err, out)
	}
	jsonCLI(t, &res, "admin", "broker", "undrain", leader.ID, "-n", ns)
	if res.Drained {
		t.Fatalf("undrain: %+v", res)
	}
	if st, err := ac.RaftStatus(ctx, tc.Peers[leader.ID]); err != nil || st.Drained {
		t.Fatalf("raft status after undrain: %+v %v", st, err)
	}
}

// pendingNode starts a one-node cluster and sends m to it; the context
// bounds the test.
func pendingNode(t *testing.T, m *client.Message) (*brokertest.Cluster, context.Context) {
	t.Helper()
	tc := brokertest.StartNode(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	p, err := client.NewProducer(client.WithNameServers(tc.NamesrvAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Send(ctx, m); err != nil {
		t.Fatal(err)
	}
	return tc, ctx
}

// TestAdminPendingTimers: a timer message an hour away is listed by
// `ledgermq admin pending timers` until it is due; nothing is pending in
// `pending transactions`.
func TestAdminPendingTimers(t *testing.T) {
	tc, _ := pendingNode(t, &client.Message{Topic: "PendingT", Body: []byte("later"),
		Properties: map[string]string{"TIMER_DELAY_SEC": "3600"}})
	ns := tc.NamesrvAddr()
	var timers protocol.PendingTimers
	waitFor(t, 20*time.Second, "the timer listed", func() bool {
		out, _, err := runCLI(t, "admin", "pending", "timers", "-n", ns, "-o", "json")
		return err == nil && json.Unmarshal([]byte(out), &timers) == nil && timers.Count == 1 && len(timers.Timers) == 1
	})
	if tm := timers.Timers[0]; tm.Topic != "PendingT" || time.Until(time.UnixMilli(tm.DueMs)) < 50*time.Minute {
		t.Fatalf("pending timer %+v", tm)
	}
	if out := mustCLI(t, "admin", "pending", "timers", "-n", ns); !strings.Contains(out, "1 pending timer messages") {
		t.Fatalf("table:\n%s", out)
	}
	var txns protocol.PendingTransactions
	jsonCLI(t, &txns, "admin", "pending", "transactions", "-n", ns)
	if txns.Count != 0 {
		t.Fatalf("pending transactions %+v", txns)
	}
}

// TestAdminPendingPop: a message POP-received and not acknowledged is
// listed by `ledgermq admin pending pop` as one in flight for its
// consumer group and topic; --topic keeps the rows of that topic only.
func TestAdminPendingPop(t *testing.T) {
	tc, ctx := pendingNode(t, &client.Message{Topic: "PendingP", Body: []byte("popped")})
	ns := tc.NamesrvAddr()
	n, err := tc.Raft.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := tc.Broker(n.ID)
	req := broker.PopRequest{Group: "cg_pendingp", Topic: "PendingP", Expression: "*", Max: 1, Invisible: time.Hour, Wait: 100 * time.Millisecond}
	waitFor(t, 20*time.Second, "the message POP-received", func() bool {
		got, err := b.PopMessages(ctx, req)
		return err == nil && len(got) == 1
	})
	var st protocol.PopState
	waitFor(t, 20*time.Second, "the message in flight listed", func() bool {
		out, _, err := runCLI(t, "admin", "pending", "pop", "-g", "cg_pendingp", "-n", ns, "-o", "json")
		return err == nil && json.Unmarshal([]byte(out), &st) == nil && st.Count == 1 && len(st.Rows) == 1
	})
	if r := st.Rows[0]; r.Group != "cg_pendingp" || r.Topic != "PendingP" || r.Inflight != 1 || r.Due != 0 ||
		time.Until(time.UnixMilli(r.OldestInvisibleUntil)) < 50*time.Minute {
		t.Fatalf("pop state %+v", r)
	}
	out := mustCLI(t, "admin", "pending", "pop", "-n", ns)
	if !strings.Contains(out, "1 consumer group and topic pairs") || !regexp.MustCompile(`cg_pendingp\s+PendingP\s+1\s+0\s`).MatchString(out) {
		t.Fatalf("table:\n%s", out)
	}
	jsonCLI(t, &st, "admin", "pending", "pop", "--topic", "Other", "-n", ns)
	if st.Count != 0 || len(st.Rows) != 0 {
		t.Fatalf("another topic: %+v", st)
	}
}
