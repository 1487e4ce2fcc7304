package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/protocol"
)

// TestAdminNamesrvCLI runs mqadmin's updateKvConfig, deleteKvConfig,
// updateOrderConf, wipeWritePerm and addWritePerm, and their `admin
// namesrv` verbs, against a name server and one broker group; and
// queryCq.
func TestAdminNamesrvCLI(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	ns := tc.NamesrvAddr()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	mustCLI(t, "admin", "updateKvConfig", "-n", ns, "-s", "app", "-k", "color", "-v", "blue")
	mustCLI(t, "admin", "namesrv", "kv-put", "-n", ns, "-s", "app", "-k", "size", "-v", "9")
	if out := mustCLI(t, "admin", "namesrv", "kv-get", "-n", ns, "-s", "app", "-k", "color"); strings.TrimSpace(out) != "blue" {
		t.Fatalf("kv-get: %q", out)
	}
	var list struct{ Table map[string]string }
	jsonCLI(t, &list, "admin", "namesrv", "kv-list", "-n", ns, "-s", "app")
	if len(list.Table) != 2 || list.Table["size"] != "9" {
		t.Fatalf("kv-list: %+v", list)
	}
	mustCLI(t, "admin", "deleteKvConfig", "-n", ns, "-s", "app", "-k", "color")
	_, _, err := runCLI(t, "admin", "namesrv", "kv-get", "-n", ns, "-s", "app", "-k", "color")
	if !errors.Is(err, client.ErrNoSuchKV) {
		t.Fatalf("kv-get of a deleted key: %v", err)
	}

	// An ordered topic's broker list reaches its route.
	mustCLI(t, "admin", "updateTopic", "-n", ns, "-t", "OrdT", "-r", "2", "-w", "2")
	mustCLI(t, "admin", "updateOrderConf", "-n", ns, "-t", "OrdT", "-m", "put", "-v", "broker-a:2")
	if out := mustCLI(t, "admin", "updateOrderConf", "-n", ns, "-t", "OrdT", "-m", "get"); !strings.Contains(out, "orderConf=[broker-a:2]") {
		t.Fatalf("updateOrderConf get: %q", out)
	}
	a, err := client.NewAdmin(client.WithAdminNameServers(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	rd, err := a.TopicRoute(ctx, "OrdT")
	if err != nil || rd.OrderTopicConf != "broker-a:2" {
		t.Fatalf("route of OrdT: %+v %v", rd, err)
	}
	mustCLI(t, "admin", "updateOrderConf", "-n", ns, "-t", "OrdT", "-m", "delete")
	if rd, err = a.TopicRoute(ctx, "OrdT"); err != nil || rd.OrderTopicConf != "" {
		t.Fatalf("route of OrdT after delete: %+v %v", rd, err)
	}
	if _, _, err := runCLI(t, "admin", "updateOrderConf", "-n", ns, "-t", "OrdT", "-m", "swap"); err == nil {
		t.Fatal("updateOrderConf -m swap succeeded")
	}

	// queryCq: the units of queue 0.
	mustCLI(t, "admin", "sendMessage", "-n", ns, "-t", "OrdT", "-p", "one", "-c", "TagA", "-b", "broker-a", "-i", "0")
	mustCLI(t, "admin", "sendMessage", "-n", ns, "-t", "OrdT", "-p", "two", "-b", "broker-a", "-i", "0")
	var cq struct {
		Remark string
		Body   protocol.QueryConsumeQueueResponseBody
	}
	jsonCLI(t, &cq, "admin", "queryCq", "-n", ns, "-t", "OrdT", "-q", "0", "-i", "0", "-c", "5")
	if cq.Remark != "" || len(cq.Body.QueueData) != 2 || cq.Body.MaxQueueIndex != 2 || cq.Body.QueueData[0].TagsCode == 0 {
		t.Fatalf("queryCq: %+v", cq)
	}
	if out := mustCLI(t, "admin", "msg", "cq", "-n", ns, "-t", "OrdT", "-q", "0", "-i", "5"); !strings.Contains(out, "Index 5 of 0@OrdT is not exist!") {
		t.Fatalf("msg cq past the end:\n%s", out)
	}

	// wipeWritePerm: the group's queues lose write permission in routes.
	permOf := func() int32 {
		t.Helper()
		rd, err := a.TopicRoute(ctx, "OrdT")
		if err != nil || len(rd.QueueDatas) != 1 {
			t.Fatalf("route of OrdT: %+v %v", rd, err)
		}
		return rd.QueueDatas[0].Perm
	}
	out := mustCLI(t, "admin", "wipeWritePerm", "-n", ns, "-b", "broker-a")
	if !strings.HasPrefix(out, "wipe write perm of broker[broker-a] in name server["+ns+"] OK, ") || permOf() != 4 {
		t.Fatalf("wipeWritePerm: %q, perm %d", out, permOf())
	}
	var added struct {
		Namesrvs []client.WritePermResult
	}
	jsonCLI(t, &added, "admin", "namesrv", "add-write-perm", "-n", ns, "-b", "broker-a")
	if len(added.Namesrvs) != 1 || added.Namesrvs[0].Topics < 2 || permOf() != 6 {
		t.Fatalf("add-write-perm: %+v, perm %d", added, permOf())
	}
}
