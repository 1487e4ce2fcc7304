package main

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/remoting"
)

func sendRequest(topic, body string) *remoting.Command {
	return remoting.NewRequest(remoting.SendMessage, map[string]string{
		"producerGroup": "pg1", "topic": topic, "queueId": "0", "sysFlag": "0",
		"bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0",
		"reconsumeTimes": "0", "unitMode": "false", "maxReconsumeTimes": "0",
		"defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "batch": "false",
		"properties": string(message.EncodeProperties(map[string]string{message.PropertyKeys: body})),
		"bname":      devBrokerName,
	}, []byte(body))
}

// TestDevLeaderKill9 runs the local cluster as real processes, kill -9s the
// leader's process, and checks that a new leader takes sends and still
// serves every message acknowledged before the kill.
func TestDevLeaderKill9(t *testing.T) {
	d := startDev(t)
	client := remoting.NewClient(remoting.ClientConfig{})
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader, err := d.Leader(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	var acked []string
	for i := 0; i < 20; i++ {
		resp, err := client.Invoke(ctx, leader, sendRequest("KillTopic", fmt.Sprintf("before-%d", i)))
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("send %d: %v %+v", i, err, resp)
		}
		acked = append(acked, resp.ExtFields["msgId"])
	}
	victim, _ := d.File.NodeByAddr(leader)
	if err := d.Kill9(victim.PID); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var next string
	waitFor(t, 30*time.Second, "a new leader in the name server", func() bool {
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		defer rcancel()
		next, err = d.Leader(rctx, client)
		return err == nil && next != "" && next != leader
	})
	var acceptedAfter time.Duration
	waitFor(t, 30*time.Second, "a send acknowledged by the new leader", func() bool {
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		defer rcancel()
		resp, err := client.Invoke(rctx, next, sendRequest("KillTopic", "after"))
		if err == nil && resp.Code == remoting.Success {
			acceptedAfter = time.Since(killed)
			return true
		}
		return false
	})
	t.Logf("leader process killed; new leader %s acknowledged a send %v later", next, acceptedAfter)
	for _, id := range acked {
		_, off, err := message.ParseOffsetMsgID(id)
		if err != nil {
			t.Fatalf("msgId %q: %v", id, err)
		}
		resp, err := client.Invoke(ctx, next, remoting.NewRequest(remoting.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(off, 10)}, nil))
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("acknowledged message %s lost after the kill: %v %+v", id, err, resp)
		}
	}
}
