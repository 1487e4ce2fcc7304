package broker_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

func testAdminRoundTrips(t *testing.T, tc *brokertest.Cluster, c *remoting.Client) {
	leaderID, addr, g := leaderOf(t, tc)
	_, faddr := followerOf(t, tc, leaderID)

	// 17 through a follower: forwarded, created, registered.
	create := remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{
		"topic": "AdminTopic", "defaultTopic": "defaultTopic", "readQueueNums": "3", "writeQueueNums": "3",
		"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
	}, nil)
	mustOK(t, invoke(t, c, faddr, create))
	if cfg, ok := g.Metadata().Topic("AdminTopic"); !ok || cfg.WriteQueueNums != 3 || cfg.Perm != 6 {
		t.Fatalf("created %+v %v", cfg, ok)
	}
	if r, ok := tc.Namesrv.Table().Route("AdminTopic"); !ok || r.QueueDatas[0].ReadQueueNums != 3 {
		t.Fatalf("route %+v %v", r, ok)
	}
	// Hostile 17s are refused.
	for _, ext := range []map[string]string{
		{},
		{"topic": "bad topic"},
		{"topic": "X", "readQueueNums": "-1"},
		{"topic": "X", "writeQueueNums": "zz"},
		{"topic": "X", "readQueueNums": "0", "writeQueueNums": "0"},
		{"topic": "X", "topicFilterType": "NOPE"},
		{"topic": "X", "perm": "99"},
	} {
		if resp := invoke(t, c, addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, ext, nil)); resp.Code == remoting.Success {
			t.Fatalf("17 with %v succeeded", ext)
		}
	}

	// 21 from a follower (its own replica, once it has applied the op).
	var w protocol.TopicConfigWrapper
	broker.WaitUntil(t, 10*time.Second, "follower sees AdminTopic", func() bool {
		resp := invoke(t, c, faddr, remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
		mustOK(t, resp)
		w = protocol.TopicConfigWrapper{}
		if err := json.Unmarshal(resp.Body, &w); err != nil {
			t.Fatal(err)
		}
		_, ok := w.TopicConfigTable["AdminTopic"]
		return ok
	})
	if tbw := w.TopicConfigTable["TBW102"]; tbw.Perm != 7 || tbw.WriteQueueNums != 8 {
		t.Fatalf("TBW102 in 21: %+v", tbw)
	}
	if w.DataVersion.Counter == 0 || w.DataVersion.Timestamp == 0 {
		t.Fatalf("dataVersion %+v", w.DataVersion)
	}

	// A message with keys, then 33 and 12.
	props := map[string]string{"KEYS": "order-1 order-2", "TAGS": "A", "UNIQ_KEY": "U1"}
	resp := invoke(t, c, addr, broker.SendRequest("AdminTopic", 2, props, "find me"))
	mustOK(t, resp)
	_, off, err := message.ParseOffsetMsgID(resp.ExtFields["msgId"])
	if err != nil {
		t.Fatal(err)
	}
	view := invoke(t, c, addr, remoting.NewRequest(remoting.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(off, 10)}, nil))
	mustOK(t, view)
	m, n, err := message.DecodeRecord(view.Body)
	if err != nil || n != len(view.Body) || string(m.Body) != "find me" || m.PhysicalOffset != off {
		t.Fatalf("33 body: %+v %d %v", m, n, err)
	}
	if r := invoke(t, c, addr, remoting.NewRequest(remoting.ViewMessageByID, map[string]string{"offset": "123456789"}, nil)); r.Code == remoting.Success {
		t.Fatal("33 of a bogus offset succeeded")
	}
	if r := invoke(t, c, addr, remoting.NewRequest(remoting.ViewMessageByID, map[string]string{"offset": "x"}, nil)); r.Code == remoting.Success {
		t.Fatal("33 of a garbage offset succeeded")
	}

	query := func(key string) *remoting.Command {
		return invoke(t, c, addr, remoting.NewRequest(remoting.QueryMessage, map[string]string{
			"topic": "AdminTopic", "key": key, "maxNum": "32", "beginTimestamp": "0",
			"endTimestamp": strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10),
		}, nil))
	}
	// The index is built when the batch is dispatched, before the send
	// was answered.
	q := query("order-2")
	mustOK(t, q)
	ms, err := message.DecodeRecords(q.Body)
	if err != nil || len(ms) != 1 || string(ms[0].Body) != "find me" {
		t.Fatalf("12 body: %+v %v", ms, err)
	}
	if q.ExtFields["indexLastUpdatePhyoffset"] != strconv.FormatInt(off, 10) || q.ExtFields["indexLastUpdateTimestamp"] == "" {
		t.Fatalf("12 ext %v", q.ExtFields)
	}
	if q := query("U1"); q.Code != remoting.Success {
		t.Fatalf("12 by UNIQ_KEY: %d %q", q.Code, q.Remark)
	}
	if q := query("nothing"); q.Code != remoting.QueryNotFound {
		t.Fatalf("12 of an unknown key: %d", q.Code)
	}

	// 28.
	rt := invoke(t, c, faddr, remoting.NewRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
	mustOK(t, rt)
	var kv broker.KVTable
	if err := json.Unmarshal(rt.Body, &kv); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"brokerVersionDesc", "msgPutTotalTodayNow", "putTps", "commitLogMaxOffset", "earliestMessageTimeStamp", "runtime"} {
		if kv.Table[k] == "" {
			t.Fatalf("runtime info lacks %s: %v", k, kv.Table)
		}
	}
	lt := invoke(t, c, addr, remoting.NewRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
	kv = broker.KVTable{}
	if err := json.Unmarshal(lt.Body, &kv); err != nil || kv.Table["brokerRole"] != "SYNC_MASTER" || kv.Table["msgPutTotalTodayNow"] == "0" {
		t.Fatalf("leader runtime info %v %v", kv.Table, err)
	}

	// 215 through a follower: gone from metadata and from the route.
	mustOK(t, invoke(t, c, faddr, remoting.NewRequest(remoting.DeleteTopicInBroker, map[string]string{"topic": "AdminTopic"}, nil)))
	if _, ok := g.Metadata().Topic("AdminTopic"); ok {
		t.Fatal("topic still in metadata")
	}
	if _, ok := tc.Namesrv.Table().Route("AdminTopic"); ok {
		t.Fatal("topic still routed")
	}
	// Deleting an unknown topic is fine; a malformed request is not.
	mustOK(t, invoke(t, c, addr, remoting.NewRequest(remoting.DeleteTopicInBroker, map[string]string{"topic": "AdminTopic"}, nil)))
	if r := invoke(t, c, addr, remoting.NewRequest(remoting.DeleteTopicInBroker, nil, nil)); r.Code == remoting.Success {
		t.Fatal("215 without topic succeeded")
	}
}

// TestGetBrokerConfig: GET_BROKER_CONFIG (26) answers the node's settings
// as properties text with a DataVersion in ext version.
func TestGetBrokerConfig(t *testing.T) {
	tc := brokertest.StartNode(t, func(_ int, c *broker.Config) {
		c.Settings = map[string]string{"broker_name": "broker-a", "cluster_secret": "(set)"}
	})
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	r := newTestClient(t).call(t, addr, remoting.GetBrokerConfig, nil, nil)
	if r.Code != remoting.Success || string(r.Body) != "broker_name=broker-a\ncluster_secret=(set)\n" {
		t.Fatalf("GET_BROKER_CONFIG: %d %q", r.Code, r.Body)
	}
	if v := r.ExtFields["version"]; !strings.HasPrefix(v, `{"counter":0,"timestamp":`) {
		t.Fatalf("version %q", v)
	}
}

// TestGetSystemTopics: GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305) lists the
// topics the broker writes itself and the auto-create template.
func TestGetSystemTopics(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	r := newTestClient(t).call(t, addr, remoting.GetSystemTopicListFromBroker, nil, nil)
	var list protocol.TopicList
	if err := json.Unmarshal(r.Body, &list); err != nil || r.Code != remoting.Success {
		t.Fatalf("system topics: %d %q %v", r.Code, r.Body, err)
	}
	for _, want := range []string{"TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC"} {
		if !slices.Contains(list.TopicList, want) {
			t.Fatalf("system topics %v lack %s", list.TopicList, want)
		}
	}
}
