package routing

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// TestServerKVConfig: PUT_KV_CONFIG, GET_KV_CONFIG, DELETE_KV_CONFIG and
// GET_KVLIST_BY_NAMESPACE over TCP, answered as Java's name server
// answers them; the table survives a restart through its file (Java's
// format); ORDER_TOPIC_CONFIG's entry of a topic is its route's
// orderTopicConf.
func TestServerKVConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kvConfig.json")
	s, _ := startServer(t, Config{KVConfigPath: path})
	ns := s.Addr().String()
	c := newClient(t)

	put := func(ns, namespace, key, value string) {
		t.Helper()
		h := protocol.KVConfigRequestHeader{Namespace: namespace, Key: key, Value: value}
		if resp := send(t, c, ns, h.Request(remoting.PutKVConfig)); resp.Code != remoting.Success {
			t.Fatalf("put %s/%s: %d %q", namespace, key, resp.Code, resp.Remark)
		}
	}
	get := func(ns, namespace, key string) (string, *remoting.Command) {
		t.Helper()
		h := protocol.KVConfigRequestHeader{Namespace: namespace, Key: key}
		resp := send(t, c, ns, h.Request(remoting.GetKVConfig))
		var rh protocol.GetKVConfigResponseHeader
		_ = rh.Decode(resp.ExtFields)
		return rh.Value, resp
	}
	put(ns, "app", "k1", "v1")
	put(ns, "app", "k2", "v2")
	put(ns, "app", "k1", "v1b")
	put(ns, protocol.NamespaceOrderTopicConfig, "OrderedTopic", "broker-a:4")
	if v, resp := get(ns, "app", "k1"); resp.Code != remoting.Success || v != "v1b" {
		t.Fatalf("get k1: %d %q %q", resp.Code, resp.Remark, v)
	}
	if _, resp := get(ns, "app", "nope"); resp.Code != remoting.QueryNotFound || resp.Remark != "No config item, Namespace: app Key: nope" {
		t.Fatalf("get missing: %d %q", resp.Code, resp.Remark)
	}
	if resp := invoke(t, c, ns, remoting.PutKVConfig, map[string]string{"namespace": "app", "key": "k3"}, nil); resp.Code != remoting.SystemError {
		t.Fatalf("put without value: %d %q", resp.Code, resp.Remark)
	}
	resp := send(t, c, ns, (&protocol.GetKVListByNamespaceRequestHeader{Namespace: "app"}).Request())
	if resp.Code != remoting.Success || string(resp.Body) != `{"table":{"k1":"v1b","k2":"v2"}}` {
		t.Fatalf("list: %d %q %s", resp.Code, resp.Remark, resp.Body)
	}
	resp = send(t, c, ns, (&protocol.GetKVListByNamespaceRequestHeader{Namespace: "empty"}).Request())
	if resp.Code != remoting.QueryNotFound || resp.Remark != "No config item, Namespace: empty" {
		t.Fatalf("list of empty namespace: %d %q", resp.Code, resp.Remark)
	}
	del := protocol.KVConfigRequestHeader{Namespace: "app", Key: "k2"}
	if resp := send(t, c, ns, del.Request(remoting.DeleteKVConfig)); resp.Code != remoting.Success {
		t.Fatalf("delete: %d %q", resp.Code, resp.Remark)
	}
	if resp := send(t, c, ns, del.Request(remoting.DeleteKVConfig)); resp.Code != remoting.Success {
		t.Fatalf("delete again: %d %q", resp.Code, resp.Remark)
	}

	// The route of an ordered topic carries its broker list.
	registerAll(t, s, c, brokerReq(0, 0, 1, topic("OrderedTopic", 4), topic("Plain", 4)))
	if r := mustRoute(t, c, ns, "OrderedTopic"); r.OrderTopicConf != "broker-a:4" {
		t.Fatalf("orderTopicConf %q", r.OrderTopicConf)
	}
	if resp := routeOf(t, c, ns, "Plain"); strings.Contains(string(resp.Body), "orderTopicConf") {
		t.Fatalf("an unordered topic's route: %s", resp.Body)
	}

	// The file is Java's format, and a restarted name server reads it.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		ConfigTable map[string]map[string]string `json:"configTable"`
	}
	if err := json.Unmarshal(data, &f); err != nil || !maps.Equal(f.ConfigTable["app"], map[string]string{"k1": "v1b"}) {
		t.Fatalf("file %s: %v", data, err)
	}
	s2, _ := startServer(t, Config{KVConfigPath: path})
	if v, resp := get(s2.Addr().String(), "app", "k1"); resp.Code != remoting.Success || v != "v1b" {
		t.Fatalf("after restart: %d %q %q", resp.Code, resp.Remark, v)
	}
	if v, _ := get(s2.Addr().String(), protocol.NamespaceOrderTopicConfig, "OrderedTopic"); v != "broker-a:4" {
		t.Fatalf("order conf after restart: %q", v)
	}
}

// TestKVConfigUnwritable: a change the file cannot take is refused and
// undone; a file that does not parse stops the name server.
func TestKVConfigUnwritable(t *testing.T) {
	dir := t.TempDir()
	kv, err := loadKVConfig(filepath.Join(dir, "missing", "kv.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.put("a", "k", "v"); err == nil {
		t.Fatal("a put the file cannot take succeeded")
	}
	if _, ok := kv.get("a", "k"); ok {
		t.Fatal("a refused put stayed in the table")
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewServer(Config{KVConfigPath: bad}); err == nil {
		t.Fatal("a name server started with a KV file that does not parse")
	}
	mem, err := loadKVConfig("")
	if err != nil || mem.put("a", "k", "v") != nil {
		t.Fatalf("in memory: %v", err)
	}
}

// TestServerWritePermOfBroker: WIPE_WRITE_PERM_OF_BROKER takes PERM_WRITE
// from every topic of the group in routes and answers wipeTopicCount;
// ADD_WRITE_PERM_OF_BROKER makes them readable and writable again
// (addTopicCount); an unknown group counts 0. The leader's next
// registration of a changed topic table restores its own perms.
func TestServerWritePermOfBroker(t *testing.T) {
	s, _ := startServer(t, Config{})
	ns := s.Addr().String()
	c := newClient(t)
	ro := topic("ReadOnly", 2)
	ro.Perm = protocol.PermRead
	registerAll(t, s, c, brokerReq(0, 0, 1, topic("A", 4), topic("B", 4), ro))
	permOf := func(topic string) int32 {
		t.Helper()
		return int32(mustRoute(t, c, ns, topic).QueueDataList[0].Perm)
	}

	wipe := protocol.BrokerPermRequestHeader{BrokerName: "broker-a"}
	resp := send(t, c, ns, wipe.Request(remoting.WipeWritePermOfBroker))
	if resp.Code != remoting.Success || resp.ExtFields["wipeTopicCount"] != "3" {
		t.Fatalf("wipe: %d %q %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	if permOf("A") != protocol.PermRead || permOf("ReadOnly") != protocol.PermRead {
		t.Fatalf("after wipe: A %d, ReadOnly %d", permOf("A"), permOf("ReadOnly"))
	}
	resp = send(t, c, ns, wipe.Request(remoting.AddWritePermOfBroker))
	if resp.Code != remoting.Success || resp.ExtFields["addTopicCount"] != "3" {
		t.Fatalf("add: %d %q %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	if permOf("B") != protocol.PermRead|protocol.PermWrite || permOf("ReadOnly") != protocol.PermRead|protocol.PermWrite {
		t.Fatalf("after add: B %d, ReadOnly %d", permOf("B"), permOf("ReadOnly"))
	}
	other := protocol.BrokerPermRequestHeader{BrokerName: "broker-z"}
	if resp = send(t, c, ns, other.Request(remoting.WipeWritePermOfBroker)); resp.Code != remoting.Success || resp.ExtFields["wipeTopicCount"] != "0" {
		t.Fatalf("wipe unknown: %d %v", resp.Code, resp.ExtFields)
	}
	if resp = invoke(t, c, ns, remoting.WipeWritePermOfBroker, nil, nil); resp.Code != remoting.SystemError {
		t.Fatalf("wipe without brokerName: %d", resp.Code)
	}

	// Wiped again, then the leader registers a changed table: its perms.
	send(t, c, ns, wipe.Request(remoting.WipeWritePermOfBroker))
	next := brokerReq(0, 0, 1, topic("A", 4), topic("B", 4), ro)
	next.DataVersion.Counter++
	if err := RegisterBroker(ctxGuard(t), c, ns, next); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the leader's perms back", func() bool { return permOf("A") == protocol.PermRead|protocol.PermWrite })
	if permOf("ReadOnly") != protocol.PermRead {
		t.Fatalf("ReadOnly after registration: %d", permOf("ReadOnly"))
	}
}
