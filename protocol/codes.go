package protocol

import "github.com/ledgermq/ledgermq/remoting"

// Server says which of ledgermq's servers answer a request code.
type Server uint8

const (
	// Neither: no ledgermq server has a handler; the code is answered
	// REQUEST_CODE_NOT_SUPPORTED (a request a broker sends to a client,
	// such as CHECK_TRANSACTION_STATE, is not served by servers either).
	Neither Server = 0
	// Broker: every broker node serves it (a follower forwards what only
	// the leader serves).
	Broker Server = 1 << iota
	// Namesrv: the name server serves it.
	Namesrv
)

// RequestCode is one row of the table of RocketMQ's request codes: its
// number and Java name (RequestCode.java), which ledgermq server serves
// it, and why a code no server serves is not served.
type RequestCode struct {
	Code   int32
	Name   string
	Served Server
	// Note says what serving it involves, or why it is not served, or, for
	// a request a server sends to a client, who sends it.
	Note string
}

// RequestCodes is every request code of RocketMQ 4.x and 5.x's remoting
// protocol, in code order, and ledgermq's own (4001–4014). The POP codes
// (200050 and up) exceed int16: they are sent with JSON headers only. The broker's
// and the name server's tests hold their handler tables to it, and
// CODES.md is rendered from it (TestRequestCodesDoc), so neither can drift.
var RequestCodes = []RequestCode{
	{remoting.SendMessage, "SEND_MESSAGE", Broker, "rocketmq-client-go's single sends; our client's"},
	{remoting.PullMessage, "PULL_MESSAGE", Broker, "long polling; any replica serves committed data"},
	{remoting.QueryMessage, "QUERY_MESSAGE", Broker, "look-up by key or UNIQ_KEY in the IndexFile"},
	{remoting.QueryBrokerOffset, "QUERY_BROKER_OFFSET", Neither, "not sent by the 4.x clients or tools"},
	{remoting.QueryConsumerOffset, "QUERY_CONSUMER_OFFSET", Broker, ""},
	{remoting.UpdateConsumerOffset, "UPDATE_CONSUMER_OFFSET", Broker, "replicated through raft, coalesced"},
	{remoting.UpdateAndCreateTopic, "UPDATE_AND_CREATE_TOPIC", Broker, "replicated through raft"},
	{remoting.UpdateAndCreateTopicList, "UPDATE_AND_CREATE_TOPIC_LIST", Neither, "not yet served (5.x tools); UPDATE_AND_CREATE_TOPIC per topic"},
	{remoting.GetAllTopicConfig, "GET_ALL_TOPIC_CONFIG", Broker, ""},
	{remoting.GetTopicConfigList, "GET_TOPIC_CONFIG_LIST", Neither, "not yet served (5.x tools); GET_ALL_TOPIC_CONFIG"},
	{remoting.GetTopicNameList, "GET_TOPIC_NAME_LIST", Neither, "not yet served; GET_ALL_TOPIC_CONFIG"},
	{remoting.UpdateBrokerConfig, "UPDATE_BROKER_CONFIG", Broker, "maxMessageSize, the group's (replicated; it may only grow); any other key is refused by name: a node's settings come from its config file at start"},
	{remoting.GetBrokerConfig, "GET_BROKER_CONFIG", Broker, "the node's effective settings (secrets redacted), as properties text"},
	{remoting.TriggerDeleteFiles, "TRIGGER_DELETE_FILES", Neither, "retention runs on its schedule and when the disk is full"},
	{remoting.GetBrokerRuntimeInfo, "GET_BROKER_RUNTIME_INFO", Broker, ""},
	{remoting.SearchOffsetByTimestamp, "SEARCH_OFFSET_BY_TIMESTAMP", Broker, ""},
	{remoting.GetMaxOffset, "GET_MAX_OFFSET", Broker, ""},
	{remoting.GetMinOffset, "GET_MIN_OFFSET", Broker, ""},
	{remoting.GetEarliestMsgStoretime, "GET_EARLIEST_MSG_STORETIME", Broker, ""},
	{remoting.ViewMessageByID, "VIEW_MESSAGE_BY_ID", Broker, "offset message ids; every replica holds the same offsets"},
	{remoting.HeartBeat, "HEART_BEAT", Broker, ""},
	{remoting.UnregisterClient, "UNREGISTER_CLIENT", Broker, ""},
	{remoting.ConsumerSendMsgBack, "CONSUMER_SEND_MSG_BACK", Broker, "retry and dead-letter queues"},
	{remoting.EndTransaction, "END_TRANSACTION", Broker, "decided exactly once through raft"},
	{remoting.GetConsumerListByGroup, "GET_CONSUMER_LIST_BY_GROUP", Broker, ""},
	{remoting.CheckTransactionState, "CHECK_TRANSACTION_STATE", Neither, "broker → producer: the leader's check-back of undecided transactions"},
	{remoting.NotifyConsumerIdsChanged, "NOTIFY_CONSUMER_IDS_CHANGED", Neither, "broker → consumer"},
	{remoting.LockBatchMQ, "LOCK_BATCH_MQ", Broker, "orderly consumption; locks held by the leader"},
	{remoting.UnlockBatchMQ, "UNLOCK_BATCH_MQ", Broker, ""},
	{remoting.GetAllConsumerOffset, "GET_ALL_CONSUMER_OFFSET", Neither, "master/slave synchronisation; a raft group replicates offsets itself"},
	{remoting.GetAllDelayOffset, "GET_ALL_DELAY_OFFSET", Neither, "master/slave synchronisation; the delay scheduler's progress is replicated through raft"},
	{46, "CHECK_CLIENT_CONFIG", Neither, "not yet served (filter-server era client check)"},
	{47, "GET_CLIENT_CONFIG", Neither, "not sent by the 4.x clients"},
	{50, "UPDATE_AND_CREATE_ACL_CONFIG", Neither, "not yet served; the ACL is the group's plain_acl.yml, replicated through raft (edit one node's file)"},
	{51, "DELETE_ACL_CONFIG", Neither, "not yet served; as UPDATE_AND_CREATE_ACL_CONFIG"},
	{52, "GET_BROKER_CLUSTER_ACL_INFO", Neither, "not yet served; GET_BROKER_RUNTIME_INFO shows each node's aclHash and aclIndex"},
	{53, "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG", Neither, "not yet served; the white list is in plain_acl.yml"},
	{remoting.GetBrokerClusterACLConfig, "GET_BROKER_CLUSTER_ACL_CONFIG", Broker, "the group's rules in force as plain_acl.yml writes them (an admin account; refused with ACL off): the console's ACL page, rocketmq-dashboard's, and `ledgermq proxy --acl-enable`, which checks calls against them"},
	{60, "GET_TIMER_CHECK_POINT", Neither, "RocketMQ 5's timer store; `admin pending timers` lists what waits"},
	{61, "GET_TIMER_METRICS", Neither, "RocketMQ 5's timer store"},
	{remoting.PutKVConfig, "PUT_KV_CONFIG", Namesrv, "the name server's KV configuration, in its --kv-config file (memory only without one)"},
	{remoting.GetKVConfig, "GET_KV_CONFIG", Namesrv, ""},
	{remoting.DeleteKVConfig, "DELETE_KV_CONFIG", Namesrv, ""},
	{remoting.RegisterBroker, "REGISTER_BROKER", Namesrv, "every node, signed with the cluster secret when set"},
	{remoting.UnregisterBroker, "UNREGISTER_BROKER", Namesrv, ""},
	{remoting.GetRouteInfoByTopic, "GET_ROUTEINFO_BY_TOPIC", Namesrv, "the leader is brokerId 0"},
	{remoting.GetBrokerClusterInfo, "GET_BROKER_CLUSTER_INFO", Namesrv, ""},
	{remoting.UpdateAndCreateSubscriptionGroup, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP", Broker, "replicated through raft"},
	{remoting.GetAllSubscriptionGroupConfig, "GET_ALL_SUBSCRIPTIONGROUP_CONFIG", Broker, ""},
	{remoting.GetTopicStatsInfo, "GET_TOPIC_STATS_INFO", Broker, ""},
	{remoting.GetConsumerConnectionList, "GET_CONSUMER_CONNECTION_LIST", Broker, ""},
	{remoting.GetProducerConnectionList, "GET_PRODUCER_CONNECTION_LIST", Broker, ""},
	{remoting.WipeWritePermOfBroker, "WIPE_WRITE_PERM_OF_BROKER", Namesrv, "the group's queues lose write permission in this name server's routes until its leader registers a changed topic table"},
	{remoting.GetAllTopicListFromNameServer, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER", Namesrv, ""},
	{remoting.DeleteSubscriptionGroup, "DELETE_SUBSCRIPTIONGROUP", Broker, "with the group's offsets"},
	{remoting.GetConsumeStats, "GET_CONSUME_STATS", Broker, ""},
	{209, "SUSPEND_CONSUMER", Neither, "removed from RocketMQ's tools"},
	{210, "RESUME_CONSUMER", Neither, "removed from RocketMQ's tools"},
	{211, "RESET_CONSUMER_OFFSET_IN_CONSUMER", Neither, "removed from RocketMQ's tools"},
	{remoting.ResetConsumerOffsetInBroker, "RESET_CONSUMER_OFFSET_IN_BROKER", Neither, "removed from RocketMQ's tools; INVOKE_BROKER_TO_RESET_OFFSET"},
	{213, "ADJUST_CONSUMER_THREAD_POOL", Neither, "removed from RocketMQ's tools"},
	{214, "WHO_CONSUME_THE_MESSAGE", Neither, "removed from RocketMQ's tools"},
	{remoting.DeleteTopicInBroker, "DELETE_TOPIC_IN_BROKER", Broker, "replicated through raft"},
	{remoting.DeleteTopicInNamesrv, "DELETE_TOPIC_IN_NAMESRV", Namesrv, ""},
	{remoting.RegisterTopicInNamesrv, "REGISTER_TOPIC_IN_NAMESRV", Neither, "not yet served; brokers register their topics with REGISTER_BROKER"},
	{remoting.GetKVListByNamespace, "GET_KVLIST_BY_NAMESPACE", Namesrv, "namespace ORDER_TOPIC_CONFIG is routes' orderTopicConf"},
	{remoting.ResetConsumerClientOffset, "RESET_CONSUMER_CLIENT_OFFSET", Neither, "broker → consumer, after an offset reset"},
	{remoting.GetConsumerStatusFromClient, "GET_CONSUMER_STATUS_FROM_CLIENT", Neither, "broker → consumer; not yet sent"},
	{remoting.InvokeBrokerToResetOffset, "INVOKE_BROKER_TO_RESET_OFFSET", Broker, "replicated through raft, then pushed to the consumers"},
	{remoting.InvokeBrokerToGetConsumerStatus, "INVOKE_BROKER_TO_GET_CONSUMER_STATUS", Neither, "not yet served"},
	{remoting.GetTopicsByCluster, "GET_TOPICS_BY_CLUSTER", Namesrv, "the topics the cluster's broker groups serve (rocketmq-dashboard's topic page)"},
	{225, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST", Neither, "not yet served (5.x tools); one group per request"},
	{remoting.QueryTopicConsumeByWho, "QUERY_TOPIC_CONSUME_BY_WHO", Broker, "the groups subscribed to a topic or with offsets of it (rocketmq-dashboard, rocketmq-exporter)"},
	{301, "REGISTER_FILTER_SERVER", Neither, "filter servers were removed from RocketMQ; tag and SQL92 filters run in the broker"},
	{302, "REGISTER_MESSAGE_FILTER_CLASS", Neither, "filter classes were removed from RocketMQ"},
	{remoting.QueryConsumeTimeSpan, "QUERY_CONSUME_TIME_SPAN", Broker, "per queue: oldest, newest and last consumed store times, and the wait of the next (rocketmq-dashboard)"},
	{remoting.GetSystemTopicListFromNS, "GET_SYSTEM_TOPIC_LIST_FROM_NS", Namesrv, "the cluster and broker group names, and a broker to ask for its own"},
	{remoting.GetSystemTopicListFromBroker, "GET_SYSTEM_TOPIC_LIST_FROM_BROKER", Broker, "the topics the broker writes itself and the auto-create template"},
	{306, "CLEAN_EXPIRED_CONSUMEQUEUE", Neither, "ConsumeQueue files go with the CommitLog segments they index"},
	{remoting.GetConsumerRunningInfo, "GET_CONSUMER_RUNNING_INFO", Broker, "relayed to the consumer's connection (this node's heartbeats), bounded wait"},
	{308, "QUERY_CORRECTION_OFFSET", Neither, "not yet served"},
	{remoting.ConsumeMessageDirectly, "CONSUME_MESSAGE_DIRECTLY", Broker, "relayed to the consumer with the stored record of msgId"},
	{remoting.SendMessageV2, "SEND_MESSAGE_V2", Broker, "the Java client's sends"},
	{311, "GET_UNIT_TOPIC_LIST", Neither, "unit (multi-region) topics are not supported"},
	{312, "GET_HAS_UNIT_SUB_TOPIC_LIST", Neither, "unit topics are not supported"},
	{313, "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST", Neither, "unit topics are not supported"},
	{remoting.CloneGroupOffset, "CLONE_GROUP_OFFSET", Broker, "the leader commits the source group's offsets for the destination through raft"},
	{remoting.ViewBrokerStatsData, "VIEW_BROKER_STATS_DATA", Broker, "the node's last minute, hour and day of TOPIC_PUT_*, GROUP_GET_*, SNDBCK_PUT_NUMS, BROKER_PUT/GET_NUMS (mqadmin statsAll, dashboard, exporter)"},
	{316, "CLEAN_UNUSED_TOPIC", Neither, "not yet served"},
	{remoting.GetBrokerConsumeStats, "GET_BROKER_CONSUME_STATS", Broker, "every group's lag on the broker (rocketmq-exporter, mqadmin brokerConsumeStats)"},
	{remoting.UpdateNamesrvConfig, "UPDATE_NAMESRV_CONFIG", Neither, "a name server's settings are its flags"},
	{remoting.GetNamesrvConfig, "GET_NAMESRV_CONFIG", Neither, "a name server's settings are its flags; `ledgermq namesrv --check-config`"},
	{remoting.SendBatchMessage, "SEND_BATCH_MESSAGE", Broker, "all or nothing, one raft entry"},
	{remoting.QueryConsumeQueue, "QUERY_CONSUME_QUEUE", Broker, "a queue's ConsumeQueue units from an index, with a group's filter verdicts (mqadmin queryCq)"},
	{remoting.QueryDataVersion, "QUERY_DATA_VERSION", Neither, "brokers register every 30 s and at once on a role change instead"},
	{323, "RESUME_CHECK_HALF_MESSAGE", Neither, "not yet served"},
	{remoting.SendReplyMessage, "SEND_REPLY_MESSAGE", Broker, "request-reply: stored in <cluster>_REPLY_TOPIC through raft and pushed to the requester"},
	{remoting.SendReplyMessageV2, "SEND_REPLY_MESSAGE_V2", Broker, "as SEND_REPLY_MESSAGE, the one-letter header names"},
	{remoting.PushReplyMessageToClient, "PUSH_REPLY_MESSAGE_TO_CLIENT", Neither, "broker → requester: the leader pushes a reply over the requester's heartbeat connection"},
	{remoting.AddWritePermOfBroker, "ADD_WRITE_PERM_OF_BROKER", Namesrv, "the group's queues become readable and writable in this name server's routes"},
	{328, "GET_ALL_PRODUCER_INFO", Neither, "not yet served (5.x tools)"},
	{329, "DELETE_EXPIRED_COMMITLOG", Neither, "retention deletes expired segments on its schedule"},
	{343, "QUERY_TOPICS_BY_CONSUMER", Neither, "not yet served (5.x tools)"},
	{345, "QUERY_SUBSCRIPTION_BY_CONSUMER", Neither, "not yet served (5.x tools)"},
	{remoting.GetTopicConfig, "GET_TOPIC_CONFIG", Neither, "not yet served (5.x tools); GET_ALL_TOPIC_CONFIG"},
	{remoting.GetSubscriptionGroupConfig, "GET_SUBSCRIPTIONGROUP_CONFIG", Broker, ""},
	{353, "UPDATE_AND_GET_GROUP_FORBIDDEN", Neither, "RocketMQ 5"},
	{354, "CHECK_ROCKSDB_CQ_WRITE_PROGRESS", Neither, "RocketMQ 5's RocksDB ConsumeQueue"},
	{remoting.LitePullMessage, "LITE_PULL_MESSAGE", Broker, "the Java DefaultLitePullConsumer's pulls, served as PULL_MESSAGE"},
	{remoting.RecallMessage, "RECALL_MESSAGE", Broker, "RocketMQ 5.3: a timer message recalled before it is due, by the handle its send answered; replicated through raft"},
	{400, "QUERY_ASSIGNMENT", Neither, "RocketMQ 5's server-side rebalance"},
	{401, "SET_MESSAGE_REQUEST_MODE", Neither, "RocketMQ 5's pop mode"},
	{402, "GET_ALL_MESSAGE_REQUEST_MODE", Neither, "RocketMQ 5's pop mode"},
	{513, "UPDATE_AND_CREATE_STATIC_TOPIC", Neither, "RocketMQ 5's static topics"},
	{901, "GET_BROKER_MEMBER_GROUP", Neither, "RocketMQ 5's controller mode; a raft group has its own membership (RAFT_STATUS)"},
	{902, "ADD_BROKER", Neither, "RocketMQ 5's controller mode; RAFT_ADD_NODE"},
	{903, "REMOVE_BROKER", Neither, "RocketMQ 5's controller mode; RAFT_REMOVE_NODE"},
	{904, "BROKER_HEARTBEAT", Neither, "RocketMQ 5's controller mode"},
	{905, "NOTIFY_MIN_BROKER_ID_CHANGE", Neither, "RocketMQ 5's controller mode"},
	{906, "EXCHANGE_BROKER_HA_INFO", Neither, "RocketMQ 5's controller mode"},
	{907, "GET_BROKER_HA_STATUS", Neither, "RocketMQ 5's controller mode; RAFT_STATUS"},
	{908, "RESET_MASTER_FLUSH_OFFSET", Neither, "RocketMQ 5's controller mode"},
	{1001, "CONTROLLER_ALTER_SYNC_STATE_SET", Neither, "RocketMQ 5's controller: a raft group elects its own leader"},
	{1002, "CONTROLLER_ELECT_MASTER", Neither, "RocketMQ 5's controller"},
	{1003, "CONTROLLER_REGISTER_BROKER", Neither, "RocketMQ 5's controller"},
	{1004, "CONTROLLER_GET_REPLICA_INFO", Neither, "RocketMQ 5's controller"},
	{1005, "CONTROLLER_GET_METADATA_INFO", Neither, "RocketMQ 5's controller"},
	{1006, "CONTROLLER_GET_SYNC_STATE_DATA", Neither, "RocketMQ 5's controller"},
	{1007, "GET_BROKER_EPOCH_CACHE", Neither, "RocketMQ 5's controller"},
	{1008, "NOTIFY_BROKER_ROLE_CHANGED", Neither, "RocketMQ 5's controller"},
	{1009, "UPDATE_CONTROLLER_CONFIG", Neither, "RocketMQ 5's controller"},
	{1010, "GET_CONTROLLER_CONFIG", Neither, "RocketMQ 5's controller"},
	{1011, "CLEAN_BROKER_DATA", Neither, "RocketMQ 5's controller"},
	{1012, "CONTROLLER_GET_NEXT_BROKER_ID", Neither, "RocketMQ 5's controller"},
	{1013, "CONTROLLER_APPLY_BROKER_ID", Neither, "RocketMQ 5's controller"},
	{1014, "BROKER_CLOSE_CHANNEL_REQUEST", Neither, "RocketMQ 5's controller"},
	{1015, "CHECK_NOT_ACTIVE_BROKER_REQUEST", Neither, "RocketMQ 5's controller"},
	{1016, "GET_BROKER_LIVE_INFO_REQUEST", Neither, "RocketMQ 5's controller"},
	{1017, "GET_SYNC_STATE_DATA_REQUEST", Neither, "RocketMQ 5's controller"},
	{1018, "RAFT_BROKER_HEART_BEAT_EVENT_REQUEST", Neither, "RocketMQ 5's controller"},
	{2001, "UPDATE_COLD_DATA_FLOW_CTR_CONFIG", Neither, "RocketMQ 5's cold-data read control"},
	{2002, "REMOVE_COLD_DATA_FLOW_CTR_CONFIG", Neither, "RocketMQ 5's cold-data read control"},
	{2003, "GET_COLD_DATA_FLOW_CTR_INFO", Neither, "RocketMQ 5's cold-data read control"},
	{2004, "SET_COMMITLOG_READ_MODE", Neither, "RocketMQ 5's cold-data read control"},
	{3001, "AUTH_CREATE_USER", Neither, "RocketMQ 5.3's ACL 2.0; the plain ACL is served"},
	{3002, "AUTH_UPDATE_USER", Neither, "RocketMQ 5.3's ACL 2.0"},
	{3003, "AUTH_DELETE_USER", Neither, "RocketMQ 5.3's ACL 2.0"},
	{3004, "AUTH_GET_USER", Neither, "RocketMQ 5.3's ACL 2.0"},
	{3005, "AUTH_LIST_USER", Neither, "RocketMQ 5.3's ACL 2.0"},
	{3006, "AUTH_CREATE_ACL", Neither, "RocketMQ 5.3's ACL 2.0"},
	{3007, "AUTH_UPDATE_ACL", Neither, "RocketMQ 5.3's ACL 2.0"},
	{3008, "AUTH_DELETE_ACL", Neither, "RocketMQ 5.3's ACL 2.0"},
	{3009, "AUTH_GET_ACL", Neither, "RocketMQ 5.3's ACL 2.0"},
	{3010, "AUTH_LIST_ACL", Neither, "RocketMQ 5.3's ACL 2.0"},
	{remoting.RaftStatus, "LEDGERMQ_RAFT_STATUS", Broker, "ledgermq's own: a node's raft view and the group's members"},
	{remoting.RaftRemoveNode, "LEDGERMQ_RAFT_REMOVE_NODE", Broker, "ledgermq's own"},
	{remoting.RaftAddNode, "LEDGERMQ_RAFT_ADD_NODE", Broker, "ledgermq's own"},
	{remoting.RaftTransferLeader, "LEDGERMQ_RAFT_TRANSFER_LEADER", Broker, "ledgermq's own"},
	{remoting.RaftDrain, "LEDGERMQ_RAFT_DRAIN", Broker, "ledgermq's own"},
	{remoting.ListPendingTimers, "LEDGERMQ_LIST_PENDING_TIMERS", Broker, "ledgermq's own"},
	{remoting.ListPendingTransactions, "LEDGERMQ_LIST_PENDING_TRANSACTIONS", Broker, "ledgermq's own"},
	{remoting.UpdateACL, "LEDGERMQ_UPDATE_ACL", Broker, "ledgermq's own: a node proposes its plain_acl.yml to the leader"},
	{remoting.ListPopState, "LEDGERMQ_LIST_POP_STATE", Broker, "ledgermq's own: each consumer group's POP state per topic"},
	{remoting.PopMessage, "POP_MESSAGE", Broker, "JSON headers only (the code exceeds int16); long polling up to 25 s; the POP state the gRPC port serves, replicated through raft"},
	{remoting.AckMessage, "ACK_MESSAGE", Broker, "the receipt is Java's ExtraInfo; a stale one is NO_MESSAGE"},
	{remoting.PeekMessage, "PEEK_MESSAGE", Broker, "the messages a POP of the group would get, changing nothing; answered like a pull (PULL_NOT_FOUND when none)"},
	{remoting.ChangeMessageInvisibleTime, "CHANGE_MESSAGE_INVISIBLETIME", Broker, "answers the new popTime and invisibleTime, from which the client builds the new ExtraInfo"},
	{remoting.Notification, "NOTIFICATION", Broker, "hasMsg: whether a POP of the group would get a message now; long polling up to 25 s, at most 32 held (then pollingFull)"},
	{remoting.PollingInfo, "POLLING_INFO", Broker, "pollingNum: the POP long polls the leader holds for the group, topic and queue (-1: any queue)"},
	{remoting.BatchAckMessage, "BATCH_ACK_MESSAGE", Broker, "Java's BitSets of offsets per queue; every receipt checked first (one stale: NO_MESSAGE, none acknowledged), then one raft entry"},
}

// ServedCodes returns the codes the table says server serves.
func ServedCodes(server Server) []int32 {
	var out []int32
	for _, c := range RequestCodes {
		if c.Served&server != 0 {
			out = append(out, c.Code)
		}
	}
	return out
}
