// Package protocol holds the typed request and response headers and the
// JSON bodies of RocketMQ's request codes, each with an Encode (to the
// string→string ext fields of a remoting.Command, or to JSON) and a Decode
// (from them, with an error that names the field, never a panic). It
// knows field names, types and which fields are required; it knows
// nothing of connections, routes or retries.
//
// The client, the broker and the name server build and read these
// headers and bodies with this package, so the two sides of a request
// cannot drift: the topic table types are the replicated ones (package
// metadata), and the name server's route, cluster-info, topic-list and
// register header and body types, the broker's send, pull, offset,
// consumer-group, lock, message look-up and admin decoding and our
// client's encoding are all this package's (offset.go, consumer.go,
// query.go, admin.go, admin_stats.go, admin_topic.go, group.go and
// broker_register.go list their codes). Outside this package no request
// header or JSON body of these codes is built or read by hand; the only
// ext fields read directly are our own hop markers between nodes of a
// group (the send and offset-commit forwarding marks), which are not part
// of any header.
//
// # Codes and who uses what
//
// RequestCodes (codes.go) is every request code of RocketMQ's protocol
// with the server that serves it, or why none does; CODES.md is rendered
// from it, and the broker's and the name server's tests hold their handler
// tables to it. The table below is the codes this package has types for.
//
//	code  name                      direction           header (ext)                         body
//	----  ------------------------  ------------------  -----------------------------------  --------------------------------
//	10    SEND_MESSAGE              producer → broker   SendMessageRequestHeader             the message body
//	310   SEND_MESSAGE_V2           producer → broker   SendMessageRequestHeaderV2           the message body
//	320   SEND_BATCH_MESSAGE        producer → broker   SendMessageRequestHeaderV2           batch items (client/)
//	                                                    with Batch
//	      (answer to 10/310/320)    broker → producer   SendMessageResponseHeader            none
//	11    PULL_MESSAGE              consumer → broker   PullMessageRequestHeader             answer: PullMessageResponseHeader + records
//	12    QUERY_MESSAGE             admin → broker      QueryMessageRequestHeader            answer: QueryMessageResponseHeader + records
//	14    QUERY_CONSUMER_OFFSET     consumer → broker   QueryConsumerOffsetRequestHeader     answer: OffsetResponseHeader (or 22)
//	15    UPDATE_CONSUMER_OFFSET    consumer → broker   UpdateConsumerOffsetRequestHeader    none (also follower → leader)
//	17    UPDATE_AND_CREATE_TOPIC   admin → broker      CreateTopicRequestHeader             none
//	21    GET_ALL_TOPIC_CONFIG      admin → broker      none (AllTopicConfigRequest)         answer: TopicConfigWrapper
//	28    GET_BROKER_RUNTIME_INFO   admin → broker      none (BrokerRuntimeInfoRequest)      answer: KVTable
//	29    SEARCH_OFFSET_BY_TIME…    consumer → broker   SearchOffsetRequestHeader            answer: OffsetResponseHeader
//	30    GET_MAX_OFFSET            consumer → broker   QueueOffsetRequestHeader             answer: OffsetResponseHeader
//	31    GET_MIN_OFFSET            consumer → broker   QueueOffsetRequestHeader             answer: OffsetResponseHeader
//	32    GET_EARLIEST_MSG_STORE…   consumer → broker   QueueOffsetRequestHeader             answer: StoreTimeResponseHeader
//	33    VIEW_MESSAGE_BY_ID        admin → broker      ViewMessageRequestHeader             answer: the stored record
//	34    HEART_BEAT                client → broker     none                                 HeartbeatData
//	35    UNREGISTER_CLIENT         client → broker     UnregisterClientRequestHeader        none
//	36    CONSUMER_SEND_MSG_BACK    consumer → broker   ConsumerSendMsgBackRequestHeader     none
//	37    END_TRANSACTION           producer → broker   EndTransactionRequestHeader          none
//	38    GET_CONSUMER_LIST_BY_GR…  consumer → broker   GetConsumerListByGroupRequestHeader  answer: ConsumerListBody
//	39    CHECK_TRANSACTION_STATE   broker → producer   CheckTransactionStateRequestHeader   the half message (stored record)
//	40    NOTIFY_CONSUMER_IDS_CH…   broker → consumer   NotifyConsumerIdsChangedRequest…     none
//	41    LOCK_BATCH_MQ             consumer → broker   none                                 LockBatchBody; answer: LockBatchResult
//	42    UNLOCK_BATCH_MQ           consumer → broker   none                                 LockBatchBody
//	103   REGISTER_BROKER           broker → namesrv    RegisterBrokerRequestHeader          RegisterBrokerBody (DecodeRegisterBody)
//	      (answer to 103)           namesrv → broker    RegisterBrokerResponseHeader         none
//	104   UNREGISTER_BROKER         broker → namesrv    UnregisterBrokerRequestHeader        none
//	105   GET_ROUTEINFO_BY_TOPIC    client → namesrv    GetRouteInfoRequestHeader            answer: TopicRouteData
//	106   GET_BROKER_CLUSTER_INFO   admin → namesrv     none (ClusterInfoRequest)            answer: ClusterInfo
//	200   UPDATE_AND_CREATE_SUBS…   admin → broker      none                                 SubscriptionGroupConfig
//	201   GET_ALL_SUBSCRIPTIONGR…   admin → broker      none (AllSubscriptionGroupsRequest)  answer: SubscriptionGroupWrapper
//	202   GET_TOPIC_STATS_INFO      admin → broker      TopicStatsInfoRequestHeader          answer: TopicStatsTable
//	203   GET_CONSUMER_CONNECTION…  admin → broker      ConsumerConnectionListRequestHea…    answer: ConsumerConnection
//	204   GET_PRODUCER_CONNECTION…  admin → broker      ProducerConnectionListRequestHea…    answer: ProducerConnection
//	206   GET_ALL_TOPIC_LIST…       admin → namesrv     none (AllTopicListRequest)           answer: TopicList
//	207   DELETE_SUBSCRIPTIONGROUP  admin → broker      DeleteSubscriptionGroupRequest…      none
//	208   GET_CONSUME_STATS         admin → broker      ConsumeStatsRequestHeader            answer: ConsumeStats
//	215   DELETE_TOPIC_IN_BROKER    admin → broker      DeleteTopicRequestHeader             none
//	216   DELETE_TOPIC_IN_NAMESRV   admin → namesrv     DeleteTopicFromNamesrvRequestHeader  none
//	220   RESET_CONSUMER_CLIENT…    broker → consumer   ResetConsumerClientOffsetRequest…    ResetOffsetBody
//	222   INVOKE_BROKER_TO_RESET…   admin → broker      ResetOffsetHeader                    answer: ResetOffsetBody
//	224   GET_TOPICS_BY_CLUSTER     admin → namesrv     GetTopicsByClusterRequestHeader      answer: TopicList
//	304   GET_SYSTEM_TOPIC_LIST_F…  admin → namesrv     none                                 answer: TopicList with brokerAddr
//	352   GET_SUBSCRIPTIONGROUP_C…  admin → broker      GetSubscriptionGroupConfigRequest…   answer: SubscriptionGroupConfig
//	4001  RAFT_STATUS               admin → broker      none (RaftStatusRequest)             answer: RaftStatus
//	4002  RAFT_REMOVE_NODE          admin → broker      RaftNodeHeader                       none
//	4003  RAFT_ADD_NODE             admin → broker      RaftNodeHeader                       none
//	4004  RAFT_TRANSFER_LEADER      admin → broker      RaftNodeHeader                       none
//	4010  RAFT_DRAIN                admin → broker      RaftDrainHeader                      none
//	4011  LIST_PENDING_TIMERS       admin → broker      PendingListHeader                    answer: PendingTimers
//	4012  LIST_PENDING_TRANSACTIONS admin → broker      PendingListHeader                    answer: PendingTransactions
//	4013  UPDATE_ACL                broker → leader     ext ifNewer, modified, node          body: plain_acl.yml (broker/aclsync.go)
//	4014  LIST_POP_STATE            admin → broker      PopStateHeader                       answer: PopState
//	200050 POP_MESSAGE              consumer → broker   PopMessageRequestHeader              PopMessageResponseHeader, messages
//	200051 ACK_MESSAGE              consumer → broker   AckMessageRequestHeader (ExtraInfo)  none
//	200053 CHANGE_MESSAGE_INVISIB…  consumer → broker   ChangeInvisibleTimeRequestHeader     ChangeInvisibleTimeResponseHeader
//
// The POP codes (200050 and up) exceed int16 and travel with JSON headers
// only (remoting's doc); pop.go has their headers and the ExtraInfo a POP
// consumer keeps as a message's receipt.
//
// rocketmq-client-go sends 10 for single messages and 320 for batches;
// Java producers send 310. Our client (package client) sends 10 and 320,
// reads the route with 105, and decodes the send answer. The broker
// accepts all three send codes. 106 and the 2xx and 4xxx codes are for
// admin tools.
//
// # SEND_MESSAGE header
//
// Ext names, long (code 10) and one-letter (codes 310 and 320); every value
// is a string on the wire, numbers in decimal, booleans "true"/"false".
//
//	field                  long                   V2  type    required  notes
//	---------------------  ---------------------  --  ------  --------  --------------------------------
//	ProducerGroup          producerGroup          a   string  yes
//	Topic                  topic                  b   string  yes
//	DefaultTopic           defaultTopic           c   string  yes       always TBW102 (DefaultTopic)
//	DefaultTopicQueueNums  defaultTopicQueueNums  d   int32   yes       4: queues of an auto-created topic
//	QueueID                queueId                e   int32   yes       0 ≤ id < the topic's queues
//	SysFlag                sysFlag                f   int32   yes       1 zlib body, 4 half message
//	BornTimestamp          bornTimestamp          g   int64   yes       ms
//	Flag                   flag                   h   int32   yes       user flag
//	Properties             properties             i   string            "name\x01value\x02" items
//	ReconsumeTimes         reconsumeTimes         j   int32
//	UnitMode               unitMode               k   bool
//	MaxReconsumeTimes      maxReconsumeTimes      l   int32
//	Batch                  batch                  m   bool              true on SEND_BATCH_MESSAGE
//	BrokerName             bname                  n   string            broker group targeted
//
// Decoding follows Java's @CFNotNull: a
// required string must be present (it may be empty); a required number
// must be present and non-empty; an optional number absent or empty reads
// 0; a boolean is true only for "true" in any case. A missing field wraps
// remoting.ErrMissingField and a malformed number remoting.ErrBadHeader,
// so a server answers SYSTEM_ERROR as it does today. Unknown ext fields
// (Java's extras, our forwarding marker) are ignored. Encode writes every
// field, as the Go client does.
//
// # SEND_MESSAGE answer
//
//	field          ext name       type    required  notes
//	-------------  -------------  ------  --------  ---------------------------------------
//	MsgID          msgId          string  yes       offset msgId; batch: comma-joined (MsgIDs)
//	QueueID        queueId        int32   yes
//	QueueOffset    queueOffset    int64   yes       of the first message of a batch
//	TransactionID  transactionId  string            UNIQ_KEY(s), comma-joined for a batch
//	Region         MSG_REGION     string            "DefaultRegion"
//	TraceOn        TRACE_ON       bool              any value but "" and "false" is true
//
// The answer's code says what happened: 0, and 10/11/12 (flush or
// replication warnings) mean stored; any other code comes without this
// header and with the reason in the remark. How a client should read each
// code (retry or not, stored or not) is client/'s business, not this
// package's.
//
// # GET_ROUTEINFO_BY_TOPIC
//
// Request ext: topic (required), acceptStandardJsonOnly (optional, Java 5).
// Answer: code 0 with a TopicRouteData body, or 17 TOPIC_NOT_EXIST (a
// producer then uses the TBW102 route). The body:
//
//	key                           type              notes
//	----------------------------  ----------------  --------------------------------------
//	queueDatas[].brokerName       string            one entry per broker group
//	queueDatas[].readQueueNums    int32             0..MaxQueueNums
//	queueDatas[].writeQueueNums   int32             0..MaxQueueNums
//	queueDatas[].perm             int32             4 READ | 2 WRITE | 1 INHERIT (TBW102: 7)
//	queueDatas[].topicSysFlag     int32
//	brokerDatas[].cluster         string
//	brokerDatas[].brokerName      string
//	brokerDatas[].brokerAddrs     {brokerId: addr}  "0" = the Raft leader; 1, 2, … followers
//	orderTopicConf                string, optional  "broker-a:4;broker-b:4"
//	filterServerTable             object            always {} from our name server
//
// Standard JSON only: brokerAddrs keys are quoted ({"0":"…"}). Java name
// servers send the unquoted fastjson form only to clients older than
// V4_9_4, and every request this module builds says 479 (remoting.Version).
// Encode writes compact JSON, {} for an empty brokerAddrs and [] for an
// empty list, because rocketmq-client-go splits the brokerAddrs text
// without trimming and indexes it even when empty.
//
// # GET_BROKER_CLUSTER_INFO
//
// No ext. Answer body ClusterInfo: brokerAddrTable (group name →
// BrokerData) and clusterAddrTable (cluster name → group names).
//
// # Names (names.go)
//
// ValidateTopic and ValidateGroup are the one rule for names, used by the
// broker wherever a topic or a consumer group enters:
//
//	name            charset           length    why
//	--------------  ----------------  --------  --------------------------------
//	topic           [%|a-zA-Z0-9_-]   1..127    one-byte topic length of a record
//	consumer group  [%|a-zA-Z0-9_-]   1..120    %RETRY%<group> must be a topic
//
// RetryTopic and DLQTopic build a group's %RETRY% and %DLQ% topics.
//
// # Invariants
//
//   - For every header type H and ext map m: if Decode(m) succeeds, then
//     Decode(Encode(h)) gives back the same h. For every body type: if
//     Decode(b) succeeds, Decode(Encode(Decode(b))) equals Decode(b). The
//     Fuzz* targets check both, and that no input panics.
//   - Decoders do not keep references to their input maps; a decoded body
//     shares nothing with the input bytes.
//   - Nothing here starts a goroutine or does I/O; every function is safe
//     for concurrent use on distinct values.
package protocol
