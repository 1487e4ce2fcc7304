package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/remoting"
)

func sendRequest(topic, body string) *remoting.Command {
	return sendKeyedRequest(topic, body, []byte(body))
}

// sendKeyedRequest is a SEND_MESSAGE of body with key as its KEYS.
func sendKeyedRequest(topic, key string, body []byte) *remoting.Command {
	return remoting.NewRequest(remoting.SendMessage, map[string]string{
		"producerGroup": "pg1", "topic": topic, "queueId": "0", "sysFlag": "0",
		"bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0",
		"reconsumeTimes": "0", "unitMode": "false", "maxReconsumeTimes": "0",
		"defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "batch": "false",
		"properties": string(message.EncodeProperties(map[string]string{message.PropertyKeys: key})),
		"bname":      devBrokerName,
	}, body)
}

// leaderChange is a dev cluster whose leader is about to be stopped: the
// messages acknowledged before, and a client to check them afterwards.
type leaderChange struct {
	d      *devcluster.Process
	client *remoting.Client
	ctx    context.Context
	leader devcluster.Node
	acked  []string // offset msgIds
}

// beforeLeaderStop starts dev with extra args, finds the leader and has it
// acknowledge 20 sends.
func beforeLeaderStop(t *testing.T, args ...string) *leaderChange {
	t.Helper()
	d := devcluster.Start(t, devcluster.Build(t), devcluster.Options{Args: args})
	client := remoting.NewClient(remoting.ClientConfig{})
	t.Cleanup(func() { client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	addr, err := d.Leader(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	leader, ok := d.File.NodeByAddr(addr)
	if !ok {
		t.Fatalf("leader %s is not in %+v", addr, d.File)
	}
	lc := &leaderChange{d: d, client: client, ctx: ctx, leader: leader}
	for i := 0; i < 20; i++ {
		resp, err := client.Invoke(ctx, addr, sendRequest("KillTopic", fmt.Sprintf("before-%d", i)))
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("send %d: %v %+v", i, err, resp)
		}
		lc.acked = append(lc.acked, resp.ExtFields["msgId"])
	}
	return lc
}

// afterLeaderStop waits for another node to be listed as leader, for it to
// acknowledge a send, and checks it serves every message acknowledged
// before. It returns the new leader's address and how long after stopped
// the send was acknowledged.
func (lc *leaderChange) afterLeaderStop(t *testing.T, stopped time.Time) (string, time.Duration) {
	t.Helper()
	var next string
	var err error
	waitFor(t, 30*time.Second, "a new leader in the name server", func() bool {
		rctx, rcancel := context.WithTimeout(lc.ctx, time.Second)
		defer rcancel()
		next, err = lc.d.Leader(rctx, lc.client)
		return err == nil && next != "" && next != lc.leader.Addr
	})
	var acceptedAfter time.Duration
	waitFor(t, 30*time.Second, "a send acknowledged by the new leader", func() bool {
		rctx, rcancel := context.WithTimeout(lc.ctx, 2*time.Second)
		defer rcancel()
		resp, err := lc.client.Invoke(rctx, next, sendRequest("KillTopic", "after"))
		if err == nil && resp.Code == remoting.Success {
			acceptedAfter = time.Since(stopped)
			return true
		}
		return false
	})
	checkServes(t, lc.ctx, lc.client, next, lc.acked)
	return next, acceptedAfter
}

// TestDevLeaderSIGTERMHandsOver stops the leader's process with SIGTERM, as
// a rolling restart does: it hands leadership to a follower before it
// stops serving, exits 0, and nothing acknowledged is lost.
func TestDevLeaderSIGTERMHandsOver(t *testing.T) {
	lc := beforeLeaderStop(t, "--log-level", "info")
	if err := lc.d.SignalNode(lc.leader.PID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	next, after := lc.afterLeaderStop(t, time.Now())
	exited := fmt.Sprintf("dev: %s (pid %d) exited: exit status 0", lc.leader.ID, lc.leader.PID)
	waitFor(t, 30*time.Second, "the old leader's process to exit 0", func() bool {
		return strings.Contains(lc.d.Output(), exited)
	})
	logText, err := os.ReadFile(filepath.Join(lc.d.Dir, lc.leader.ID+".log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logText), "leadership handed over before shutdown") {
		t.Fatalf("%s's log does not show a hand-over:\n%s", lc.leader.ID, logText)
	}
	t.Logf("leader process stopped by SIGTERM; new leader %s acknowledged a send %v later", next, after)
}

// TestDevLeaderKill9 runs the local cluster as real processes in the
// default layout (the CommitLog is the raft log: no separate raft log on
// any node), kill -9s the leader's process, and checks that a new leader
// takes sends and still serves every message acknowledged before the
// kill, and that the killed node, restarted by dev, recovers its log from
// the CommitLog alone and serves every acknowledged message again.
func TestDevLeaderKill9(t *testing.T) {
	leaderKill9(t, "commitlog")
}

// TestDevWALLeaderKill9 is TestDevLeaderKill9 in the layout of groups
// created before one log was the default (raft.log=wal): the nodes keep
// raft's log beside the CommitLog.
func TestDevWALLeaderKill9(t *testing.T) {
	leaderKill9(t, "wal")
}

func leaderKill9(t *testing.T, layout string) {
	args := []string{"--restart"}
	if layout != "commitlog" {
		args = append(args, "--node-conf", "raft.log="+layout)
	}
	lc := beforeLeaderStop(t, args...)
	for _, n := range lc.d.File.Nodes {
		_, walErr := os.Stat(filepath.Join(n.Dir, "raft", "wal"))
		_, markErr := os.Stat(filepath.Join(n.Dir, "store", "onelog"))
		if (layout == "commitlog") != (os.IsNotExist(walErr) && markErr == nil) {
			t.Fatalf("%s: raft/wal %v, store/onelog %v: not the %s layout", n.ID, walErr, markErr, layout)
		}
	}
	if err := lc.d.Kill9(lc.leader.PID); err != nil {
		t.Fatal(err)
	}
	next, after := lc.afterLeaderStop(t, time.Now())
	t.Logf("leader process killed; new leader %s acknowledged a send %v later", next, after)
	waitFor(t, 60*time.Second, "the killed node, restarted, to serve every acknowledged message", func() bool {
		for _, id := range lc.acked {
			rctx, rcancel := context.WithTimeout(lc.ctx, time.Second)
			resp, err := lc.client.Invoke(rctx, lc.leader.Addr, viewByIDRequest(t, id))
			rcancel()
			if err != nil || resp.Code != remoting.Success {
				return false
			}
		}
		return true
	})
}
