//go:build unix

package compat

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/remoting"
)

// nodeFailover is what compat/nodejs/failover.js prints at its end.
type nodeFailover struct {
	Acked         [][2]json.RawMessage `json:"acked"` // [body, answered at (ms since the epoch)]
	Failed        int                  `json:"failed"`
	Errors        []string             `json:"errors"`
	ReceiveErrors int                  `json:"receiveErrors"`
	Received      map[string]int       `json:"received"`
}

// TestRealNodeClientThroughProcessKill9: the official RocketMQ 5 Node.js
// client (compat/nodejs/failover.js: 4 senders one message at a time, and a
// SimpleConsumer receiving and acknowledging all along) works through
// `ledgermq dev`'s proxy while the group's leader process is killed with
// kill -9 (LEDGERMQ_NODE_FAILOVER_KILLS times, 1 by default, each once the
// group is whole again). Every acknowledged send is stored (lost=0, read
// back by offset) and received by the SimpleConsumer; the
// test reports, per kill, the longest time no send was acknowledged (from
// a second before it to 9 s after, or to the next kill), and
// the failed sends and the messages received more than once.
func TestRealNodeClientThroughProcessKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs it as processes")
	}
	nodeBin, dir := nodeClient(t)
	kills := 1
	if v := os.Getenv("LEDGERMQ_NODE_FAILOVER_KILLS"); v != "" {
		if _, err := fmt.Sscan(v, &kills); err != nil || kills < 1 {
			t.Fatalf("LEDGERMQ_NODE_FAILOVER_KILLS=%q", v)
		}
	}
	d := devcluster.Start(t, devcluster.Build(t), devcluster.Options{Args: []string{"--restart"}})
	if d.File.Proxy == "" {
		t.Fatalf("cluster.json names no proxy: %+v", d.File)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logTails(t, d.Dir, "proxy.log", "n0.log", "n1.log", "n2.log")
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(150+40*kills)*time.Second)
	defer cancel()
	const topic, group = "NodeFailoverTopic", "NodeFailoverGroup"
	admin, err := client.NewAdmin(client.WithAdminNameServers(d.Namesrv))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	waitFor(t, ctx, "the topic created", func() bool {
		_, err := admin.CreateTopic(ctx, client.TopicConfig{Topic: topic, ReadQueues: 4, WriteQueues: 4, Perm: 6}, client.Target{})
		return err == nil
	})
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()

	seconds := 10 + 15*kills
	cmd, stderr := nodeCommand(t, ctx, nodeBin, dir, "failover.js", d.File.Proxy, topic, group, "4", fmt.Sprint(seconds), fmt.Sprint(60+10*kills))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 4)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func(what string) string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("failover.js ended before %s: %v\n%s", what, cmd.Wait(), stderr.String())
			}
			return l
		case <-ctx.Done():
			t.Fatalf("no %s from failover.js: %v\n%s", what, ctx.Err(), stderr.String())
		}
		return ""
	}
	if l := next("its first 200 acknowledged sends"); !strings.Contains(l, `"event":"acked"`) {
		t.Fatalf("failover.js printed %q", l)
	}

	var killedAt []time.Time
	for k := 0; k < kills; k++ {
		leader, victim := waitHealthyLeader(t, ctx, d, rc)
		if err := d.Kill9(victim.PID); errors.Is(err, syscall.ESRCH) {
			// Gone since cluster.json was written (dev restarts a node
			// that exited): look again.
			t.Logf("kill -9 of %s (pid %d): %v; the cluster once more", victim.ID, victim.PID, err)
			k--
			continue
		} else if err != nil {
			t.Fatalf("kill -9 of %+v: %v", victim, err)
		}
		killedAt = append(killedAt, time.Now())
		waitFor(t, ctx, "a new leader", func() bool {
			rctx, rcancel := context.WithTimeout(ctx, time.Second)
			defer rcancel()
			l, err := d.Leader(rctx, rc)
			return err == nil && l != "" && l != leader
		})
	}

	var out nodeFailover
	if err := json.Unmarshal([]byte(next("its summary")), &out); err != nil {
		t.Fatalf("failover.js summary: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("failover.js: %v\n%s", err, stderr.String())
	}
	acks := make([]time.Time, 0, len(out.Acked))
	acked := make(map[string]bool, len(out.Acked))
	for _, a := range out.Acked {
		var body string
		var ms int64
		if json.Unmarshal(a[0], &body) != nil || json.Unmarshal(a[1], &ms) != nil {
			t.Fatalf("acked entry %s", a)
		}
		acks = append(acks, time.UnixMilli(ms))
		acked[body] = true
	}
	// Stored: every acknowledged send, read back from the queues.
	lost := missingFromTopic(t, ctx, d.Namesrv, topic, acked)
	unreceived, twice := 0, 0
	for body := range acked {
		if out.Received[body] == 0 {
			unreceived++
		}
	}
	for _, n := range out.Received {
		if n > 1 {
			twice++
		}
	}
	sort.Slice(acks, func(i, j int) bool { return acks[i].Before(acks[j]) })
	for i, at := range killedAt {
		until := at.Add(9 * time.Second)
		if i+1 < len(killedAt) && killedAt[i+1].Before(until) {
			until = killedAt[i+1]
		}
		gap := ackGap(acks, at.Add(-time.Second), until)
		t.Logf("kill %d of %d: longest time without an acknowledged send around it %v", i+1, kills, gap.Round(time.Millisecond))
	}
	t.Logf("the official Node.js client through the proxy, %d kill -9 of the leader: acked=%d failed=%d (first errors %q) lost=%d "+
		"never received=%d received more than once=%d receive errors=%d",
		kills, len(acks), out.Failed, out.Errors, len(lost), unreceived, twice, out.ReceiveErrors)
	if len(lost) > 0 {
		t.Fatalf("%d acknowledged sends are not stored, e.g. %v", len(lost), lost[:min(len(lost), 5)])
	}
	if unreceived > 0 {
		t.Fatalf("%d acknowledged sends were never received by the SimpleConsumer", unreceived)
	}
	if len(acks) < 400 {
		t.Fatalf("only %d sends acknowledged", len(acks))
	}
}

// waitHealthyLeader waits until the group's three nodes run again (a
// killed one restarted by dev) and the name server names a leader among
// them, and returns its address and node (with its process id), both from
// one reading of cluster.json.
func waitHealthyLeader(t *testing.T, ctx context.Context, d *devcluster.Process, rc *remoting.Client) (string, devcluster.Node) {
	t.Helper()
	var leader string
	var node devcluster.Node
	waitFor(t, ctx, "the group whole again, with a leader", func() bool {
		f, err := devcluster.ReadFile(d.Dir)
		if err != nil {
			return false
		}
		for _, n := range f.Nodes {
			if n.PID == 0 || (n.Role != devcluster.RoleLeader && n.Role != devcluster.RoleFollower) ||
				syscall.Kill(n.PID, 0) != nil { // cluster.json not yet rewritten after a restart
				return false
			}
		}
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		defer rcancel()
		if leader, err = d.Leader(rctx, rc); err != nil || leader == "" {
			return false
		}
		var ok bool
		node, ok = f.NodeByAddr(leader)
		return ok
	})
	return leader, node
}

// ackGap is the longest time between consecutive acknowledgements
// (sorted) from from to to, or up to the last one.
func ackGap(acks []time.Time, from, to time.Time) time.Duration {
	if n := len(acks); n > 0 && acks[n-1].Before(to) {
		to = acks[n-1]
	}
	prev := from
	var gap time.Duration
	for _, a := range acks {
		if a.Before(from) || a.After(to) {
			continue
		}
		gap = max(gap, a.Sub(prev))
		prev = a
	}
	return max(gap, to.Sub(prev))
}

// logTails logs the last lines of each named log file of dir.
func logTails(t *testing.T, dir string, names ...string) {
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Logf("%s: %v", name, err)
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		t.Logf("%s, last lines:\n%s", name, strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
}

// missingFromTopic reads topic back from every queue's first offset and
// returns the bodies of want it does not hold, once it has read up to the
// queues' ends as they were when it started.
func missingFromTopic(t *testing.T, ctx context.Context, namesrv, topic string, want map[string]bool) []string {
	t.Helper()
	c, err := client.NewPullConsumer(client.WithNameServers(namesrv), client.WithGroup("NodeFailoverCheck"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	qs, err := c.Queues(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	c.Assign(qs)
	for _, q := range qs {
		if err := c.Seek(q, 0); err != nil {
			t.Fatal(err)
		}
	}
	missing := maps.Clone(want)
	quiet := 0
	for len(missing) > 0 && quiet < 3 {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		msgs, _ := c.Poll(pctx)
		cancel()
		if len(msgs) == 0 {
			quiet++ // three empty polls of 2 s in a row: the queues are read
			continue
		}
		quiet = 0
		for _, m := range msgs {
			delete(missing, string(m.Body))
		}
	}
	return slices.Sorted(maps.Keys(missing))
}
