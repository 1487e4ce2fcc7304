package broker_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/broker"
	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/remoting"
)

// LOCK_BATCH_MQ used to lock anything: topic ../x, queue -1, 100 000
// queues of topics that do not exist (the table grew to 634 MiB). The
// broker now grants only queues of its existing topics, still grants
// those, and refuses over-long group names.
func TestLockBatchOnlyExistingQueues(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	createTestTopic(t, tc, "LockT", 4)
	addr, err := tc.LeaderAddr(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t)
	lockReq := func(group string, mqs []broker.MQJSON) *remoting.Command {
		body, _ := json.Marshal(broker.LockBatchBody{ConsumerGroup: group, ClientID: "127.0.0.1@1", MQSet: mqs})
		return c.call(t, addr, remoting.LockBatchMQ, nil, body)
	}
	granted := func(resp *remoting.Command) []broker.MQJSON {
		t.Helper()
		var res broker.LockBatchResult
		if resp.Code != remoting.Success {
			t.Fatalf("%+v", resp)
		}
		if err := json.Unmarshal(resp.Body, &res); err != nil {
			t.Fatal(err)
		}
		return res.LockOKMQSet
	}
	bogus := []broker.MQJSON{{Topic: "../x", BrokerName: "broker-a", QueueID: 0}, {Topic: "LockT", BrokerName: "broker-a", QueueID: -1}, {Topic: "LockT", BrokerName: "broker-a", QueueID: 4}, {Topic: "LockT", BrokerName: "broker-b", QueueID: 0}}
	for i := range 10_000 {
		bogus = append(bogus, broker.MQJSON{Topic: fmt.Sprint("NoSuchTopic", i), BrokerName: "broker-a", QueueID: int32(i % 8)})
	}
	if got := granted(lockReq("cg", bogus)); len(got) != 0 {
		t.Fatalf("granted %d queues that do not exist, e.g. %v", len(got), got[0])
	}
	valid := []broker.MQJSON{{Topic: "LockT", BrokerName: "broker-a", QueueID: 0}, {Topic: "LockT", BrokerName: "broker-a", QueueID: 3}}
	if got := granted(lockReq("cg", append(bogus[:3:3], valid...))); !reflect.DeepEqual(got, valid) {
		t.Fatalf("granted %v, want %v", got, valid)
	}
	_, leaderID := leaderGroup(t, tc)
	b := tc.Broker(leaderID)
	if leases, groups := b.LockTableSizeForTest(); leases != 2 || groups != 1 {
		t.Fatalf("table holds %d leases in %d groups, want 2 in 1", leases, groups)
	}
	if resp := lockReq(strings.Repeat("g", broker.MaxLockGroupLen+1), valid); resp.Code == remoting.Success {
		t.Fatalf("an over-long group was served: %+v", resp)
	}
}
