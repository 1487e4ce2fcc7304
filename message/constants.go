package message

// Magic codes: the second int32 of every entry in a commitlog file.
const (
	// MagicV1 marks a stored message record with a 1-byte topic length.
	// It is the only record magic this package reads or writes: the Go
	// client cannot decode the v2 layout (0xDAA320AB, 2-byte topic length).
	MagicV1 uint32 = 0xDAA320A7

	// BlankMagic marks the filler that pads the end of a commitlog segment
	// when the next record does not fit. It appears only in commitlog
	// files, never in a pull body.
	BlankMagic uint32 = 0xCBD43194
)

// SysFlag bits of a stored record (message/doc.go, "Record layout").
const (
	SysFlagCompressed          int32 = 0x1 // body is compressed (zlib unless a compression type says otherwise)
	SysFlagMultiTags           int32 = 0x2 // topic is a multi-tags topic
	SysFlagTransactionPrepared int32 = 0x4 // half message of a transaction
	SysFlagTransactionCommit   int32 = 0x8 // committed transaction message
	SysFlagTransactionRollback int32 = 0xC // rolled-back transaction message
	SysFlagTransactionMask     int32 = 0xC // mask of the transaction type bits; 0 = not transactional
	SysFlagBornHostV6          int32 = 0x10
	SysFlagStoreHostV6         int32 = 0x20
	SysFlagNeedUnwrap          int32 = 0x40 // 5.x inner batch that needs unwrapping
	SysFlagInnerBatch          int32 = 0x80 // 5.x inner batch

	// Compression type (meaningful only with SysFlagCompressed). 0 also
	// means zlib, which is what the Go client sends.
	SysFlagCompressionLZ4  int32 = 0x100
	SysFlagCompressionZSTD int32 = 0x200
	SysFlagCompressionZLIB int32 = 0x300
	SysFlagCompressionMask int32 = 0x700
)

// TransactionType returns the transaction bits of sysFlag: 0 (not a
// transaction message), SysFlagTransactionPrepared, SysFlagTransactionCommit
// or SysFlagTransactionRollback.
func TransactionType(sysFlag int32) int32 { return sysFlag & SysFlagTransactionMask }

// Limits imposed by the record layout.
const (
	MaxTopicLength      = 127   // 1-byte topic length, Java-compatible (v1 magic)
	MaxPropertiesLength = 32767 // int16 properties length
)

// Property names (message/doc.go, "Properties").
const (
	PropertyTags                           = "TAGS"
	PropertyKeys                           = "KEYS"
	PropertyUniqKey                        = "UNIQ_KEY"
	PropertyWaitStoreMsgOK                 = "WAIT"
	PropertyDelayLevel                     = "DELAY"
	PropertyTimerDeliverMS                 = "TIMER_DELIVER_MS"
	PropertyTimerDelaySec                  = "TIMER_DELAY_SEC"
	PropertyTimerDelayMS                   = "TIMER_DELAY_MS"
	PropertyTransactionPrepared            = "TRAN_MSG"
	PropertyProducerGroup                  = "PGROUP"
	PropertyTransactionID                  = "__transactionId__"
	PropertyRealTopic                      = "REAL_TOPIC"
	PropertyRealQueueID                    = "REAL_QID"
	PropertyRetryTopic                     = "RETRY_TOPIC"
	PropertyOriginMessageID                = "ORIGIN_MESSAGE_ID"
	PropertyReconsumeTime                  = "RECONSUME_TIME"
	PropertyMaxReconsumeTimes              = "MAX_RECONSUME_TIMES"
	PropertyMinOffset                      = "MIN_OFFSET"
	PropertyMaxOffset                      = "MAX_OFFSET"
	PropertyConsumeStartTime               = "CONSUME_START_TIME"
	PropertyMsgRegion                      = "MSG_REGION"
	PropertyTraceSwitch                    = "TRACE_ON"
	PropertyCluster                        = "CLUSTER"
	PropertyTransactionPreparedQueueOffset = "TRAN_PREPARED_QUEUE_OFFSET"
	PropertyTransactionCheckTimes          = "TRANSACTION_CHECK_TIMES"
	PropertyCheckImmunityTimeInSeconds     = "CHECK_IMMUNITY_TIME_IN_SECONDS"
	PropertyCorrelationID                  = "CORRELATION_ID"
	PropertyReplyToClient                  = "REPLY_TO_CLIENT"
	PropertyMessageTTL                     = "TTL"
	PropertyMessageType                    = "MSG_TYPE"
	PropertyArriveTime                     = "ARRIVE_TIME"
	PropertyShardingKey                    = "SHARDING_KEY"  // Go client
	PropertyJavaShardingKey                = "__SHARDINGKEY" // Java client
	PropertyInnerNum                       = "INNER_NUM"
)
