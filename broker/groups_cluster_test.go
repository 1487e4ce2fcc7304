package broker_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/remoting"
)

func testSubscriptionGroups(t *testing.T, tc *brokertest.Cluster, c *remoting.Client) {
	leaderID, addr, g := leaderOf(t, tc)
	fid, faddr := followerOf(t, tc, leaderID)

	// 200 through a follower: forwarded, replicated; omitted fields take
	// RocketMQ's defaults.
	create := remoting.NewRequest(remoting.UpdateAndCreateSubscriptionGroup, nil,
		[]byte(`{"groupName":"admin-cg","consumeBroadcastEnable":false,"retryMaxTimes":3}`))
	mustOK(t, invoke(t, c, faddr, create))
	want := broker.DefaultSubscriptionGroup("admin-cg")
	want.ConsumeBroadcastEnable, want.RetryMaxTimes = false, 3
	if got, ok := g.Metadata().Group("admin-cg"); !ok || got != want {
		t.Fatalf("created %+v %v, want %+v", got, ok, want)
	}
	fg := tc.Raft.Node(fid).Group()
	broker.WaitUntil(t, 10*time.Second, "the group on the follower", func() bool {
		got, ok := fg.Metadata().Group("admin-cg")
		return ok && got == want
	})

	// 201 and 352 from the follower's replica.
	resp := invoke(t, c, faddr, remoting.NewRequest(remoting.GetAllSubscriptionGroupConfig, nil, nil))
	mustOK(t, resp)
	var all broker.SubscriptionGroupWrapper
	if err := json.Unmarshal(resp.Body, &all); err != nil {
		t.Fatal(err)
	}
	if c := all.SubscriptionGroupTable["admin-cg"]; c.Metadata() != want || all.DataVersion.Counter == 0 {
		t.Fatalf("201 answered %s", resp.Body)
	}
	resp = invoke(t, c, faddr, remoting.NewRequest(remoting.GetSubscriptionGroupConfig, map[string]string{"group": "admin-cg"}, nil))
	mustOK(t, resp)
	var one metadata.SubscriptionGroup
	if err := json.Unmarshal(resp.Body, &one); err != nil || one != want {
		t.Fatalf("352 answered %s (%v)", resp.Body, err)
	}

	// 207 on the leader; afterwards 352 answers SUBSCRIPTION_GROUP_NOT_EXIST.
	mustOK(t, invoke(t, c, addr, remoting.NewRequest(remoting.DeleteSubscriptionGroup, map[string]string{"groupName": "admin-cg"}, nil)))
	if _, ok := g.Metadata().Group("admin-cg"); ok {
		t.Fatal("group still there after 207")
	}
	resp = invoke(t, c, addr, remoting.NewRequest(remoting.GetSubscriptionGroupConfig, map[string]string{"group": "admin-cg"}, nil))
	if resp.Code != remoting.SubscriptionGroupNotExist {
		t.Fatalf("352 after delete: %d %s", resp.Code, resp.Remark)
	}

	// Hostile requests are refused and change nothing.
	for _, body := range []string{``, `{`, `{"groupName":""}`, `{"groupName":"bad group"}`, `{"groupName":"g","retryQueueNums":-1}`, `{"groupName":"g","retryMaxTimes":"x"}`} {
		if resp := invoke(t, c, addr, remoting.NewRequest(remoting.UpdateAndCreateSubscriptionGroup, nil, []byte(body))); resp.Code == remoting.Success {
			t.Errorf("200 with %q accepted", body)
		}
	}
	if resp := invoke(t, c, addr, remoting.NewRequest(remoting.DeleteSubscriptionGroup, nil, nil)); resp.Code == remoting.Success {
		t.Error("207 without groupName accepted")
	}
	if resp := invoke(t, c, addr, remoting.NewRequest(remoting.GetSubscriptionGroupConfig, nil, nil)); resp.Code == remoting.Success {
		t.Error("352 without group accepted")
	}
	if _, ok := g.Metadata().Group("g"); ok {
		t.Error("a refused 200 created a group")
	}
}
