package remoting

import "strconv"

// Response codes: the one table of wire result codes used across the
// product. The numbers are RocketMQ's (Java RemotingSysResponseCode and
// ResponseCode). Only {SystemError, ServiceNotAvailable, NoPermission,
// TopicNotExist} make a standard client retry a send; the others end it.
const (
	Success                 int32 = 0
	SystemError             int32 = 1
	SystemBusy              int32 = 2
	RequestCodeNotSupported int32 = 3
	TransactionFailed       int32 = 4

	FlushDiskTimeout          int32 = 10
	SlaveNotAvailable         int32 = 11
	FlushSlaveTimeout         int32 = 12
	MessageIllegal            int32 = 13
	ServiceNotAvailable       int32 = 14
	VersionNotSupported       int32 = 15
	NoPermission              int32 = 16
	TopicNotExist             int32 = 17
	TopicExistAlready         int32 = 18
	PullNotFound              int32 = 19
	PullRetryImmediately      int32 = 20
	PullOffsetMoved           int32 = 21
	QueryNotFound             int32 = 22
	SubscriptionParseFailed   int32 = 23
	SubscriptionNotExist      int32 = 24
	SubscriptionNotLatest     int32 = 25
	SubscriptionGroupNotExist int32 = 26
	FilterDataNotExist        int32 = 27
	FilterDataNotLatest       int32 = 28
	InvalidParameter          int32 = 29

	TransactionShouldCommit    int32 = 200
	TransactionShouldRollback  int32 = 201
	TransactionStateUnknow     int32 = 202
	TransactionStateGroupWrong int32 = 203
	NoBuyerID                  int32 = 204
	NotInCurrentUnit           int32 = 205
	ConsumerNotOnline          int32 = 206
	ConsumeMsgTimeout          int32 = 207
	NoMessage                  int32 = 208
	PollingFull                int32 = 209
	PollingTimeout             int32 = 210
	BrokerNotExist             int32 = 211
	BrokerDispatchNotComplete  int32 = 212
	BroadcastConsumption       int32 = 213
	FlowControl                int32 = 215
	NotLeaderForQueue          int32 = 501
	IllegalOperation           int32 = 604

	// Client-side pseudo codes of the Java client; never on the wire.
	RPCUnknown             int32 = -1000
	RPCAddrIsNull          int32 = -1002
	RPCSendToChannelFailed int32 = -1004
	RPCTimeOut             int32 = -1006

	GoAway int32 = 1500

	ControllerFencedMasterEpoch          int32 = 2000
	ControllerFencedSyncStateSetEpoch    int32 = 2001
	ControllerInvalidMaster              int32 = 2002
	ControllerInvalidReplicas            int32 = 2003
	ControllerMasterNotAvailable         int32 = 2004
	ControllerInvalidRequest             int32 = 2005
	ControllerBrokerNotAlive             int32 = 2006
	ControllerNotLeader                  int32 = 2007
	ControllerBrokerMetadataNotExist     int32 = 2008
	ControllerInvalidCleanBrokerMetadata int32 = 2009
	ControllerBrokerNeedToBeRegistered   int32 = 2010
	ControllerMasterStillExist           int32 = 2011
	ControllerElectMasterFailed          int32 = 2012
	ControllerAlterSyncStateSetFailed    int32 = 2013
	ControllerBrokerIDInvalid            int32 = 2014
	ControllerJRaftInternalError         int32 = 2015
	ControllerBrokerLiveInfoNotExists    int32 = 2016
	UserNotExist                         int32 = 3001
	PolicyNotExist                       int32 = 3002
)

// Request codes used by the product (Java RequestCode). "→" gives the usual
// direction. Java defines more (ACL, controller); add them here when a
// handler needs them, checked against RequestCode.java.
const (
	SendMessage                      int32 = 10  // producer → broker
	PullMessage                      int32 = 11  // consumer → broker
	QueryMessage                     int32 = 12  // admin → broker
	QueryBrokerOffset                int32 = 13  // admin → broker
	QueryConsumerOffset              int32 = 14  // consumer → broker
	UpdateConsumerOffset             int32 = 15  // consumer → broker
	UpdateAndCreateTopic             int32 = 17  // admin → broker
	UpdateAndCreateTopicList         int32 = 18  // admin → broker
	GetAllTopicConfig                int32 = 21  // admin/slave → broker
	GetTopicConfigList               int32 = 22  // admin → broker
	GetTopicNameList                 int32 = 23  // admin → broker
	UpdateBrokerConfig               int32 = 25  // admin → broker
	GetBrokerConfig                  int32 = 26  // admin → broker
	TriggerDeleteFiles               int32 = 27  // admin → broker
	GetBrokerRuntimeInfo             int32 = 28  // admin → broker
	SearchOffsetByTimestamp          int32 = 29  // consumer → broker
	GetMaxOffset                     int32 = 30  // consumer → broker
	GetMinOffset                     int32 = 31  // consumer → broker
	GetEarliestMsgStoretime          int32 = 32  // admin → broker
	ViewMessageByID                  int32 = 33  // admin → broker
	HeartBeat                        int32 = 34  // client → broker
	UnregisterClient                 int32 = 35  // client → broker
	ConsumerSendMsgBack              int32 = 36  // consumer → broker
	EndTransaction                   int32 = 37  // producer → broker
	GetConsumerListByGroup           int32 = 38  // consumer → broker
	CheckTransactionState            int32 = 39  // broker → producer
	NotifyConsumerIdsChanged         int32 = 40  // broker → consumer
	LockBatchMQ                      int32 = 41  // consumer → broker
	UnlockBatchMQ                    int32 = 42  // consumer → broker
	GetAllConsumerOffset             int32 = 43  // slave → broker
	GetAllDelayOffset                int32 = 45  // slave → broker
	GetBrokerClusterACLConfig        int32 = 54  // admin → broker
	PutKVConfig                      int32 = 100 // admin → namesrv
	GetKVConfig                      int32 = 101 // broker/admin → namesrv
	DeleteKVConfig                   int32 = 102 // admin → namesrv
	RegisterBroker                   int32 = 103 // broker → namesrv
	UnregisterBroker                 int32 = 104 // broker → namesrv
	GetRouteInfoByTopic              int32 = 105 // client → namesrv
	GetBrokerClusterInfo             int32 = 106 // admin → namesrv
	UpdateAndCreateSubscriptionGroup int32 = 200 // admin → broker
	GetAllSubscriptionGroupConfig    int32 = 201 // admin → broker
	GetTopicStatsInfo                int32 = 202 // admin → broker
	GetConsumerConnectionList        int32 = 203 // admin → broker
	GetProducerConnectionList        int32 = 204 // admin → broker
	WipeWritePermOfBroker            int32 = 205 // admin → namesrv
	GetAllTopicListFromNameServer    int32 = 206 // admin → namesrv
	DeleteSubscriptionGroup          int32 = 207 // admin → broker
	GetConsumeStats                  int32 = 208 // admin → broker
	ResetConsumerOffsetInBroker      int32 = 212 // admin → broker
	DeleteTopicInBroker              int32 = 215 // admin → broker
	DeleteTopicInNamesrv             int32 = 216 // admin → namesrv
	RegisterTopicInNamesrv           int32 = 217 // broker → namesrv
	GetKVListByNamespace             int32 = 219 // admin → namesrv
	ResetConsumerClientOffset        int32 = 220 // broker → consumer
	GetConsumerStatusFromClient      int32 = 221 // broker → consumer
	InvokeBrokerToResetOffset        int32 = 222 // admin → broker
	InvokeBrokerToGetConsumerStatus  int32 = 223 // admin → broker
	GetTopicsByCluster               int32 = 224 // admin → namesrv
	QueryTopicConsumeByWho           int32 = 300 // admin → broker
	QueryConsumeTimeSpan             int32 = 303 // admin → broker
	GetSystemTopicListFromNS         int32 = 304 // admin → namesrv
	GetSystemTopicListFromBroker     int32 = 305 // admin → broker
	GetConsumerRunningInfo           int32 = 307 // broker → consumer
	ConsumeMessageDirectly           int32 = 309 // broker → consumer
	SendMessageV2                    int32 = 310 // Java producer → broker
	CloneGroupOffset                 int32 = 314 // admin → broker
	ViewBrokerStatsData              int32 = 315 // admin → broker
	GetBrokerConsumeStats            int32 = 317 // admin → broker
	UpdateNamesrvConfig              int32 = 318 // admin → namesrv
	GetNamesrvConfig                 int32 = 319 // admin → namesrv
	SendBatchMessage                 int32 = 320 // producer → broker
	QueryConsumeQueue                int32 = 321 // admin → broker
	QueryDataVersion                 int32 = 322 // broker → namesrv
	SendReplyMessage                 int32 = 324 // consumer → broker
	SendReplyMessageV2               int32 = 325 // consumer → broker
	PushReplyMessageToClient         int32 = 326 // broker → requester
	AddWritePermOfBroker             int32 = 327 // admin → namesrv
	GetTopicConfig                   int32 = 351 // admin → broker
	GetSubscriptionGroupConfig       int32 = 352 // admin → broker
	LitePullMessage                  int32 = 361 // Java lite consumer → broker
	RecallMessage                    int32 = 370 // producer → broker (RocketMQ 5.3)
)

// Request codes of POP consumption (RocketMQ 4.9+/5.x). They exceed int16:
// a Java sender writes only a code's low 16 bits into a binary (ROCKETMQ)
// header, so they travel in JSON headers only (Encode refuses them in a
// binary one).
const (
	PopMessage                 int32 = 200050 // POP consumer → broker
	AckMessage                 int32 = 200051 // POP consumer → broker
	PeekMessage                int32 = 200052 // POP consumer → broker
	ChangeMessageInvisibleTime int32 = 200053 // POP consumer → broker
	Notification               int32 = 200054 // POP consumer → broker
	PollingInfo                int32 = 200055 // POP consumer → broker
	BatchAckMessage            int32 = 200151 // POP consumer → broker
)

// Request codes of ledgermq's own, for what RocketMQ's remoting protocol
// has no request for: a DLedger group's membership is managed over
// DLedger's own RPCs, which a raft group on hashicorp/raft does not speak.
// They sit in a range RocketMQ's RequestCode leaves unused (4000–4099), so
// a Java broker answers them REQUEST_CODE_NOT_SUPPORTED.
const (
	RaftStatus         int32 = 4001 // admin → broker: this node's raft view and the group's members
	RaftRemoveNode     int32 = 4002 // admin → broker (leader): remove a member
	RaftAddNode        int32 = 4003 // admin → broker (leader): add a non-voter, or promote one
	RaftTransferLeader int32 = 4004 // admin → broker (leader): hand leadership to a member
	RaftDrain          int32 = 4010 // admin → broker (the node named): drain or undrain it

	ListPendingTimers       int32 = 4011 // admin → broker (leader): timer messages not yet delivered
	ListPendingTransactions int32 = 4012 // admin → broker (leader): transactions not yet decided

	UpdateACL int32 = 4013 // broker → broker (leader): propose a plain_acl.yml as the group's rules

	ListPopState int32 = 4014 // admin → broker (leader): each consumer group's POP messages in flight, per topic
)

var responseCodeNames = map[int32]string{
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

var requestCodeNames = map[int32]string{
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
	RecallMessage:                    "RECALL_MESSAGE",
	PopMessage:                       "POP_MESSAGE",
	AckMessage:                       "ACK_MESSAGE",
	PeekMessage:                      "PEEK_MESSAGE",
	ChangeMessageInvisibleTime:       "CHANGE_MESSAGE_INVISIBLETIME",
	Notification:                     "NOTIFICATION",
	PollingInfo:                      "POLLING_INFO",
	BatchAckMessage:                  "BATCH_ACK_MESSAGE",
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
func ResponseCodeName(code int32) string {
	if n, ok := responseCodeNames[code]; ok {
		return n
	}
	return strconv.Itoa(int(code))
}

// RequestCodeName returns the Java name of a request code, or its decimal
// form when the code is not in the table.
func RequestCodeName(code int32) string {
	if n, ok := requestCodeNames[code]; ok {
		return n
	}
	return strconv.Itoa(int(code))
}
