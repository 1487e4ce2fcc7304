package compat

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// TestDashboardExporterCalls replays, request by request, what
// rocketmq-exporter's collectors and rocketmq-dashboard's cluster, topic,
// consumer and message pages ask of a name server and a broker, in the
// layouts Java's MQAdminExt sends (language JAVA, its ext names and
// string values): each is answered, and each body reads as RocketMQ's
// classes write it. A request ledgermq does not serve is refused with
// REQUEST_CODE_NOT_SUPPORTED, not left unanswered.
func TestDashboardExporterCalls(t *testing.T) {
	tc := brokertest.StartCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitRoute(t, ctx, tc, "TBW102")
	ns := tc.NamesrvAddr()
	const topic, group = "DashTopic", "dash-cg"
	createTopic(t, ctx, []string{ns}, topic)
	p, err := client.NewProducer(client.WithNameServers(ns), client.WithGroup("dash-pg"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var last client.SendResult
	for i := 0; i < 8; i++ {
		if last, err = p.Send(ctx, &client.Message{Topic: topic, Keys: []string{fmt.Sprintf("dash-%d", i)}, Body: []byte("dash")}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.NewPushConsumer(client.WithNameServers(ns), client.WithGroup(group), client.WithConsumeFromWhere(client.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Subscribe(topic, client.Selector{}, func(context.Context, *client.MessageExt) client.ConsumeResult { return client.ConsumeSuccess }); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	broker, err := tc.LeaderAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}

	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	call := func(addr string, code int32, ext map[string]string, want int32) *remoting.Command {
		t.Helper()
		req := remoting.NewRequest(code, ext, nil)
		req.Language, req.Version = remoting.LanguageJava, 399 // RocketMQ 4.9.x's MQAdminExt
		resp, err := rc.Invoke(ctx, addr, req)
		if err != nil {
			t.Fatalf("%s: %v", remoting.RequestCodeName(code), err)
		}
		if resp.Code != want {
			t.Fatalf("%s: code %d %q, want %d", remoting.RequestCodeName(code), resp.Code, resp.Remark, want)
		}
		return resp
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	ok := remoting.Success
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)

	// Name server: cluster, topics, a route, the ordered-topic namespace.
	ci, err := protocol.DecodeClusterInfo(call(ns, remoting.GetBrokerClusterInfo, nil, ok).Body)
	must("cluster info", err)
	if len(ci.BrokerAddrTable) == 0 {
		t.Fatalf("cluster info lists no broker: %+v", ci)
	}
	tl, err := protocol.DecodeTopicList(call(ns, remoting.GetAllTopicListFromNameServer, nil, ok).Body)
	must("topic list", err)
	if !slices.Contains(tl.TopicList, topic) {
		t.Fatalf("topic list lacks %s: %v", topic, tl.TopicList)
	}
	_, err = protocol.DecodeTopicRouteData(call(ns, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, ok).Body)
	must("route", err)
	call(ns, remoting.GetKVListByNamespace, map[string]string{"namespace": protocol.NamespaceOrderTopicConfig}, remoting.QueryNotFound)

	// Broker: what the exporter's collectors read.
	ts, err := protocol.DecodeTopicStatsTable(call(broker, remoting.GetTopicStatsInfo, map[string]string{"topic": topic}, ok).Body)
	must("topic stats", err)
	if len(ts.OffsetTable) == 0 {
		t.Fatalf("topic stats: %+v", ts)
	}
	_, err = protocol.DecodeGroupList(call(broker, remoting.QueryTopicConsumeByWho, map[string]string{"topic": topic}, ok).Body)
	must("topic consumed by", err)
	_, err = protocol.DecodeConsumeStats(call(broker, remoting.GetConsumeStats, map[string]string{"consumerGroup": group, "topic": topic}, ok).Body)
	must("consume stats", err)
	var conns *protocol.ConsumerConnection
	waitFor(t, ctx, "the consumer online", func() bool {
		req := remoting.NewRequest(remoting.GetConsumerConnectionList, map[string]string{"consumerGroup": group}, nil)
		resp, err := rc.Invoke(ctx, broker, req)
		if err != nil || resp.Code != ok {
			return false
		}
		conns, err = protocol.DecodeConsumerConnection(resp.Body)
		return err == nil && len(conns.ConnectionSet) == 1
	})
	kv, err := protocol.DecodeKVTable(call(broker, remoting.GetBrokerRuntimeInfo, nil, ok).Body)
	must("runtime info", err)
	if kv.Table["commitLogMaxOffset"] == "" {
		t.Fatalf("runtime info: %v", kv.Table)
	}
	// The group the consumer's heartbeat created, with its topic.
	waitFor(t, ctx, "the group in GET_BROKER_CONSUME_STATS", func() bool {
		bcs, err := protocol.DecodeConsumeStatsList(call(broker, remoting.GetBrokerConsumeStats, map[string]string{"isOrder": "false"}, ok).Body)
		must("broker consume stats", err)
		if bcs.BrokerAddr != broker {
			t.Fatalf("broker consume stats of %s name %s", broker, bcs.BrokerAddr)
		}
		for _, g := range bcs.Groups {
			for _, cs := range g.Stats {
				for mq := range cs.OffsetTable {
					if g.Group == group && mq.Topic == topic {
						return true
					}
				}
			}
		}
		return false
	})
	// VIEW_BROKER_STATS_DATA: the exporter's and statsAll's statistics, as
	// fastjson's BrokerStatsData; one no send or pull made does not exist.
	for _, st := range [][2]string{{"TOPIC_PUT_NUMS", topic}, {"TOPIC_PUT_SIZE", topic}, {"BROKER_PUT_NUMS", "DefaultCluster"}} {
		_, err := protocol.DecodeBrokerStatsData(call(broker, remoting.ViewBrokerStatsData, map[string]string{"statsName": st[0], "statsKey": st[1]}, ok).Body)
		must(st[0], err)
	}
	call(broker, remoting.ViewBrokerStatsData, map[string]string{"statsName": "TOPIC_PUT_NUMS", "statsKey": "NoSuchTopic"}, remoting.SystemError)

	// Broker: what the dashboard's pages read.
	_, err = protocol.DecodeSubscriptionGroupWrapper(call(broker, remoting.GetAllSubscriptionGroupConfig, nil, ok).Body)
	must("groups", err)
	_, err = protocol.DecodeTopicConfigWrapper(call(broker, remoting.GetAllTopicConfig, nil, ok).Body)
	must("topic configs", err)
	if cfg := protocol.DecodeBrokerConfig(call(broker, remoting.GetBrokerConfig, nil, ok).Body); cfg["brokerName"] == "" {
		t.Fatalf("broker config: %v", cfg)
	}
	q := call(broker, remoting.QueryMessage, map[string]string{"topic": topic, "key": "dash-3", "maxNum": "32",
		"beginTimestamp": "0", "endTimestamp": now}, ok)
	if len(q.Body) == 0 {
		t.Fatal("QUERY_MESSAGE by key found nothing")
	}
	_, off, err := message.ParseOffsetMsgID(last.OffsetMsgID)
	must("offset message id", err)
	if v := call(broker, remoting.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(off, 10)}, ok); len(v.Body) == 0 {
		t.Fatal("VIEW_MESSAGE_BY_ID returned no record")
	}
	call(broker, remoting.QueryConsumeTimeSpan, map[string]string{"topic": topic, "group": group}, ok)
}
