package remoting

import "strconv"

// Response codes: the one table of wire result codes used across the
// product. The numbers are RocketMQ's (Java RemotingSysResponseCode and
// ResponseCode). Only {SystemError, ServiceNotAvailable, NoPermission,
// TopicNotExist} make a standard client retry a send; the others end it.
const (
	Success                 int16 = 0
	SystemError             int16 = 1
	SystemBusy              int16 = 2
	RequestCodeNotSupported int16 = 3
	TransactionFailed       int16 = 4

	FlushDiskTimeout          int16 = 10
	SlaveNotAvailable         int16 = 11
	FlushSlaveTimeout         int16 = 12
	MessageIllegal            int16 = 13
	ServiceNotAvailable       int16 = 14
	VersionNotSupported       int16 = 15
	NoPermission              int16 = 16
	TopicNotExist             int16 = 17
	TopicExistAlready         int16 = 18
	PullNotFound              int16 = 19
	PullRetryImmediately      int16 = 20
	PullOffsetMoved           int16 = 21
	QueryNotFound             int16 = 22
	SubscriptionParseFailed   int16 = 23
	SubscriptionNotExist      int16 = 24
	SubscriptionNotLatest     int16 = 25
	SubscriptionGroupNotExist int16 = 26
	FilterDataNotExist        int16 = 27
	FilterDataNotLatest       int16 = 28
	InvalidParameter          int16 = 29

	TransactionShouldCommit    int16 = 200
	TransactionShouldRollback  int16 = 201
	TransactionStateUnknow     int16 = 202
	TransactionStateGroupWrong int16 = 203
	NoBuyerID                  int16 = 204
	NotInCurrentUnit           int16 = 205
	ConsumerNotOnline          int16 = 206
	ConsumeMsgTimeout          int16 = 207
	NoMessage                  int16 = 208
	PollingFull                int16 = 209
	PollingTimeout             int16 = 210
	BrokerNotExist             int16 = 211
	BrokerDispatchNotComplete  int16 = 212
	BroadcastConsumption       int16 = 213
	FlowControl                int16 = 215
	NotLeaderForQueue          int16 = 501
	IllegalOperation           int16 = 604

	// Client-side pseudo codes of the Java client; never on the wire.
	RPCUnknown             int16 = -1000
	RPCAddrIsNull          int16 = -1002
	RPCSendToChannelFailed int16 = -1004
	RPCTimeOut             int16 = -1006

	GoAway int16 = 1500

	ControllerFencedMasterEpoch          int16 = 2000
	ControllerFencedSyncStateSetEpoch    int16 = 2001
	ControllerInvalidMaster              int16 = 2002
	ControllerInvalidReplicas            int16 = 2003
	ControllerMasterNotAvailable         int16 = 2004
	ControllerInvalidRequest             int16 = 2005
	ControllerBrokerNotAlive             int16 = 2006
	ControllerNotLeader                  int16 = 2007
	ControllerBrokerMetadataNotExist     int16 = 2008
	ControllerInvalidCleanBrokerMetadata int16 = 2009
	ControllerBrokerNeedToBeRegistered   int16 = 2010
	ControllerMasterStillExist           int16 = 2011
	ControllerElectMasterFailed          int16 = 2012
	ControllerAlterSyncStateSetFailed    int16 = 2013
	ControllerBrokerIDInvalid            int16 = 2014
	ControllerJRaftInternalError         int16 = 2015
	ControllerBrokerLiveInfoNotExists    int16 = 2016
	UserNotExist                         int16 = 3001
	PolicyNotExist                       int16 = 3002
)

// Request codes used by the product (Java RequestCode). "→" gives the usual
// direction. Java defines more (ACL, controller, pop); add them here when a
// handler needs them, checked against RequestCode.java.
const (
	SendMessage                      int16 = 10  // producer → broker
	PullMessage                      int16 = 11  // consumer → broker
	QueryMessage                     int16 = 12  // admin → broker
	QueryBrokerOffset                int16 = 13  // admin → broker
	QueryConsumerOffset              int16 = 14  // consumer → broker
	UpdateConsumerOffset             int16 = 15  // consumer → broker
	UpdateAndCreateTopic             int16 = 17  // admin → broker
	UpdateAndCreateTopicList         int16 = 18  // admin → broker
	GetAllTopicConfig                int16 = 21  // admin/slave → broker
	GetTopicConfigList               int16 = 22  // admin → broker
	GetTopicNameList                 int16 = 23  // admin → broker
	UpdateBrokerConfig               int16 = 25  // admin → broker
	GetBrokerConfig                  int16 = 26  // admin → broker
	TriggerDeleteFiles               int16 = 27  // admin → broker
	GetBrokerRuntimeInfo             int16 = 28  // admin → broker
	SearchOffsetByTimestamp          int16 = 29  // consumer → broker
	GetMaxOffset                     int16 = 30  // consumer → broker
	GetMinOffset                     int16 = 31  // consumer → broker
	GetEarliestMsgStoretime          int16 = 32  // admin → broker
	ViewMessageByID                  int16 = 33  // admin → broker
	HeartBeat                        int16 = 34  // client → broker
	UnregisterClient                 int16 = 35  // client → broker
	ConsumerSendMsgBack              int16 = 36  // consumer → broker
	EndTransaction                   int16 = 37  // producer → broker
	GetConsumerListByGroup           int16 = 38  // consumer → broker
	CheckTransactionState            int16 = 39  // broker → producer
	NotifyConsumerIdsChanged         int16 = 40  // broker → consumer
	LockBatchMQ                      int16 = 41  // consumer → broker
	UnlockBatchMQ                    int16 = 42  // consumer → broker
	GetAllConsumerOffset             int16 = 43  // slave → broker
	GetAllDelayOffset                int16 = 45  // slave → broker
	GetBrokerClusterACLConfig        int16 = 54  // admin → broker
	PutKVConfig                      int16 = 100 // admin → namesrv
	GetKVConfig                      int16 = 101 // broker/admin → namesrv
	DeleteKVConfig                   int16 = 102 // admin → namesrv
	RegisterBroker                   int16 = 103 // broker → namesrv
	UnregisterBroker                 int16 = 104 // broker → namesrv
	GetRouteInfoByTopic              int16 = 105 // client → namesrv
	GetBrokerClusterInfo             int16 = 106 // admin → namesrv
	UpdateAndCreateSubscriptionGroup int16 = 200 // admin → broker
	GetAllSubscriptionGroupConfig    int16 = 201 // admin → broker
	GetTopicStatsInfo                int16 = 202 // admin → broker
	GetConsumerConnectionList        int16 = 203 // admin → broker
	GetProducerConnectionList        int16 = 204 // admin → broker
	WipeWritePermOfBroker            int16 = 205 // admin → namesrv
	GetAllTopicListFromNameServer    int16 = 206 // admin → namesrv
	DeleteSubscriptionGroup          int16 = 207 // admin → broker
	GetConsumeStats                  int16 = 208 // admin → broker
	ResetConsumerOffsetInBroker      int16 = 212 // admin → broker
	DeleteTopicInBroker              int16 = 215 // admin → broker
	DeleteTopicInNamesrv             int16 = 216 // admin → namesrv
	RegisterTopicInNamesrv           int16 = 217 // broker → namesrv
	GetKVListByNamespace             int16 = 219 // admin → namesrv
	ResetConsumerClientOffset        int16 = 220 // broker → consumer
	GetConsumerStatusFromClient      int16 = 221 // broker → consumer
	InvokeBrokerToResetOffset        int16 = 222 // admin → broker
	InvokeBrokerToGetConsumerStatus  int16 = 223 // admin → broker
	GetTopicsByCluster               int16 = 224 // admin → namesrv
	QueryTopicConsumeByWho           int16 = 300 // admin → broker
	QueryConsumeTimeSpan             int16 = 303 // admin → broker
	GetSystemTopicListFromNS         int16 = 304 // admin → namesrv
	GetSystemTopicListFromBroker     int16 = 305 // admin → broker
	GetConsumerRunningInfo           int16 = 307 // broker → consumer
	ConsumeMessageDirectly           int16 = 309 // broker → consumer
	SendMessageV2                    int16 = 310 // Java producer → broker
	CloneGroupOffset                 int16 = 314 // admin → broker
	ViewBrokerStatsData              int16 = 315 // admin → broker
	GetBrokerConsumeStats            int16 = 317 // admin → broker
	UpdateNamesrvConfig              int16 = 318 // admin → namesrv
	GetNamesrvConfig                 int16 = 319 // admin → namesrv
	SendBatchMessage                 int16 = 320 // producer → broker
	QueryConsumeQueue                int16 = 321 // admin → broker
	QueryDataVersion                 int16 = 322 // broker → namesrv
	SendReplyMessage                 int16 = 324 // consumer → broker
	SendReplyMessageV2               int16 = 325 // consumer → broker
	PushReplyMessageToClient         int16 = 326 // broker → requester
	AddWritePermOfBroker             int16 = 327 // admin → namesrv
	GetTopicConfig                   int16 = 351 // admin → broker
	GetSubscriptionGroupConfig       int16 = 352 // admin → broker
	LitePullMessage                  int16 = 361 // Java lite consumer → broker
)

// Request codes of ledgermq's own, for what RocketMQ's remoting protocol
// has no request for: a DLedger group's membership is managed over
// DLedger's own RPCs, which a raft group on hashicorp/raft does not speak.
// They sit in a range RocketMQ's RequestCode leaves unused (4000–4099), so
// a Java broker answers them REQUEST_CODE_NOT_SUPPORTED.
const (
	RaftStatus         int16 = 4001 // admin → broker: this node's raft view and the group's members
	RaftRemoveNode     int16 = 4002 // admin → broker (leader): remove a member
	RaftAddNode        int16 = 4003 // admin → broker (leader): add a non-voter, or promote one
	RaftTransferLeader int16 = 4004 // admin → broker (leader): hand leadership to a member
	RaftDrain          int16 = 4010 // admin → broker (the node named): drain or undrain it

	ListPendingTimers       int16 = 4011 // admin → broker (leader): timer messages not yet delivered
	ListPendingTransactions int16 = 4012 // admin → broker (leader): transactions not yet decided

	UpdateACL int16 = 4013 // broker → broker (leader): propose a plain_acl.yml as the group's rules

	ListPopState int16 = 4014 // admin → broker (leader): each consumer group's POP messages in flight, per topic
)

var responseCodeNames = map[int16]string{
	Success:                              "SUCCESS",
	SystemError:                          "SYSTEM_ERROR",
	SystemBusy:                           "SYSTEM_BUSY",
	RequestCodeNotSupported:              "REQUEST_CODE_NOT_SUPPORTED",
	TransactionFailed:                    "TRANSACTION_FAILED",
	FlushDiskTimeout:                     "FLUSH_DISK_TIMEOUT",
	SlaveNotAvailable:                    "SLAVE_NOT_AVAILABLE",
	FlushSlaveTimeout:                    "FLUSH_SLAVE_TIMEOUT",
	MessageIllegal:                       "MESSAGE_ILLEGAL",
	ServiceNotAvailable:                  "SERVICE_NOT_AVAILABLE",
	VersionNotSupported:                  "VERSION_NOT_SUPPORTED",
	NoPermission:                         "NO_PERMISSION",
	TopicNotExist:                        "TOPIC_NOT_EXIST",
	TopicExistAlready:                    "TOPIC_EXIST_ALREADY",
	PullNotFound:                         "PULL_NOT_FOUND",
	PullRetryImmediately:                 "PULL_RETRY_IMMEDIATELY",
	PullOffsetMoved:                      "PULL_OFFSET_MOVED",
	QueryNotFound:                        "QUERY_NOT_FOUND",
	SubscriptionParseFailed:              "SUBSCRIPTION_PARSE_FAILED",
	SubscriptionNotExist:                 "SUBSCRIPTION_NOT_EXIST",
	SubscriptionNotLatest:                "SUBSCRIPTION_NOT_LATEST",
	SubscriptionGroupNotExist:            "SUBSCRIPTION_GROUP_NOT_EXIST",
	FilterDataNotExist:                   "FILTER_DATA_NOT_EXIST",
	FilterDataNotLatest:                  "FILTER_DATA_NOT_LATEST",
	InvalidParameter:                     "INVALID_PARAMETER",
	TransactionShouldCommit:              "TRANSACTION_SHOULD_COMMIT",
	TransactionShouldRollback:            "TRANSACTION_SHOULD_ROLLBACK",
	TransactionStateUnknow:               "TRANSACTION_STATE_UNKNOW",
	TransactionStateGroupWrong:           "TRANSACTION_STATE_GROUP_WRONG",
	NoBuyerID:                            "NO_BUYER_ID",
	NotInCurrentUnit:                     "NOT_IN_CURRENT_UNIT",
	ConsumerNotOnline:                    "CONSUMER_NOT_ONLINE",
	ConsumeMsgTimeout:                    "CONSUME_MSG_TIMEOUT",
	NoMessage:                            "NO_MESSAGE",
	PollingFull:                          "POLLING_FULL",
	PollingTimeout:                       "POLLING_TIMEOUT",
	BrokerNotExist:                       "BROKER_NOT_EXIST",
	BrokerDispatchNotComplete:            "BROKER_DISPATCH_NOT_COMPLETE",
	BroadcastConsumption:                 "BROADCAST_CONSUMPTION",
	FlowControl:                          "FLOW_CONTROL",
	NotLeaderForQueue:                    "NOT_LEADER_FOR_QUEUE",
	IllegalOperation:                     "ILLEGAL_OPERATION",
	RPCUnknown:                           "RPC_UNKNOWN",
	RPCAddrIsNull:                        "RPC_ADDR_IS_NULL",
	RPCSendToChannelFailed:               "RPC_SEND_TO_CHANNEL_FAILED",
	RPCTimeOut:                           "RPC_TIME_OUT",
	GoAway:                               "GO_AWAY",
	ControllerFencedMasterEpoch:          "CONTROLLER_FENCED_MASTER_EPOCH",
	ControllerFencedSyncStateSetEpoch:    "CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH",
	ControllerInvalidMaster:              "CONTROLLER_INVALID_MASTER",
	ControllerInvalidReplicas:            "CONTROLLER_INVALID_REPLICAS",
	ControllerMasterNotAvailable:         "CONTROLLER_MASTER_NOT_AVAILABLE",
	ControllerInvalidRequest:             "CONTROLLER_INVALID_REQUEST",
	ControllerBrokerNotAlive:             "CONTROLLER_BROKER_NOT_ALIVE",
	ControllerNotLeader:                  "CONTROLLER_NOT_LEADER",
	ControllerBrokerMetadataNotExist:     "CONTROLLER_BROKER_METADATA_NOT_EXIST",
	ControllerInvalidCleanBrokerMetadata: "CONTROLLER_INVALID_CLEAN_BROKER_METADATA",
	ControllerBrokerNeedToBeRegistered:   "CONTROLLER_BROKER_NEED_TO_BE_REGISTERED",
	ControllerMasterStillExist:           "CONTROLLER_MASTER_STILL_EXIST",
	ControllerElectMasterFailed:          "CONTROLLER_ELECT_MASTER_FAILED",
	ControllerAlterSyncStateSetFailed:    "CONTROLLER_ALTER_SYNC_STATE_SET_FAILED",
	ControllerBrokerIDInvalid:            "CONTROLLER_BROKER_ID_INVALID",
	ControllerJRaftInternalError:         "CONTROLLER_JRAFT_INTERNAL_ERROR",
	ControllerBrokerLiveInfoNotExists:    "CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS",
	UserNotExist:                         "USER_NOT_EXIST",
	PolicyNotExist:                       "POLICY_NOT_EXIST",
}

var requestCodeNames = map[int16]string{
	SendMessage:                      "SEND_MESSAGE",
	PullMessage:                      "PULL_MESSAGE",
	QueryMessage:                     "QUERY_MESSAGE",
	QueryBrokerOffset:                "QUERY_BROKER_OFFSET",
	QueryConsumerOffset:              "QUERY_CONSUMER_OFFSET",
	UpdateConsumerOffset:             "UPDATE_CONSUMER_OFFSET",
	UpdateAndCreateTopic:             "UPDATE_AND_CREATE_TOPIC",
	UpdateAndCreateTopicList:         "UPDATE_AND_CREATE_TOPIC_LIST",
	GetAllTopicConfig:                "GET_ALL_TOPIC_CONFIG",
	GetTopicConfigList:               "GET_TOPIC_CONFIG_LIST",
	GetTopicNameList:                 "GET_TOPIC_NAME_LIST",
	UpdateBrokerConfig:               "UPDATE_BROKER_CONFIG",
	GetBrokerConfig:                  "GET_BROKER_CONFIG",
	TriggerDeleteFiles:               "TRIGGER_DELETE_FILES",
	GetBrokerRuntimeInfo:             "GET_BROKER_RUNTIME_INFO",
	SearchOffsetByTimestamp:          "SEARCH_OFFSET_BY_TIMESTAMP",
	GetMaxOffset:                     "GET_MAX_OFFSET",
	GetMinOffset:                     "GET_MIN_OFFSET",
	GetEarliestMsgStoretime:          "GET_EARLIEST_MSG_STORETIME",
	ViewMessageByID:                  "VIEW_MESSAGE_BY_ID",
	HeartBeat:                        "HEART_BEAT",
	UnregisterClient:                 "UNREGISTER_CLIENT",
	ConsumerSendMsgBack:              "CONSUMER_SEND_MSG_BACK",
	EndTransaction:                   "END_TRANSACTION",
	GetConsumerListByGroup:           "GET_CONSUMER_LIST_BY_GROUP",
	CheckTransactionState:            "CHECK_TRANSACTION_STATE",
	NotifyConsumerIdsChanged:         "NOTIFY_CONSUMER_IDS_CHANGED",
	LockBatchMQ:                      "LOCK_BATCH_MQ",
	UnlockBatchMQ:                    "UNLOCK_BATCH_MQ",
	GetAllConsumerOffset:             "GET_ALL_CONSUMER_OFFSET",
	GetAllDelayOffset:                "GET_ALL_DELAY_OFFSET",
	GetBrokerClusterACLConfig:        "GET_BROKER_CLUSTER_ACL_CONFIG",
	PutKVConfig:                      "PUT_KV_CONFIG",
	GetKVConfig:                      "GET_KV_CONFIG",
	DeleteKVConfig:                   "DELETE_KV_CONFIG",
	RegisterBroker:                   "REGISTER_BROKER",
	UnregisterBroker:                 "UNREGISTER_BROKER",
	GetRouteInfoByTopic:              "GET_ROUTEINFO_BY_TOPIC",
	GetBrokerClusterInfo:             "GET_BROKER_CLUSTER_INFO",
	UpdateAndCreateSubscriptionGroup: "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
	GetAllSubscriptionGroupConfig:    "GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
	GetTopicStatsInfo:                "GET_TOPIC_STATS_INFO",
	GetConsumerConnectionList:        "GET_CONSUMER_CONNECTION_LIST",
	GetProducerConnectionList:        "GET_PRODUCER_CONNECTION_LIST",
	WipeWritePermOfBroker:            "WIPE_WRITE_PERM_OF_BROKER",
	GetAllTopicListFromNameServer:    "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
	DeleteSubscriptionGroup:          "DELETE_SUBSCRIPTIONGROUP",
	GetConsumeStats:                  "GET_CONSUME_STATS",
	ResetConsumerOffsetInBroker:      "RESET_CONSUMER_OFFSET_IN_BROKER",
	DeleteTopicInBroker:              "DELETE_TOPIC_IN_BROKER",
	DeleteTopicInNamesrv:             "DELETE_TOPIC_IN_NAMESRV",
	RegisterTopicInNamesrv:           "REGISTER_TOPIC_IN_NAMESRV",
	GetKVListByNamespace:             "GET_KVLIST_BY_NAMESPACE",
	ResetConsumerClientOffset:        "RESET_CONSUMER_CLIENT_OFFSET",
	GetConsumerStatusFromClient:      "GET_CONSUMER_STATUS_FROM_CLIENT",
	InvokeBrokerToResetOffset:        "INVOKE_BROKER_TO_RESET_OFFSET",
	InvokeBrokerToGetConsumerStatus:  "INVOKE_BROKER_TO_GET_CONSUMER_STATUS",
	GetTopicsByCluster:               "GET_TOPICS_BY_CLUSTER",
	QueryTopicConsumeByWho:           "QUERY_TOPIC_CONSUME_BY_WHO",
	QueryConsumeTimeSpan:             "QUERY_CONSUME_TIME_SPAN",
	GetSystemTopicListFromNS:         "GET_SYSTEM_TOPIC_LIST_FROM_NS",
	GetSystemTopicListFromBroker:     "GET_SYSTEM_TOPIC_LIST_FROM_BROKER",
	GetConsumerRunningInfo:           "GET_CONSUMER_RUNNING_INFO",
	ConsumeMessageDirectly:           "CONSUME_MESSAGE_DIRECTLY",
	SendMessageV2:                    "SEND_MESSAGE_V2",
	CloneGroupOffset:                 "CLONE_GROUP_OFFSET",
	ViewBrokerStatsData:              "VIEW_BROKER_STATS_DATA",
	GetBrokerConsumeStats:            "GET_BROKER_CONSUME_STATS",
	UpdateNamesrvConfig:              "UPDATE_NAMESRV_CONFIG",
	GetNamesrvConfig:                 "GET_NAMESRV_CONFIG",
	SendBatchMessage:                 "SEND_BATCH_MESSAGE",
	QueryConsumeQueue:                "QUERY_CONSUME_QUEUE",
	QueryDataVersion:                 "QUERY_DATA_VERSION",
	SendReplyMessage:                 "SEND_REPLY_MESSAGE",
	SendReplyMessageV2:               "SEND_REPLY_MESSAGE_V2",
	PushReplyMessageToClient:         "PUSH_REPLY_MESSAGE_TO_CLIENT",
	AddWritePermOfBroker:             "ADD_WRITE_PERM_OF_BROKER",
	GetTopicConfig:                   "GET_TOPIC_CONFIG",
	GetSubscriptionGroupConfig:       "GET_SUBSCRIPTIONGROUP_CONFIG",
	LitePullMessage:                  "LITE_PULL_MESSAGE",
	RaftStatus:                       "LEDGERMQ_RAFT_STATUS",
	RaftRemoveNode:                   "LEDGERMQ_RAFT_REMOVE_NODE",
	RaftAddNode:                      "LEDGERMQ_RAFT_ADD_NODE",
	RaftTransferLeader:               "LEDGERMQ_RAFT_TRANSFER_LEADER",
	RaftDrain:                        "LEDGERMQ_RAFT_DRAIN",
	ListPendingTimers:                "LEDGERMQ_LIST_PENDING_TIMERS",
	ListPendingTransactions:          "LEDGERMQ_LIST_PENDING_TRANSACTIONS",
	UpdateACL:                        "LEDGERMQ_UPDATE_ACL",
	ListPopState:                     "LEDGERMQ_LIST_POP_STATE",
}

// ResponseCodeName returns the Java name of a response code, or its decimal
// form when the code is not in the table.
func ResponseCodeName(code int16) string {
	if n, ok := responseCodeNames[code]; ok {
		return n
	}
	return strconv.Itoa(int(code))
}

// RequestCodeName returns the Java name of a request code, or its decimal
// form when the code is not in the table.
func RequestCodeName(code int16) string {
	if n, ok := requestCodeNames[code]; ok {
		return n
	}
	return strconv.Itoa(int(code))
}
