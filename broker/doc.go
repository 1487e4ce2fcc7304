// Package broker serves the RocketMQ remoting protocol for one node of a
// broker group: producers' sends, consumers' pulls, heartbeats and offsets,
// and the admin requests, over the node's raft group (package dledger),
// whose store and metadata it reads and to which it proposes every write.
//
// The leader registers with the name servers as brokerId 0, every other
// node under its own id for life: the number its node id ends in plus one
// (n2 → 3, as RocketMQ's DLedger mode), else 1 + its position among the
// sorted node ids; each registration carries
// the raft term so name servers ignore a deposed leader (docs/invariants.md I6). A
// follower forwards sends to the leader, serves pulls of committed data,
// and answers SERVICE_NOT_AVAILABLE (14) when it can do neither.
//
// # Producer and admin side (send.go, batch.go, register.go, admin.go, codes.go)
//
// Requests served, pool, and which node answers:
//
//	code  request                  pool   node
//	----  -----------------------  -----  -----------------------------------
//	10    SEND_MESSAGE             send   leader; a follower forwards
//	310   SEND_MESSAGE_V2          send   leader; a follower forwards
//	320   SEND_BATCH_MESSAGE       send   leader; a follower forwards
//	370   RECALL_MESSAGE           send   leader; a follower forwards
//	17    UPDATE_AND_CREATE_TOPIC  admin  leader; a follower forwards
//	215   DELETE_TOPIC_IN_BROKER   admin  leader; a follower forwards
//	21    GET_ALL_TOPIC_CONFIG     admin  any node, from its replica
//	28    GET_BROKER_RUNTIME_INFO  admin  any node
//	33    VIEW_MESSAGE_BY_ID       admin  any node (offsets are replica-stable)
//	12    QUERY_MESSAGE            admin  any node
//
// Send header (ext): SEND_MESSAGE uses the long names, 310 and 320 the
// one-letter names. Required fields are marked *; a missing or unparsable
// one is SYSTEM_ERROR (1), as Java answers a header it cannot decode.
//
//	long                    short  type    long               short  type
//	----------------------  -----  ------  -----------------  -----  ------
//	producerGroup*          a      string  properties         i      string
//	topic*                  b      string  reconsumeTimes     j      int32
//	defaultTopic*           c      string  unitMode           k      bool
//	defaultTopicQueueNums*  d      int32   maxReconsumeTimes  l      int32
//	queueId*                e      int32   batch              m      bool
//	sysFlag*                f      int32   bname              n      string
//	bornTimestamp*          g      int64
//	flag*                   h      int32
//
// SEND_BATCH_MESSAGE body: a concatenation of items in the client-side
// message format (decodeBatch; not the stored layout). Every item gets
// the header's properties it lacks, and CLUSTER.
//
//	size  field
//	----  ------------------------------------------------
//	4     item size int32 (this field included) = 22 + n + p
//	4     magic (clients write 0; ignored)
//	4     body CRC (clients write 0; ignored)
//	4     flag int32
//	4     body length n int32
//	n     body
//	2     properties length p int16
//	p     properties
//
// Names (protocol.ValidateTopic, protocol.ValidateGroup): a topic is 1 to
// 127 bytes of [%|a-zA-Z0-9_-]; a consumer group the same charset and at
// most 120 bytes, so that %RETRY%<group> (and the shorter %DLQ%<group>)
// is a valid topic. A longer group is answered INVALID_PARAMETER (29)
// wherever it enters: HEART_BEAT, 200, CONSUMER_SEND_MSG_BACK, PULL_MESSAGE
// and UPDATE_CONSUMER_OFFSET (a heartbeat still registers the client's
// other, valid groups before it answers 29). A consumer whose send-back is
// refused falls back to a send to %RETRY%<group>, refused too, and keeps
// the message to retry it locally: nothing is acknowledged and lost, where
// a Java broker would create a retry topic our record layout cannot hold
// (and ledgermq used to acknowledge the retry, then drop it when due).
// Every path that creates a topic by itself
// (createTopic: auto-create, %RETRY%, %DLQ%, the schedule topic) checks
// the name first, so no topic over the limit is ever proposed.
//
// The send path on the leader, in order: header; topic name (RocketMQ's
// pattern, at most 127 bytes; TBW102 itself is refused: 29); body at most
// MaxMessageSize, properties at most 32767 bytes and well-formed (13);
// the topic, auto-created when unknown (%RETRY% topics with one queue,
// others from the template named by defaultTopic when it has PERM_INHERIT:
// min(defaultTopicQueueNums, template queues) queues, the template's perm
// without INHERIT; else 17), proposed as a metadata op and registered with
// the name servers before the answer; PERM_WRITE (16); queueId below
// max(read, write) queues (29; a negative id picks a queue at random); a
// %RETRY% message retried maxReconsumeTimes times (the header's when
// positive, else the group's retryMaxTimes, else 16) goes to %DLQ%<group>
// queue 0; then dledger.Propose. The answer's ext: msgId (offset ids,
// comma-joined for a batch), queueId, queueOffset (of the first message),
// transactionId (UNIQ_KEYs, comma-joined), MSG_REGION=DefaultRegion,
// TRACE_ON=true. For a delayed message, as Java answers: queueId is the
// topic's queue the producer chose (never the level's queue it is parked
// in; clients build SendResult.MessageQueue from it and the message's own
// topic), msgId and queueOffset are the parked copy's (offset id in the
// CommitLog, offset in SCHEDULE_TOPIC_XXXX queue level-1): its offset on
// the topic's queue exists only once it is delivered. rocketmq-client-go
// copies queueOffset into SendResult.QueueOffset and uses it for nothing
// else; the MsgID it reports is the UNIQ_KEY, which the delivered copy
// keeps.
//
// Forwarding: a node that is not the writable leader relays the request
// unchanged to the leader's client address (Config.Peers) with one ext
// field added, ledgermqForwardedFrom = the producer's address, which
// becomes the stored born host; the leader's answer goes back under the
// original opaque. A forwarded request reaching a non-leader, no known
// leader, or a failed relay answers 14, which clients retry.
//
// Error mapping: responseFor in codes.go is the one table from errors to
// response codes, for both sides of the package; handlers.go the one
// table of request codes, pools and handlers.
//
// Registration (I6): registerLoop registers with every name server at
// start, at once on every role event (b.roleCh) and on requestRegister
// (topic changes), and every RegisterInterval. The leader registers as id
// 0 and first proposes TBW102 when AutoCreateTopic is on and the metadata
// lacks it; a follower, and a candidate (an election under way, or an
// elected leader before its barrier), under its own id (followerID); a
// shut-down node unregisters. Every registration carries
// the raft term as dataVersion.stateVersion; dataVersion's timestamp and
// counter move when the topic table's content changes. Topic table = the
// replicated topics plus TBW102 (perm 7, DefaultTopicQueueNums queues)
// while AutoCreateTopic is on. Close unregisters after the loop stopped,
// before anything else stops (see Shutdown below).
//
// DELETE_TOPIC_IN_BROKER removes the topic from the replicated metadata
// (config and offsets) and from the name servers; its stored queues stay.
// Dropping them must happen in raft apply order on every replica
// (store.DeleteTopic called by the FSM when it applies the deleteTopic op),
// or a re-created topic's queue offsets would differ between replicas.
//
// Consumer side: consumer.go (34, 35, 38, 40), pull.go (11), offsets.go
// (14, 15, 29–32) and locks.go: LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42)
// for orderly consumers, served on the heartbeat pool by the leader (a
// follower forwards). A queue lock is a 60 s lease in the leader's memory,
// granted when free, held by the same clientId or expired, and forgotten
// when the raft term changes; the client renews it every 20 s. Only queues
// that exist here are locked (this broker's name, a known topic, a queue
// id in range); a group holds at most MaxLocksPerGroup leases and the
// table MaxLocks, and a sweeper, started and stopped with the broker,
// drops expired leases every 10 s.
//
// POP consumption (pop*.go; the gRPC port's SimpleConsumer): the leader
// hands out messages across a topic's queues, each invisible to the group
// until acknowledged or its invisible time ends, then delivered again
// (attempt+1), and after the group's retry max sent to %DLQ%<group>, by
// the next receive or by the leader's revive sweep (pop_revive.go),
// whichever comes first, exactly once. The positions and receipts are
// metadata (OpPop, format version 4) proposed in shared entries; pop.go
// has the design. popService's one goroutine is the revive sweep's,
// started and stopped with the broker; receives long-poll on their own
// callers' goroutines. The remoting port serves the same state to
// remoting POP consumers (POP_MESSAGE, ACK_MESSAGE,
// CHANGE_MESSAGE_INVISIBLETIME; pop_remoting.go; PEEK_MESSAGE,
// NOTIFICATION, POLLING_INFO and BATCH_ACK_MESSAGE in pop_peek.go,
// pop_notify.go and pop_batchack.go): their receipt is Java's ExtraInfo,
// mapped on the leader to the receipt it names; a POP_MESSAGE's or
// NOTIFICATION's long poll holds a worker of the pop pool.
//
// Filters (msgfilter.go): a pull delivers what its subscription selects —
// the request's own (pull consumers) or the one the group's heartbeat
// registered. TAG expressions skip queue units by tag hash in the store
// and check each record's tag exactly; SQL92 selectors (package filter)
// are evaluated against every record's properties, unless
// DisablePropertyFilter (enablePropertyFilter=false) refuses them with
// SYSTEM_ERROR as RocketMQ does. An expression that does not compile is
// answered SUBSCRIPTION_PARSE_FAILED (23).
//
// Delayed messages (delay.go) and CONSUMER_SEND_MSG_BACK (36,
// sendback.go): a send with a DELAY level is parked in
// SCHEDULE_TOPIC_XXXX (queue level-1, REAL_TOPIC/REAL_QID kept; park
// refuses a destination the scheduler could not deliver to, so nothing
// acknowledged is dropped when due) and the
// leader's scheduler delivers it when due, proposing the delivered copies
// and the level's progress in one raft entry (dledger.ProposeWithOp), so a
// failover neither repeats nor loses a delivery. 36 copies a failed
// message into %RETRY%<group> delayed by level 3 + reconsumeTimes (or the
// requested level), or into %DLQ%<group> after the maximum.
//
// Timer messages (timer.go, timer_index.go, timer_sched.go, package
// timerwheel): TIMER_DELIVER_MS (absolute ms), TIMER_DELAY_SEC and
// TIMER_DELAY_MS (relative to the leader's Config.Clock) of any delay up
// to TimerMaxDelay (default 3 days; beyond it MESSAGE_ILLEGAL, 13, as
// Java's WHEEL_TIMER_MSG_ILLEGAL; a value that does not parse too). A due
// time already passed is stored at once; a DELAY level wins (the timer
// properties are dropped); a message with TIMER_OUT_MS is not a timer; a
// timer batch or half message is refused (13). Otherwise the message is
// parked in rmq_sys_wheel_timer queue 0 with REAL_TOPIC, REAL_QID and
// TIMER_OUT_MS = its due time; the answer names the topic's queue, as for
// delays. Every replica indexes the parked queue into its timerwheel (on
// each dispatch of it, checkpointed every 5 s, rebuilt from the
// checkpoint and the queue at start); the leader's scheduler delivers, in
// (due, parked offset) order, each due timer's copy on its real topic and
// queue (timer properties removed, TIMER_OUT_MS and the rest kept), with
// the progress (enqueue cursor, delivery cursor, count) as offsets of
// %LEDGERMQ_TIMER_SCHEDULER% in the same raft entry: exactly once across
// failover. The timer scheduler and index own their start and stop
// (timerService) and reach the group through the timerRaft interface.
//
// Recall (recall.go, RocketMQ 5.3): the answer to a SEND_MESSAGE or
// SEND_MESSAGE_V2 that parked a timer carries Java's recall handle
// (recallHandle: base64 of "v1 topic brokerName TIMER_OUT_MS+1 UNIQ_KEY");
// RECALL_MESSAGE with it, before the timer is due, records the recall as
// an offset of an internal group (%LEDGERMQ_TIMER_RECALL%<second>), so
// the scheduler of every later leader skips the timer; the recall and the
// scheduler's rounds exclude each other, and the scheduler drops a
// second's recalls once every timer due by then is handled. Refusals as
// Java's: ILLEGAL_OPERATION (604) for a handle that does not decode,
// names another topic or group, or whose time passed or timer was
// delivered; TOPIC_NOT_EXIST for an unknown topic.
//
// Pending work (timer_admin.go; ledgermq's codes, protocol/pending.go):
// 4011 LEDGERMQ_LIST_PENDING_TIMERS (count, next due, the first limit in
// delivery order) and 4012 LEDGERMQ_LIST_PENDING_TRANSACTIONS (count, the
// oldest limit with age, check count and producer group), answered by the
// leader, forwarded by followers; a bad limit is INVALID_PARAMETER (29).
// 4014 LEDGERMQ_LIST_POP_STATE (pop_state.go, protocol/pop_state.go) is
// served the same way: PopState's rows (in flight, due, oldest
// invisible-until per consumer group and topic), filtered by group and
// topic when asked.
//
// Subscription groups (groups.go): 200 and 207 on the leader (followers
// forward), 201 and 352 from any replica; groups are replicated metadata.
//
// # Access control (acl.go)
//
// Off by default (Config.ACLEnable, RocketMQ aclEnable). When on, every
// row of the handler table is installed behind one check (withACL) that
// decides from aclTable what the request needs (PUB/SUB on topics and
// groups, an admin account) through package acl, and answers NO_PERMISSION
// (16) naming what was refused. Requests between the group's nodes carry a
// node signature made with the cluster secret; acl.go has the table and
// the reasons.
//
// The rules are the group's (aclsync.go): replicated through raft
// (metadata op "acl", format version 3) and part of the metadata snapshot,
// so every node, a new leader after a failover and a node restored from a
// snapshot enforce the rules the group last applied. A node's
// plain_acl.yml is how an operator edits them: a change a running node
// sees in its file is proposed (a follower sends it to the leader,
// LEDGERMQ_UPDATE_ACL 4013, node-signed); at start a node proposes its file
// only on condition that it is newer (modification time) than the file of
// the rules in force, decided at apply, so a restarted or restored node
// with a stale file cannot roll an edit back. GET_BROKER_RUNTIME_INFO shows
// aclHash, aclIndex (the raft index of the rules in force), aclFrom and
// aclFileHash (this node's file).
//
// # Parts, the group interface and the handler table
//
// The broker is a set of parts over one raft group. It reaches the group
// only through the interfaces of replica.go, which *dledger.Group
// satisfies (New takes a Replica; brokertest passes a real group):
//
//	interface   methods                                   used by
//	----------  ----------------------------------------  ---------------------------
//	Proposer    Propose, ProposeAsync, ProposeWithOp,     sends, admin writes, parts
//	            ProposeMetadata
//	Reader      Store, Metadata                           every handler, every part
//	Roles       Role, IsLeader, Barrier                   forwarding, registration,
//	                                                      schedulers, queue locks
//	GroupAdmin  Status, Members, AddVoter, AddNonvoter,   raftadmin.go only
//	            RemoveNode, TransferLeadership, Drain,
//	            Undrain
//
// Each long-running concern is a part with its own Start and Stop (its own
// context and WaitGroup: lifecycle in parts.go), built by New from the
// group's small interfaces and a few funcs, never from *Broker:
//
//	part             file          goroutines                  reaches
//	---------------  ------------  --------------------------  -------------------------
//	pullHolder       longpoll.go   waker + 4 workers           max offsets; re-read and
//	                                                           not-found funcs (pull.go)
//	offsetCommitter  offsets.go    flush every 100 ms          ProposeMetadata, Metadata,
//	                                                           IsLeader; leader address,
//	                                                           one-way send (follower)
//	lockTable        locks.go      sweeper every 10 s          nothing (handlers pass the
//	                                                           term)
//	delayScheduler   delay.go      a leaderLoop, 100 ms        ProposeWithOp, Reader,
//	                                                           Roles (barrier)
//	txn check-back   txncheck.go   a leaderLoop,               the broker's check round
//	                               TransactionCheckInterval    (txnState, producers)
//	consumerManager  consumer.go   notifications, expiry,      ProposeMetadata, Metadata,
//	                               auto-creation               IsLeader; a publish func
//	timerService     timer*.go     indexer (every node) and    ProposeWithOp, Reader,
//	                               scheduler (the leader)      Roles (barrier); the
//	                                                           timerwheel index
//
// The registration loop (register.go) is the Broker's own (b.ctx, b.wg).
// Handlers run on the remoting pools (send, pull, admin, heartbeat) and
// may block on a proposal (at most 10 s) or a forward (3 s); on the
// leader a send does not even reach a worker (serveSendInline): its
// connection's read goroutine reads it and proposes it, and the group's
// completer answers it (ProposeAsync); each
// registration round runs one short-lived goroutine per name server and
// waits for them.
//
// handlers.go holds the one table of request handlers: code, pool, and
// either the handler or, for requests only the leader serves, the
// leader's handler (a follower forwards those unchanged, leaderOnly). New
// installs the table and refuses a row with an unknown pool or a code
// given twice; the pools' sizes are in the same file.
//
// Start order: remoting server, hooks attached, client registry, long
// polling, offset committer, delay scheduler, timer service, transaction
// check-back, lock sweeper, registration loop.
//
// Lock order: no part holds its mutex while it calls the group or another
// part (the holder reads max offsets, the registry reads group configs,
// before or after taking theirs); a transaction's decision stripe
// (txnState.keyLock) is taken before txnState.mu; lifecycle.mu is held
// only by Start and Stop, which the parts' goroutines never call.
//
// Shutdown (Broker.Close), in this order, so that nothing accepted is lost:
//
//	step  what                                    why here
//	----  --------------------------------------  ------------------------------
//	1     stop the registration loop, unregister  clients stop being routed here
//	                                              while it still answers them
//	2     pullHolder.Stop: held pulls answered    answers need open connections
//	      PULL_NOT_FOUND, none held any more
//	3     remoting server Close: stop accepting,  every queued request has run
//	      close connections, run queued requests  (answers are not delivered)
//	4     delay scheduler, timer service (its     nothing feeds them any more
//	      index checkpointed), transaction
//	      check-back, client registry, lock
//	      sweeper stop
//	5     offsetCommitter.Stop: flush until       after 3 no commit can arrive;
//	      empty (raft on the leader, forward on   the raft group is still open
//	      a follower); then close the client
//
// # Testing
//
// broker/brokertest starts a name server and a broker group in the test
// process (StartCluster, on dledger/dledgertest's raft nodes over
// loopback; StartNode, one node whose raft layer is in memory); clients',
// compat and cmd tests use it. This package's tests run on StartNode
// unless they test replication, failover, forwarding or followers'
// registration (the 3-node StartCluster tests); the parts' unit tests
// build a part from its deps alone. Only tests import it, so the binary links
// neither it nor internal/faultnet (cmd/ledgermq's deps test checks
// that). This package's tests that drive a group are external tests
// (package broker_test, the *_cluster_test.go files and a few whole
// files); export_test.go hands them the internals they inspect (held
// pulls, the lock table's size, the Close hook) and the request builders
// and wait adapters that the internal unit tests share.
package broker
