package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// TestAdminMqadminCLI runs the mqadmin verbs that came with ledgermq's
// own reads and writes, with mqadmin's flags, against one node whose
// name server is only in NAMESRV_ADDR (no -n).
func TestAdminMqadminCLI(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	t.Setenv("NAMESRV_ADDR", tc.NamesrvAddr())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader, err := tc.LeaderAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// An ordered topic with mqadmin's -o true; which cluster serves it.
	mustCLI(t, "admin", "updateTopic", "-t", "MqT", "-r", "2", "-w", "2", "-o", "true")
	var clusters struct{ Clusters []string }
	jsonCLI(t, &clusters, "admin", "topicClusterList", "-t", "MqT")
	if len(clusters.Clusters) != 1 || clusters.Clusters[0] != "DefaultCluster" {
		t.Fatalf("topicClusterList %+v", clusters)
	}

	// sendMessage: to queue 1 (-b -i), to the group's first queue (-b).
	type sent struct {
		BrokerName  string
		QueueID     int32
		MsgID       string
		OffsetMsgID string
		QueueOffset int64
	}
	var first sent
	jsonCLI(t, &first, "admin", "sendMessage", "-t", "MqT", "-p", "hello", "-k", "k1 k2", "-c", "TagA", "-b", "broker-a", "-i", "1")
	if first.BrokerName != "broker-a" || first.QueueID != 1 || first.MsgID == "" {
		t.Fatalf("sendMessage -b -i: %+v", first)
	}
	for i := 0; i < 5; i++ {
		mustCLI(t, "admin", "msg", "send", "-t", "MqT", "-p", fmt.Sprint("body-", i), "-c", []string{"TagA", "TagB"}[i%2], "-b", "broker-a", "-i", "1")
	}
	if out := mustCLI(t, "admin", "sendMessage", "-t", "MqT", "-p", "x", "-b", "broker-a"); !regexp.MustCompile(`(?m)^broker-a\s+0\s+SEND_OK\s`).MatchString(out) {
		t.Fatalf("sendMessage table:\n%s", out)
	}
	if _, _, err := runCLI(t, "admin", "sendMessage", "-t", "MqT", "-p", "x", "-m", "true"); err == nil {
		t.Fatal("sendMessage -m true (a trace) succeeded")
	}

	// Reads of queue 1: by offset (-o), as a consumer (-o, -c), per tag.
	type msgs struct{ Messages []msgView }
	var m msgs
	jsonCLI(t, &m, "admin", "queryMsgByOffset", "-t", "MqT", "-b", "broker-a", "-i", "1", "-o", strconv.FormatInt(first.QueueOffset, 10))
	if len(m.Messages) != 1 || m.Messages[0].Body != "hello" || m.Messages[0].Keys != "k1 k2" {
		t.Fatalf("queryMsgByOffset -o: %+v", m)
	}
	jsonCLI(t, &m, "admin", "consumeMessage", "-t", "MqT", "-b", "broker-a", "-i", "1", "-o", strconv.FormatInt(first.QueueOffset+1, 10), "-c", "3")
	if len(m.Messages) != 3 || m.Messages[0].Body != "body-0" || m.Messages[2].Body != "body-2" {
		t.Fatalf("consumeMessage -o -c: %+v", m)
	}
	var perTag struct {
		Tags []tagCount
	}
	jsonCLI(t, &perTag, "admin", "printMsgByQueue", "-t", "MqT", "-a", "broker-a", "-i", "1", "-p", "false", "-f", "true")
	if len(perTag.Tags) != 2 || perTag.Tags[0] != (tagCount{"TagA", 4}) || perTag.Tags[1] != (tagCount{"TagB", 2}) {
		t.Fatalf("printMsgByQueue -f: %+v", perTag)
	}
	jsonCLI(t, &m, "admin", "printMsg", "-t", "MqT", "-s", "TagB")
	if len(m.Messages) != 2 || m.Messages[0].Tags != "TagB" {
		t.Fatalf("printMsg -s TagB: %+v", m)
	}
	if _, _, err := runCLI(t, "admin", "queryMsgById", "-i", first.OffsetMsgID, "-g", "G", "-d", "client"); err == nil {
		t.Fatal("queryMsgById -g -d (a resend to a consumer) succeeded")
	}

	// A group: created with mqadmin's valued booleans, read back.
	mustCLI(t, "admin", "updateSubGroup", "-g", "MqG", "-d", "false", "-r", "5", "-i", "0")
	var gc struct{ Groups []client.BrokerGroupConfig }
	jsonCLI(t, &gc, "admin", "getConsumerConfig", "-g", "MqG")
	if len(gc.Groups) != 1 || gc.Groups[0].ConsumeBroadcastEnable || gc.Groups[0].RetryMaxTimes != 5 || !gc.Groups[0].ConsumeEnable {
		t.Fatalf("getConsumerConfig %+v", gc)
	}
	// It commits offset 2 on queue 1 (6 messages; queue 0 has 1): a clone
	// gets it; statsAll, brokerConsumeStats and consumerProgress without -g
	// show it.
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	commit := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "MqG", Topic: "MqT", QueueID: 1, CommitOffset: 2}
	if resp, err := rc.Invoke(ctx, leader, commit.Request()); err != nil || resp.Code != remoting.Success {
		t.Fatalf("commit: %v %+v", err, resp)
	}
	var stats struct{ Topics []client.TopicStats }
	waitFor(t, 10*time.Second, "the commit in statsAll", func() bool {
		jsonCLI(t, &stats, "admin", "statsAll", "-t", "MqT")
		return len(stats.Topics) == 1 && len(stats.Topics[0].Groups) == 1 && stats.Topics[0].Groups[0].Consumed == 2
	})
	if ts := stats.Topics[0]; ts.Written != 7 || ts.Groups[0].Group != "MqG" || ts.Groups[0].Lag != 5 {
		t.Fatalf("statsAll %+v", ts)
	}
	if out := mustCLI(t, "admin", "statsAll", "-a"); !regexp.MustCompile(`(?m)^MqT\s+MqG\s+7\s+7\s+2\s+5\s*$`).MatchString(out) {
		t.Fatalf("statsAll table:\n%s", out)
	}
	var bcs struct {
		Queues   []client.GroupQueueProgress
		TotalLag int64
	}
	jsonCLI(t, &bcs, "admin", "brokerConsumeStats", "-b", leader, "-l", "2")
	if len(bcs.Queues) != 1 || bcs.Queues[0].Group != "MqG" || bcs.Queues[0].QueueID != 1 || bcs.TotalLag != 4 {
		t.Fatalf("brokerConsumeStats -l 2: %+v", bcs)
	}
	mustCLI(t, "admin", "updateSubGroup", "-g", "MqG2")
	var clone struct{ Queues []client.OffsetClone }
	jsonCLI(t, &clone, "admin", "cloneGroupOffset", "-s", "MqG", "-d", "MqG2", "-t", "MqT", "-o", "false")
	if len(clone.Queues) != 1 || clone.Queues[0].Offset != 2 {
		t.Fatalf("cloneGroupOffset %+v", clone)
	}
	var lags struct{ Groups []groupLag }
	waitFor(t, 10*time.Second, "both groups' lag", func() bool {
		jsonCLI(t, &lags, "admin", "consumerProgress")
		return len(lags.Groups) == 2
	})
	if lags.Groups[0] != (groupLag{"MqG", 2, 5}) || lags.Groups[1] != (groupLag{"MqG2", 2, 5}) {
		t.Fatalf("consumerProgress without -g: %+v", lags)
	}

	// skipAccumulatedMessage: a dry run, then executed.
	var skip struct {
		Executed bool
		Queues   []client.OffsetReset
	}
	jsonCLI(t, &skip, "admin", "skipAccumulatedMessage", "-g", "MqG2", "-t", "MqT")
	if skip.Executed || len(skip.Queues) != 2 || skip.Queues[1].Old != 2 || skip.Queues[1].New != 6 {
		t.Fatalf("skip, dry run: %+v", skip)
	}
	mustCLI(t, "admin", "offset", "skip", "-g", "MqG2", "-t", "MqT", "--execute")
	waitFor(t, 10*time.Second, "MqG2 at the end", func() bool {
		var p client.Progress
		jsonCLI(t, &p, "admin", "consumerProgress", "-g", "MqG2")
		return p.TotalLag == 0
	})

	// deleteSubGroup takes mqadmin's -r; the offsets go with the group.
	mustCLI(t, "admin", "deleteSubGroup", "-g", "MqG", "-r", "false")
	waitFor(t, 10*time.Second, "the offsets removed", func() bool {
		var p client.Progress
		jsonCLI(t, &p, "admin", "consumerProgress", "-g", "MqG", "-t", "MqT")
		return p.TotalLag == 7
	})

	// producerConnection: a producer group that heartbeats.
	hb, _ := (&protocol.HeartbeatData{ClientID: "127.0.0.1@mq-test", ProducerDataSet: []protocol.ProducerData{{GroupName: "MqPG"}}}).Encode()
	if resp, err := rc.Invoke(ctx, leader, remoting.NewRequest(remoting.HeartBeat, nil, hb)); err != nil || resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %v %+v", err, resp)
	}
	if out := mustCLI(t, "admin", "producerConnection", "-g", "MqPG", "-t", "MqT"); !strings.Contains(out, "127.0.0.1@mq-test") {
		t.Fatalf("producerConnection:\n%s", out)
	}

	// queryMsgTraceById: a trace record as RocketMQ's clients write it.
	if _, _, err := runCLI(t, "admin", "queryMsgTraceById", "-i", first.MsgID); !errors.Is(err, client.ErrNoSuchTopic) {
		t.Fatalf("no trace topic: %v", err)
	}
	trace := strings.Join([]string{"Pub", "1700000000000", "DefaultRegion", "MqPG", "MqT", first.MsgID, "TagA", "k1", leader,
		"5", "3", "0", first.OffsetMsgID, "true", "127.0.0.1"}, "\x01") + "\x02"
	mustCLI(t, "admin", "sendMessage", "-t", client.DefaultTraceTopic, "-p", trace, "-k", first.MsgID)
	var tr struct{ Events []client.TraceEvent }
	waitFor(t, 10*time.Second, "the trace indexed", func() bool {
		out, _, err := runCLI(t, "admin", "queryMsgTraceById", "-i", first.MsgID, "--output", "json")
		return err == nil && json.Unmarshal([]byte(out), &tr) == nil
	})
	if len(tr.Events) != 1 || tr.Events[0].Type != "Pub" || tr.Events[0].Group != "MqPG" || tr.Events[0].Status != "success" {
		t.Fatalf("trace %+v", tr)
	}
	if out := mustCLI(t, "admin", "msg", "trace", "-i", first.MsgID); !regexp.MustCompile(`(?m)^Pub\s+MqPG\s+127\.0\.0\.1\s`).MatchString(out) {
		t.Fatalf("trace table:\n%s", out)
	}

	// bench reads NAMESRV_ADDR too, and -o table.
	if out := mustCLI(t, "bench", "latency", "--topic", "MqT", "--count", "1", "-o", "table"); !strings.Contains(out, "acked=1 ") {
		t.Fatalf("bench latency without -n:\n%s", out)
	}
}
