package broker_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/remoting"
)

// TestGroupNamesThatCannotHoldRetries: a consumer group whose %RETRY% topic
// would be longer than 127 bytes is refused wherever it enters, so its
// failed messages stay with the client (which retries them) instead of
// being acknowledged and lost; one of exactly 120 bytes retries end to end.
func TestGroupNamesThatCannotHoldRetries(t *testing.T) {
	tc := delayCluster(t)
	c := newTestClient(t)
	leaderID, addr, g := leaderOf(t, tc)
	_, faddr := followerOf(t, tc, leaderID)
	mustOK(t, c.call(t, addr, remoting.SendMessage, broker.SendRequest("NameTopic", 0, nil, "fail-me").ExtFields, []byte("fail-me")))
	orig := readBack(t, g, "NameTopic", 0, 0)
	sendBack := func(addr, group string) *remoting.Command {
		return c.call(t, addr, remoting.ConsumerSendMsgBack, map[string]string{"group": group, "offset": fmt.Sprint(orig.PhysicalOffset),
			"delayLevel": "1", "originMsgId": orig.MsgID(), "originTopic": "NameTopic", "maxReconsumeTimes": "16"}, nil)
	}

	// 120 bytes: %RETRY%<group> is exactly 127; the retry arrives.
	ok := strings.Repeat("g", 120)
	mustOK(t, c.call(t, addr, remoting.HeartBeat, nil, heartbeatBody("c1", ok, map[string]string{"NameTopic": "*"})))
	mustOK(t, sendBack(addr, ok))
	broker.WaitUntil(t, 10*time.Second, "the retry of the 120-byte group", func() bool { return queueLen(g, "%RETRY%"+ok, 0) == 1 })

	for _, n := range []int{121, 127, 200, 255} {
		group := strings.Repeat("g", n)
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			for _, tt := range []struct {
				what string
				resp func() *remoting.Command
			}{
				{"send-back on the leader", func() *remoting.Command { return sendBack(addr, group) }},
				{"send-back through a follower", func() *remoting.Command { return sendBack(faddr, group) }},
				{"heartbeat", func() *remoting.Command {
					return c.call(t, addr, remoting.HeartBeat, nil, heartbeatBody("c2", group, map[string]string{"NameTopic": "*"}))
				}},
				{"subscription group create", func() *remoting.Command {
					return c.call(t, addr, remoting.UpdateAndCreateSubscriptionGroup, nil, fmt.Appendf(nil, `{"groupName":%q}`, group))
				}},
				{"pull", func() *remoting.Command {
					return c.call(t, addr, remoting.PullMessage, pullExt(group, "NameTopic", 0, 0, broker.PullFlagCommitOffset, 0, ""), nil)
				}},
				{"offset commit", func() *remoting.Command {
					return c.call(t, addr, remoting.UpdateConsumerOffset, map[string]string{
						"consumerGroup": group, "topic": "NameTopic", "queueId": "0", "commitOffset": "1"}, nil)
				}},
				{"the client's fallback send to the retry topic", func() *remoting.Command {
					r := broker.SendRequest("%RETRY%"+group, -1, map[string]string{message.PropertyDelayLevel: "3"}, "fail-me")
					return c.call(t, addr, remoting.SendMessage, r.ExtFields, r.Body)
				}},
			} {
				if r := tt.resp(); r.Code != remoting.InvalidParameter {
					t.Errorf("%s: code %d (%s), want %d INVALID_PARAMETER", tt.what, r.Code, r.Remark, remoting.InvalidParameter)
				}
			}
		})
	}

	// A heartbeat with a valid and a refused group registers the valid one.
	mixed := heartbeatBody("c3", "mixed-ok", map[string]string{"NameTopic": "*"})
	mixed = []byte(strings.Replace(string(mixed), `"consumerDataSet":[`,
		`"consumerDataSet":[{"groupName":"`+strings.Repeat("g", 121)+`","subscriptionDataSet":[{"topic":"NameTopic","subString":"*"}]},`, 1))
	if r := c.call(t, addr, remoting.HeartBeat, nil, mixed); r.Code != remoting.InvalidParameter {
		t.Errorf("mixed heartbeat: %d %s", r.Code, r.Remark)
	}
	if ids := consumerList(t, c, addr, "mixed-ok"); len(ids) != 1 || ids[0] != "c3" {
		t.Errorf("the valid group of a mixed heartbeat: consumers %v", ids)
	}
	// The leader creates its metadata in the background, once per
	// heartbeat that finds it missing (the client heartbeats every 30 s):
	// heartbeat again until it is there, in case leadership moved.
	broker.WaitUntil(t, 10*time.Second, "the valid group's retry topic", func() bool {
		_, laddr, lg := leaderOf(t, tc)
		if _, ok := lg.Metadata().Topic("%RETRY%mixed-ok"); ok {
			return true
		}
		c.call(t, laddr, remoting.HeartBeat, nil, mixed)
		return false
	})

	// Nothing over the limit was created, nothing was parked for a
	// destination that cannot exist.
	mustOK(t, c.call(t, addr, remoting.SendMessage, broker.SendRequest("NameTopic", 0, nil, "last").ExtFields, []byte("last")))
	for _, tcfg := range g.Metadata().Topics() {
		if len(tcfg.TopicName) > message.MaxTopicLength {
			t.Errorf("topic of %d bytes created", len(tcfg.TopicName))
		}
	}
	if _, ok := g.Metadata().Group(strings.Repeat("g", 121)); ok {
		t.Error("a 121-byte group was created")
	}
	if n := queueLen(g, broker.ScheduleTopic, 0); n != 1 {
		t.Errorf("%d messages parked at level 1, want 1 (the 120-byte group's retry)", n)
	}
}
