package compat

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/testwait"
)

// TestRealNodeClientSimpleConsumer: the official RocketMQ 5 Node.js
// client's SimpleConsumer (compat/nodejs/simple_consumer.js, in its own
// process) receives through a broker node's gRPC port the three messages
// its producer sent, each once at attempt 1; of those it did not
// acknowledge, the one left alone comes back first (attempt 2, after its
// 2 s invisible time), the one given 6 s more by changeInvisibleDuration
// after it (attempt 2); the acknowledged one never comes back, and after
// the last acks nothing does.
func TestRealNodeClientSimpleConsumer(t *testing.T) {
	nodeBin, dir := nodeClient(t)
	const topic, group = "NodeSimpleTopic", "NodeSimpleGroup"
	tc, srv, _, ctx := startGRPCNode(t, topic)
	g := tc.Raft.Nodes[0].Group()
	testwait.For(t, 20*time.Second, "the group at format version 4", func() bool { return g.FormatVersion() >= 4 })

	runNodeSimpleConsumer(t, ctx, nodeBin, dir, srv.Addr().String(), topic, group)
}

// runNodeSimpleConsumer runs simple_consumer.js against endpoint and checks
// what it printed (TestRealNodeClientSimpleConsumer says what).
func runNodeSimpleConsumer(t *testing.T, ctx context.Context, nodeBin, dir, endpoint, topic, group string) {
	t.Helper()
	type delivery struct {
		ID      string `json:"id"`
		Body    string `json:"body"`
		Attempt int    `json:"attempt"`
	}
	var got struct {
		Sent  []string   `json:"sent"`
		First []delivery `json:"first"`
		Again []delivery `json:"again"`
		Rest  int        `json:"rest"`
	}
	runNodeScript(t, ctx, nodeBin, dir, &got, nil, "simple_consumer.js", endpoint, topic, group)
	ids := map[string]string{} // body -> id sent
	for i, body := range []string{"first", "second", "third"} {
		ids[body] = got.Sent[i]
	}
	if len(got.First) != 3 {
		t.Fatalf("first deliveries %+v", got.First)
	}
	for _, d := range got.First {
		if d.Attempt != 1 || ids[d.Body] != d.ID {
			t.Fatalf("first delivery %+v; sent %v", d, ids)
		}
	}
	if len(got.Again) != 2 || got.Again[0].Body != "third" || got.Again[1].Body != "second" {
		t.Fatalf("redeliveries %+v: want the third, then the second", got.Again)
	}
	for _, d := range got.Again {
		if d.Attempt != 2 || ids[d.Body] != d.ID {
			t.Fatalf("redelivery %+v", d)
		}
	}
	if got.Rest != 0 {
		t.Fatalf("%d messages delivered after every ack", got.Rest)
	}
}

// TestRealNodeClientPushConsumer: the official Node.js client's
// PushConsumer (compat/nodejs/push_consumer.js) is assigned the broker
// group by QueryAssignment, consumes the three messages its producer sent
// at attempt 1, and the one its listener failed once again at attempt 2
// (after ChangeInvisibleDuration by its retry policy); every consumption
// is acknowledged: nothing stays in flight.
func TestRealNodeClientPushConsumer(t *testing.T) {
	nodeBin, dir := nodeClient(t)
	const topic, group = "NodePushTopic", "NodePushGroup"
	tc, srv, _, ctx := startGRPCNode(t, topic)
	g := tc.Raft.Nodes[0].Group()
	testwait.For(t, 20*time.Second, "the group at format version 4", func() bool { return g.FormatVersion() >= 4 })

	cmd, stderr := nodeCommand(t, ctx, nodeBin, dir, "push_consumer.js", srv.Addr().String(), topic, group)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("node push_consumer.js: %v\nstderr: %s", err, stderr.String())
		} else if stderr.Len() > 0 {
			t.Logf("push_consumer.js stderr: %s", stderr.String())
		}
	}()
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err != nil {
		t.Fatalf("push_consumer.js printed %q: %v\nstderr: %s", line, err, stderr.String())
	}
	t.Logf("node PushConsumer: %s", line)
	var got struct {
		Sent     map[string]string `json:"sent"`
		Consumed []struct {
			ID      string `json:"id"`
			Body    string `json:"body"`
			Attempt int    `json:"attempt"`
		} `json:"consumed"`
	}
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("push_consumer.js printed %q: %v", line, err)
	}
	attempts := map[string][]int{}
	for _, c := range got.Consumed {
		if got.Sent[c.Body] != c.ID {
			t.Fatalf("consumed %+v; sent %v", c, got.Sent)
		}
		attempts[c.Body] = append(attempts[c.Body], c.Attempt)
	}
	if fmt.Sprint(attempts["ok-1"], attempts["ok-2"], attempts["fail-once"]) != "[1] [1] [1 2]" {
		t.Fatalf("consumptions %v", attempts)
	}
	testwait.For(t, 20*time.Second, "every consumption acknowledged", func() bool {
		for q := int32(0); q < 4; q++ {
			if g.Metadata().PopInflight(group, topic, q) != 0 {
				return false
			}
		}
		return true
	})
}
