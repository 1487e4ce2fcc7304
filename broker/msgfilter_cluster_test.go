package broker_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/remoting"
)

// TestPullSQL92 pulls with SQL92 subscriptions carried by the request and
// registered by a heartbeat; a bad expression gets
// SUBSCRIPTION_PARSE_FAILED, and a broker with the property filter off
// refuses SQL92 as RocketMQ does.
func TestPullSQL92(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	createTestTopic(t, tc, "SQLT", 1)
	g, _ := leaderGroup(t, tc)
	msgs := make([]*message.Ext, 10)
	for i := range msgs {
		m := &message.Ext{BornTimestamp: time.Now().UnixMilli()}
		m.Topic, m.Body = "SQLT", fmt.Appendf(nil, "m%d", i)
		m.Properties = map[string]string{"a": strconv.Itoa(i), message.PropertyTags: []string{"x", "y"}[i%2]}
		msgs[i] = m
	}
	if _, err := g.Propose(testCtx(t), msgs); err != nil {
		t.Fatal(err)
	}
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t)
	pull := func(sysFlag int32, expr, typ string) *remoting.Command {
		ext := pullExt("sqlg", "SQLT", 0, 0, sysFlag, 0, expr)
		ext["expressionType"] = typ
		resp, err := c.Invoke(testCtx(t), addr, remoting.NewRequest(remoting.PullMessage, ext, nil))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	bodies := func(resp *remoting.Command) []string {
		got, _ := decodePull(t, resp)
		var out []string
		for _, m := range got {
			out = append(out, string(m.Body))
		}
		return out
	}
	if got := fmt.Sprint(bodies(pull(broker.PullFlagSubscription, "a > 5 AND TAGS = 'y'", "SQL92"))); got != "[m7 m9]" {
		t.Fatalf("request subscription: %s", got)
	}
	if resp := pull(broker.PullFlagSubscription, "a >", "SQL92"); resp.Code != remoting.SubscriptionParseFailed {
		t.Fatalf("bad expression: %d %s", resp.Code, resp.Remark)
	}
	// The group's heartbeat registers the subscription a push consumer
	// then pulls with (no subscription in the request).
	hb := fmt.Sprintf(`{"clientID":"c1","consumerDataSet":[{"groupName":"sqlg","consumeType":"CONSUME_PASSIVELY",`+
		`"messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[`+
		`{"topic":"SQLT","subString":%q,"tagsSet":[],"codeSet":[],"subVersion":1,"expressionType":"SQL92"}]}]}`, "a BETWEEN 2 AND 4")
	resp, err := c.Invoke(testCtx(t), addr, &remoting.Command{Code: remoting.HeartBeat, Body: []byte(hb)})
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %v %+v", err, resp)
	}
	if got := fmt.Sprint(bodies(pull(0, "", "TAG"))); got != "[m2 m3 m4]" {
		t.Fatalf("heartbeat subscription: %s", got)
	}

	off := brokertest.StartNode(t, func(_ int, c *broker.Config) { c.DisablePropertyFilter = true })
	createTestTopic(t, off, "SQLT", 1)
	oaddr, err := off.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	ext := pullExt("sqlg", "SQLT", 0, 0, broker.PullFlagSubscription, 0, "a > 1")
	ext["expressionType"] = "SQL92"
	if resp, err := c.Invoke(testCtx(t), oaddr, remoting.NewRequest(remoting.PullMessage, ext, nil)); err != nil || resp.Code != remoting.SystemError {
		t.Fatalf("SQL92 with the property filter off: %v %+v", err, resp)
	}
}
