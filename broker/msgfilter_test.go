package broker

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/remoting"
)

func propsRecord(t testing.TB, props map[string]string) []byte {
	t.Helper()
	m := &message.Ext{BornHost: netip.MustParseAddrPort("10.0.0.1:1"), StoreHost: netip.MustParseAddrPort("10.0.0.2:2")}
	m.Topic, m.Body, m.Properties = "T", []byte("x"), props
	b, err := message.AppendRecord(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMsgFilter(t *testing.T) {
	for _, tt := range []struct {
		expr, typ string
		enabled   bool
		want      error
	}{
		{"*", "", true, nil},
		{"A || B", "TAG", true, nil},
		{"a > 5 AND TAGS IN ('x')", "SQL92", true, nil},
		{"a >", "SQL92", true, ErrSubscriptionParse},
		{"a > 5", "SQL92", false, ErrFilterNotSupported},
		{"a > 5", "SQL", true, ErrFilterNotSupported},
	} {
		_, err := newMsgFilter(tt.expr, tt.typ, tt.enabled)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("%q (%s, enabled %v): %v, want %v", tt.expr, tt.typ, tt.enabled, err, tt.want)
		}
	}
	code, _ := responseFor(fmt.Errorf("x: %w", ErrSubscriptionParse))
	if code != remoting.SubscriptionParseFailed {
		t.Errorf("parse failure answers %d", code)
	}

	sql, err := newMsgFilter("a BETWEEN 0 AND 3 AND TAGS = 'x'", "SQL92", true)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := newMsgFilter("x", "TAG", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		props     map[string]string
		sql, tags bool
	}{
		{map[string]string{"a": "1", message.PropertyTags: "x"}, true, true},
		{map[string]string{"a": "4", message.PropertyTags: "x"}, false, true},
		{map[string]string{"a": "1", message.PropertyTags: "y"}, false, false},
		{map[string]string{"a": "one", message.PropertyTags: "x"}, false, true},
		{map[string]string{message.PropertyTags: "x"}, false, true},
		{map[string]string{"a": "2"}, false, false},
	} {
		rec := propsRecord(t, tt.props)
		if got := sql.match(rec); got != tt.sql {
			t.Errorf("sql on %v: %v", tt.props, got)
		}
		if got := tag.match(rec); got != tt.tags {
			t.Errorf("tag on %v: %v", tt.props, got)
		}
	}
	if sql.match([]byte{1, 2, 3}) {
		t.Error("a record that does not parse matched")
	}
}

// TestPullSQL92 pulls with SQL92 subscriptions carried by the request and
// registered by a heartbeat; a bad expression gets
// SUBSCRIPTION_PARSE_FAILED, and a broker with the property filter off
// refuses SQL92 as RocketMQ does.
func TestPullSQL92(t *testing.T) {
	tc := StartTestCluster(t, 1, nil)
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
	if got := fmt.Sprint(bodies(pull(pullFlagSubscription, "a > 5 AND TAGS = 'y'", "SQL92"))); got != "[m7 m9]" {
		t.Fatalf("request subscription: %s", got)
	}
	if resp := pull(pullFlagSubscription, "a >", "SQL92"); resp.Code != remoting.SubscriptionParseFailed {
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

	off := StartTestCluster(t, 1, func(_ int, c *Config) { c.DisablePropertyFilter = true })
	createTestTopic(t, off, "SQLT", 1)
	oaddr, err := off.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	ext := pullExt("sqlg", "SQLT", 0, 0, pullFlagSubscription, 0, "a > 1")
	ext["expressionType"] = "SQL92"
	if resp, err := c.Invoke(testCtx(t), oaddr, remoting.NewRequest(remoting.PullMessage, ext, nil)); err != nil || resp.Code != remoting.SystemError {
		t.Fatalf("SQL92 with the property filter off: %v %+v", err, resp)
	}
}
