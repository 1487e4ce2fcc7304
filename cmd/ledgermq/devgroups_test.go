//go:build unix

package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/remoting"
)

// TestDevTwoGroups runs `dev --groups 2`: cluster.json names both groups
// and their leaders, a topic created on the cluster spreads over both,
// and while one whole group is down our producer sends through the other
// without a failed send; every acknowledged message is then read back
// from the group that acknowledged it.
func TestDevTwoGroups(t *testing.T) {
	d := devcluster.Start(t, devcluster.Build(t), devcluster.Options{Args: []string{"--groups", "2", "--nodes", "1", "--restart"}})
	cf := d.File
	groups := map[string]devcluster.Node{}
	for _, n := range cf.Nodes {
		groups[n.Group] = n
	}
	if len(cf.Nodes) != 2 || groups["broker-a"].ID != "n0" || groups["broker-b"].ID != "b0" {
		t.Fatalf("cluster.json: %+v\n%s", cf, d.Output())
	}
	for _, n := range cf.Nodes {
		if n.Role != devcluster.RoleLeader {
			t.Fatalf("%s of %s is %s, want leader", n.ID, n.Group, n.Role)
		}
	}
	// dev writes cluster.json, then announces the cluster: the line may
	// trail the file by a moment.
	waitFor(t, 30*time.Second, "dev announces both groups", func() bool {
		return strings.Contains(d.Output(), "cluster broker-a, broker-b is up")
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := client.NewAdmin(client.WithAdminNameServers(d.Namesrv))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const topic = "TwoGroups"
	created, err := admin.CreateTopic(ctx, client.TopicConfig{Topic: topic, ReadQueues: 2, WriteQueues: 2}, client.Target{Cluster: "DefaultCluster"})
	if err != nil || len(created) != 2 {
		t.Fatalf("topic on the cluster: created on %v, %v", created, err)
	}
	members, err := admin.ClusterList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range members {
		listed[m.BrokerName] = true
	}
	if !listed["broker-a"] || !listed["broker-b"] {
		t.Fatalf("clusterList: %+v", members)
	}

	p, err := client.NewProducer(client.WithNameServers(d.Namesrv), client.WithGroup("two-groups"), client.WithSendTimeout(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	acked := map[string]string{} // key -> group that acknowledged it
	byGroup := map[string]int{}
	send := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			key := fmt.Sprintf("k%04d", i)
			r, err := p.Send(ctx, &client.Message{Topic: topic, Keys: []string{key}, Body: []byte("body " + key)})
			if err != nil {
				t.Fatalf("send %s: %v", key, err)
			}
			acked[key] = r.Queue.BrokerName
			byGroup[r.Queue.BrokerName]++
		}
	}
	send(0, 200)
	if byGroup["broker-a"] == 0 || byGroup["broker-b"] == 0 {
		t.Fatalf("sends by group with both up: %v", byGroup)
	}

	// broker-b down as a whole: sends go on through broker-a.
	b := groups["broker-b"]
	if err := d.Kill9(b.PID); err != nil {
		t.Fatal(err)
	}
	before := byGroup["broker-a"]
	send(200, 400)
	if byGroup["broker-a"]-before < 150 {
		t.Fatalf("with broker-b down, broker-a took %d of 200 sends: %v", byGroup["broker-a"]-before, byGroup)
	}

	// dev starts b0 again; every acknowledged message is where its
	// acknowledgement said.
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	waitFor(t, 60*time.Second, "broker-b leads again", func() bool {
		l, err := devcluster.Leader(ctx, rc, d.Namesrv, "broker-b")
		return err == nil && l == b.Addr
	})
	found := map[string]string{}
	for group, n := range groups {
		msgs, err := devcluster.ReadTopic(ctx, rc, n.Addr, topic, "two-groups-check")
		if err != nil {
			t.Fatalf("read %s from %s: %v", topic, group, err)
		}
		for _, m := range msgs {
			k := devcluster.KeyOf(m)
			if g, dup := found[k]; dup {
				t.Errorf("%s stored twice (%s and %s)", k, g, group)
			}
			found[k] = group
		}
	}
	for k, g := range acked {
		if found[k] != g {
			t.Errorf("%s acknowledged by %s, found in %q", k, g, found[k])
		}
	}
	t.Logf("acknowledged by group: %v; %d messages read back", byGroup, len(found))
}
