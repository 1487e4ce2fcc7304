package broker

import (
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

// TestHandlerTable pins which pool serves each request code and which are
// the leader's only (a follower forwards them), and checks every row has
// one handler, a known pool and a code of its own.
func TestHandlerTable(t *testing.T) {
	want := map[int32]struct {
		pool   string
		leader bool
	}{
		remoting.SendMessage: {poolSend, false}, remoting.SendMessageV2: {poolSend, false},
		remoting.SendBatchMessage: {poolSend, false}, remoting.ConsumerSendMsgBack: {poolSend, true},
		remoting.EndTransaction: {poolSend, false}, remoting.RecallMessage: {poolSend, true},
		remoting.SendReplyMessage: {poolSend, false}, remoting.SendReplyMessageV2: {poolSend, false},
		remoting.HeartBeat: {poolHeartbeat, false}, remoting.UnregisterClient: {poolHeartbeat, false},
		remoting.LockBatchMQ: {poolHeartbeat, true}, remoting.UnlockBatchMQ: {poolHeartbeat, true},
		remoting.GetConsumerListByGroup: {poolPull, false}, remoting.PullMessage: {poolPull, false},
		remoting.LitePullMessage:     {poolPull, false},
		remoting.QueryConsumerOffset: {poolPull, true}, remoting.UpdateConsumerOffset: {poolPull, true},
		remoting.GetMaxOffset: {poolPull, false}, remoting.GetMinOffset: {poolPull, false},
		remoting.SearchOffsetByTimestamp: {poolPull, false}, remoting.GetEarliestMsgStoretime: {poolPull, false},
		remoting.PopMessage: {poolPop, true}, remoting.AckMessage: {poolPull, true},
		remoting.ChangeMessageInvisibleTime: {poolPull, true},
		remoting.PeekMessage:                {poolPull, true}, remoting.Notification: {poolPop, true},
		remoting.PollingInfo: {poolPull, true}, remoting.BatchAckMessage: {poolPull, true},
		remoting.UpdateAndCreateTopic: {poolAdmin, true}, remoting.DeleteTopicInBroker: {poolAdmin, true},
		remoting.GetAllTopicConfig: {poolAdmin, false}, remoting.GetBrokerRuntimeInfo: {poolAdmin, false},
		remoting.ViewMessageByID: {poolAdmin, false}, remoting.QueryMessage: {poolAdmin, false},
		remoting.GetTopicStatsInfo: {poolAdmin, false}, remoting.GetConsumerConnectionList: {poolAdmin, false},
		remoting.GetConsumeStats: {poolAdmin, false}, remoting.GetProducerConnectionList: {poolAdmin, false},
		remoting.GetBrokerConsumeStats:        {poolAdmin, false},
		remoting.ViewBrokerStatsData:          {poolAdmin, false},
		remoting.GetBrokerClusterACLConfig:    {poolAdmin, false},
		remoting.UpdateBrokerConfig:           {poolAdmin, true},
		remoting.QueryTopicConsumeByWho:       {poolAdmin, false},
		remoting.QueryConsumeTimeSpan:         {poolAdmin, false},
		remoting.QueryConsumeQueue:            {poolAdmin, false},
		remoting.GetBrokerConfig:              {poolAdmin, false},
		remoting.GetSystemTopicListFromBroker: {poolAdmin, false},
		remoting.GetConsumerRunningInfo:       {poolAdmin, false}, remoting.ConsumeMessageDirectly: {poolAdmin, false},
		remoting.InvokeBrokerToResetOffset:        {poolAdmin, true},
		remoting.CloneGroupOffset:                 {poolAdmin, true},
		remoting.UpdateAndCreateSubscriptionGroup: {poolAdmin, true}, remoting.DeleteSubscriptionGroup: {poolAdmin, true},
		remoting.GetAllSubscriptionGroupConfig: {poolAdmin, false}, remoting.GetSubscriptionGroupConfig: {poolAdmin, false},
		remoting.RaftStatus: {poolAdmin, false}, remoting.RaftRemoveNode: {poolAdmin, true},
		remoting.RaftAddNode: {poolAdmin, true}, remoting.RaftTransferLeader: {poolAdmin, true},
		remoting.RaftDrain:         {poolAdmin, false},
		remoting.ListPendingTimers: {poolAdmin, true}, remoting.ListPendingTransactions: {poolAdmin, true},
		remoting.UpdateACL: {poolAdmin, true}, remoting.ListPopState: {poolAdmin, true},
	}
	rows := (&Broker{}).handlers()
	seen := map[int32]bool{}
	for _, r := range rows {
		name := remoting.RequestCodeName(r.code)
		w, ok := want[r.code]
		if !ok {
			t.Errorf("%s: not expected in the table", name)
			continue
		}
		if seen[r.code] {
			t.Errorf("%s: two rows", name)
		}
		seen[r.code] = true
		if r.pool != w.pool || (r.leader != nil) != w.leader || (r.serve != nil) == (r.leader != nil) {
			t.Errorf("%s: pool %q leader %v serve %v, want pool %q leader %v",
				name, r.pool, r.leader != nil, r.serve != nil, w.pool, w.leader)
		}
		if _, ok := pools[r.pool]; !ok {
			t.Errorf("%s: unknown pool %q", name, r.pool)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d codes served, want %d", len(seen), len(want))
	}
}
