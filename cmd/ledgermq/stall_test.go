package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/harness/devcluster"
	"github.com/ledgermq/ledgermq/internal/testwait"
	"github.com/ledgermq/ledgermq/remoting"
)

// 32 connections each stalled inside a 16 MiB frame, against the name
// server and against the leader, used to make every legitimate request
// time out for as long as they stayed open. Against real processes now:
// clusterList answers, a real client's sends go through (route reads
// included), both servers stay ready, and their metrics count what they
// did about the attack.
func TestStalledFramesAgainstProcesses(t *testing.T) {
	d := devcluster.Start(t, devcluster.Build(t), devcluster.Options{})
	var cf devcluster.File
	waitFor(t, 30*time.Second, "cluster.json naming a leader", func() bool {
		var err error
		if cf, err = devcluster.ReadFile(d.Dir); err != nil {
			return false
		}
		for _, n := range cf.Nodes {
			if n.Role == devcluster.RoleLeader {
				return true
			}
		}
		return false
	})
	var leader devcluster.Node
	for _, n := range cf.Nodes {
		if n.Role == devcluster.RoleLeader {
			leader = n
		}
	}
	for _, target := range []struct {
		addr string
		code int32
	}{{d.Namesrv, remoting.RegisterBroker}, {leader.Addr, remoting.SendMessage}} {
		for range 32 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			nc, err := remoting.StallFrame(ctx, target.addr, target.code, remoting.DefaultMaxFrameSize, 1<<20)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = nc.Close() })
		}
	}
	counter := func(addr, name string) int {
		_, body := httpGet(addr, "/metrics")
		m := regexp.MustCompile(`(?m)^ledgermq_remoting_` + name + `\{[^}]*\} (\d+)`).FindStringSubmatch(body)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	// The attack is in force and answered: the name server (dev sets a
	// cluster secret) refuses the unsigned registrations' large bodies
	// before reading them; the leader's stall watcher closes the stalled
	// sends while the others wait.
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	testwait.Ctx(t, wctx, "the servers answering the attack", func() bool {
		return counter(cf.NamesrvHTTP, "refused_bodies_total") >= 32 && counter(leader.HTTP, "stalled_closes_total") > 0
	}, func() string {
		_, ns := httpGet(cf.NamesrvHTTP, "/metrics")
		_, br := httpGet(leader.HTTP, "/metrics")
		return grepRemoting(ns) + "\n" + grepRemoting(br)
	})
	if out := mustCLI(t, "admin", "clusterList", "-n", d.Namesrv); !regexp.MustCompile(`broker-a`).MatchString(out) {
		t.Fatalf("clusterList during the attack: %s", out)
	}
	if out, errOut, err := runCLI(t, "bench", "produce", "-n", d.Namesrv, "--topic", "StallT", "--count", "50", "--inflight", "1"); err != nil {
		t.Fatalf("sends during the attack: %v\n%s\n%s", err, out, errOut)
	}
	for _, addr := range []string{cf.NamesrvHTTP, leader.HTTP} {
		if code, body := httpGet(addr, "/readyz"); code != 200 {
			t.Fatalf("%s /readyz during the attack: %d %s", addr, code, body)
		}
	}
}

func grepRemoting(body string) string {
	return strings.Join(regexp.MustCompile(`(?m)^ledgermq_remoting_.*$`).FindAllString(body, -1), "\n")
}
