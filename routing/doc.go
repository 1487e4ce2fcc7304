// Package routing is the name server: brokers register with it, clients
// ask it where a topic's queues are. It keeps, in memory only, every
// broker group (broker name) with its live members by broker id, the
// topics each group serves, and when each member last sent a heartbeat.
// Name servers share nothing; a broker registers with every one of them
// (every 30 s, and at once on a role or topic change), so any of them can
// answer a client. The broker side of that exchange (RegisterBroker,
// UnregisterBroker) lives here too.
//
// In ledgermq every broker group is a Raft group. Its leader registers
// with broker id 0, its followers with their own ids ≥ 1, and every
// registration carries the node's Raft term as dataVersion.stateVersion.
//
// # Pieces
//
//	RouteTable  pure state under one RWMutex: no I/O, no clock, no
//	            goroutine; times are passed in (table.go, query.go)
//	Server      a remoting.Server serving the table, plus the expiry
//	            scan (server.go, handlers.go)
//	confirm.go  Checker (RaftStatusChecker); the registrations waiting
//	            for their node's confirmation and the workers that ask
//	body.go     REGISTER_BROKER body codec, JSON and deflated
//	broker.go   RegisterCommand, RegisterBroker, UnregisterBroker
//	            (signed with Config.Secret's counterpart, package auth)
//	acl.go      access control (Config.ACLEnable): what each request
//	            needs, the check, the file's reload
//	limit.go    rate-limited logging of refusals
//	clock.go    Clock; SystemClock; ManualClock for tests
//
// # Invariants
//
//   - Confirmation (docs/invariants.md I9). A registration that is not a heartbeat of
//     a confirmed member (same group, broker id, address and term) changes
//     no route until the node at its address confirms it: the name server
//     asks that address for RAFT_STATUS (4001) and requires the node's own
//     group to be the broker name, its term to be at least the claimed
//     one, and its role to be leader for id 0, or follower or candidate
//     for an id ≥ 1 (a leader registered under another id would lose its
//     id 0). Until then the previous confirmed members stay routed
//     (clients keep the old leader; a dead one is gone with its
//     connection). The check runs on confirmWorkers workers, never on
//     the registration handler: each attempt is bounded by
//     Config.ConfirmTimeout (1 s), a node that cannot be reached is tried
//     confirmAttempts (3) times 100 ms apart, and a contradicted or
//     unreachable claim is dropped and logged (rate-limited). At most
//     MaxPendingClaims (1024) wait, one per group and address (a newer
//     registration replaces the one waiting); beyond that a registration
//     is answered SYSTEM_BUSY. The confirmed member is the cache: its
//     heartbeats are applied at once. On a failover the new leader's
//     claim costs one RAFT_STATUS round trip (the name server's
//     connection to the node usually exists from confirming it as a
//     follower). A broker that does not answer RAFT_STATUS (not a
//     ledgermq broker) is never confirmed and so never routed.
//   - Fencing (docs/invariants.md I6). A registration is refused with ErrStaleTerm,
//     answered NOT_LEADER_FOR_QUEUE (501) and changes nothing, when its
//     term is lower than (a) the term recorded for the same address in
//     the group (a node's term never goes back), or (b) the term of
//     another address holding the broker id it claims (Java's
//     stateVersion rule). Only live, confirmed members fence: a claim's
//     term stops fencing when its member expires, unregisters or loses its
//     last connection, so no claim, forged or stale, locks a group out
//     after its claimant has gone. An equal term passes: the Raft leader
//     of a term is unique, and a leader that steps down without a new
//     term re-registers as a follower in it.
//   - Connections. A member remembers the open connections it registered
//     on (at most maxMemberConns, 4, the latest kept) and is removed when
//     the last of them closes, so a stranger who repeats its heartbeat and
//     disconnects does not take it along.
//   - Unregistration. UNREGISTER_BROKER is honoured only on a connection
//     the member registered on, or when signed with the cluster secret;
//     otherwise it is answered NO_PERMISSION (16) with the reason and
//     changes nothing. It also drops the address's registration waiting
//     for confirmation.
//   - Signatures. With Config.Secret set, REGISTER_BROKER and
//     UNREGISTER_BROKER must carry a signature with the cluster secret
//     (package auth: RocketMQ's ACL signature, access key
//     auth.ClusterAccessKey) and a SignTime within Config.SignWindow
//     (±5 min) of the name server's clock, with a signature not seen
//     before in that window (replay). Anything else is answered
//     NO_PERMISSION with the reason (ErrUnauthenticated), changes
//     nothing, and is logged at most once per 10 s per kind with a count
//     of what was left out. Without a secret, signatures are neither
//     required nor checked, and confirmation, fencing, connections and
//     the topic rule below are what protect the routes: an attacker who
//     runs a server that lies in RAFT_STATUS can still register a group
//     of its own or, while its claim is the newest, pose as a leader.
//     Configure a secret wherever strangers can reach the name server.
//   - Access control (Config.ACLEnable, off by default as RocketMQ's
//     aclEnable). With it on, every request is checked against
//     Config.ACLFile (RocketMQ's plain_acl.yml, package acl) before its
//     header or body is parsed, and in addition to the cluster-secret
//     checks above; a refusal is NO_PERMISSION (16) with the acl error as
//     remark ("acl: DELETE_TOPIC_IN_NAMESRV needs an admin account,
//     accessKey K is not one"), changes nothing, and is logged
//     rate-limited. See "Access control" below.
//   - One id per address, one address per id. An accepted registration
//     removes the address's entry under any other id (a promoted
//     follower leaves its old id, a deposed leader leaves 0) and another
//     address's entry under the claimed id (the former leader disappears
//     when a new one claims 0; it re-registers as a follower).
//   - Topics come from leaders only. A registration with id 0 replaces
//     the group's whole topic set when the leader is new or its
//     DataVersion differs from the one last applied; a follower's topics
//     are ignored (Java's rule). A group without a leader keeps its
//     topics, so consumers keep pulling from followers during an
//     election; producers skip it (no brokerAddrs "0"). A group loses its
//     topics with its last member. DELETE_TOPIC_IN_NAMESRV holds until
//     the leader's DataVersion changes.
//   - Topics a group may share. The same topic on several groups is
//     normal (an admin creates it on every group of a cluster; auto-create
//     lands on any group), a group that lists a topic to attract its
//     producers is not. A leader registration's topic that other groups
//     serve is taken only if (1) the registration is signed with the
//     cluster secret (with a secret configured every registration is, so
//     every signed group may share any topic, as in RocketMQ), or (2) the
//     name server is within Config.TopicGrace (60 s) of its start (brokers
//     re-register in any order), or (3) the group already served the
//     topic at some time since the topic was last served by no group
//     (a restarted group keeps its share), or (4) the group was first
//     registered no later than the topic was first served (so `updateTopic
//     -c` on every existing group works). Otherwise the topic is left out
//     of the group's routes and logged ("topics served by other groups
//     not taken"); the group's other topics are served. A topic no group
//     serves is free: the first group to list it serves it. Consequence
//     without a secret: a group added after a topic exists cannot share
//     it; configure a cluster secret for that.
//   - Liveness. A member whose last registration is more than its timeout
//     old (heartbeatTimeoutMillis, else Config.BrokerExpiry, 120 s) is
//     removed by the scan that runs every ScanInterval (10 s). A member
//     whose last registration arrived on a connection that closes is
//     removed at once.
//   - Order. REGISTER_BROKER and UNREGISTER_BROKER run on the
//     "heartbeat" pool, which has one worker, so requests apply in the
//     order they arrived: a broker's role change is never overtaken by
//     its older periodic registration sent on the same connection.
//   - Routes. Every route answer has queueDatas and brokerDatas in broker
//     name order, one each per serving group, and every brokerDatas entry
//     has a brokerAddrs object (possibly {}), written as compact JSON
//     with the ids as string keys. Addresses are validated as host:port
//     without ',', '"' or spaces, because clients parse that object's
//     text by splitting it.
//   - Hostile input (docs/invariants.md I7). Nothing a peer sends makes the package
//     panic: a malformed request is answered SYSTEM_ERROR with the reason
//     and logged with the peer; the body decoders check every length,
//     bound inflation (protocol.MaxInflatedBody) and queue counts (protocol.MaxQueueNums),
//     and are fuzzed.
//
// # Requests served
//
//	code  request                            pool       answer
//	----  ---------------------------------  ---------  --------------------------------
//	103   REGISTER_BROKER                    heartbeat  0 (applied, or waiting for its node's
//	                                                    confirmation); ext masterAddr,
//	                                                    haServerAddr (follower, leader
//	                                                    known); 501 stale term; 16
//	                                                    unsigned/stale/replayed (secret
//	                                                    set) or refused by the ACL; 2
//	                                                    too many waiting; 1 malformed
//	104   UNREGISTER_BROKER                  heartbeat  0 (also when nothing matched); 16
//	                                                    from a stranger's connection
//	                                                    unsigned, or unsigned/stale with
//	                                                    a secret set
//	105   GET_ROUTEINFO_BY_TOPIC             default    0 + TopicRouteData; 17 unknown
//	106   GET_BROKER_CLUSTER_INFO            default    0 + ClusterInfo
//	206   GET_ALL_TOPIC_LIST_FROM_NAMESERVER default    0 + TopicList
//	216   DELETE_TOPIC_IN_NAMESRV            default    0
//	100   PUT_KV_CONFIG                      default    0; 1 when the KV file cannot be
//	                                                    written (the change is undone)
//	101   GET_KV_CONFIG                      default    0 + ext value; 22 not found
//	102   DELETE_KV_CONFIG                   default    0 (also when nothing matched)
//	219   GET_KVLIST_BY_NAMESPACE            default    0 + KVTable; 22 empty namespace
//	205   WIPE_WRITE_PERM_OF_BROKER          default    0 + ext wipeTopicCount
//	327   ADD_WRITE_PERM_OF_BROKER           default    0 + ext addTopicCount
//
// The KV configuration (kv.go; Config.KVConfigPath) is Java's
// KVConfigManager: namespace → key → value, kept in a JSON file written
// atomically on every change, or in memory without a path. Namespace
// ORDER_TOPIC_CONFIG holds ordered topics' broker lists
// ("broker-a:4;broker-b:4"), which a topic's route carries as
// orderTopicConf. WIPE_WRITE_PERM_OF_BROKER and ADD_WRITE_PERM_OF_BROKER
// change the group's queue perms in this name server's routes only (each
// name server is asked on its own, as mqadmin does), until the group's
// leader registers a changed topic table or a new leader registers.
//
// Any other code is answered REQUEST_CODE_NOT_SUPPORTED (3) by remoting.
// With the ACL on, any of them may also be answered 16 (Access control).
//
// # Access control
//
// What each request needs with Config.ACLEnable (acl.go's aclTable; a
// handler without an entry is not installed):
//
//	code  request                            needs
//	----  ---------------------------------  -----------------------------------
//	103   REGISTER_BROKER                    a valid signature of any account,
//	104   UNREGISTER_BROKER                  fresh: SignTime within SignWindow
//	                                         and not replayed (auth.Guard)
//	105   GET_ROUTEINFO_BY_TOPIC             nothing when unsigned; a request
//	106   GET_BROKER_CLUSTER_INFO            carrying AccessKey or Signature
//	206   GET_ALL_TOPIC_LIST_FROM_NAMESERVER needs a valid signature of any
//	                                         account
//	101   GET_KV_CONFIG                      as the route reads
//	219   GET_KVLIST_BY_NAMESPACE
//	216   DELETE_TOPIC_IN_NAMESRV            a valid signature of an admin
//	100   PUT_KV_CONFIG                      account
//	102   DELETE_KV_CONFIG
//	205   WIPE_WRITE_PERM_OF_BROKER
//	327   ADD_WRITE_PERM_OF_BROKER
//
// Decisions are acl.ACL's (Authenticate, then Authorize): a globally
// white-listed address, or an account's white-listed address, passes
// without a signature, as on the broker. Route reads stay open unsigned
// because RocketMQ's name server serves routes to anyone: clients
// without an account (Java's tools, a consumer of a public topic), this
// package's own users and `ledgermq dev` ask unsigned; what a route
// tells is only where to connect, and the broker checks every request
// that follows. A client that has an account signs every request (Java's
// AclClientRPCHook, rocketmq-client-go's ACL interceptor, package
// client), so a wrong secret is refused at the name server already.
//
// Registrations need an account, not an admin one: give the brokers an
// account of their own (broker config namesrv.access_key and
// namesrv.secret_key; RegisterRequest.Credentials). With a cluster secret
// too, a registration carries both signatures: the cluster secret's is
// made first (AccessKey auth.ClusterAccessKey, SignTime, SignNonce) and
// moved into the ext field ledgermqClusterSig; then the account signs
// over every field, that one included, setting AccessKey and Signature.
// The name server checks the account's with the ACL and the secret's on
// the fields as the secret signed them. A registration the ACL refuses
// counts as refused in Stats.
//
// The file is read by NewServer (one that does not parse stops it) and
// looked at every Config.ACLReloadInterval (3 s): when its modification
// time or size changed it is parsed again (acl.File, shared with the
// broker's reading of the same file); one that no longer parses is
// logged and the previous rules stay.
//
// # REGISTER_BROKER (103) request
//
// Ext fields (every value a string, as the protocol requires):
//
//	key                     required  value
//	----------------------  --------  --------------------------------------------
//	clusterName             yes       cluster name
//	brokerName              yes       broker group name, shared by its nodes
//	brokerAddr              yes       "host:port" clients dial
//	haServerAddr            yes       echoed to followers; may be ""
//	brokerId                yes       decimal int64 ≥ 0; 0 = leader
//	heartbeatTimeoutMillis  no        decimal, 0..86400000; 0 = server default
//	enableActingMaster      no        ignored ("false")
//	compressed              no        "true" selects the deflated body
//	bodyCrc32               no        CRC-32(body) & 0x7FFFFFFF; 0 = unchecked
//	AccessKey, Signature    secret    auth.ClusterAccessKey; HMAC-SHA1 of the
//	                        or ACL    sorted ext values and the body (auth);
//	                                  with the ACL: the account's key
//	SignTime, SignNonce     secret    signer's ms clock; 16 random bytes, hex
//	                        or ACL
//	ledgermqClusterSig      secret    the cluster secret's Signature when an
//	                        and ACL   account signs too (Access control)
//
// JSON body (compressed=false). Unknown keys are ignored (Java 5 brokers
// add mappingDataVersion, topicQueueMappingInfoMap, …); an empty body is
// an empty topic table at term 0:
//
//	{"topicConfigSerializeWrapper":{
//	    "topicConfigTable":{"<topic>":{"topicName":"<topic>","readQueueNums":4,
//	        "writeQueueNums":4,"perm":6,"topicFilterType":"SINGLE_TAG",
//	        "topicSysFlag":0,"order":false,"attributes":{}}, …},
//	    "dataVersion":{"stateVersion":<raft term>,"timestamp":<ms>,"counter":<n>}},
//	 "filterServerList":[]}
//
// Deflated body (compressed=true): a zlib stream that inflates to at most
// protocol.MaxInflatedBody bytes of
//
//	size  field
//	----  ---------------------------------------------------------------
//	4     L1 int32, then L1 bytes: DataVersion JSON
//	4     N  int32 topic count, then N times:
//	        4  L int32, then L bytes of topic text
//	           "<name> <read> <write> <perm> <SINGLE_TAG|MULTI_TAG> [<attributesJSON>]"
//	4     L2 int32, then L2 bytes: filter-server list JSON (unparsable: ignored)
//	4     M  int32 queue-mapping count, then M times 4-byte length + JSON
//	        (optional: absent in bodies of older brokers; skipped)
//
// Integers are big-endian; every length is checked against the bytes
// left. The topic text does not carry topicSysFlag or order.
//
// Fencing in practice: the broker puts its current Raft term in
// dataVersion.stateVersion (RegisterRequest.Term) and changes timestamp or
// counter whenever its topic table changes (RegisterRequest.DataVersion).
//
// # UNREGISTER_BROKER (104)
//
// Ext clusterName, brokerName, brokerAddr, brokerId (all required), and
// the four signature fields as for 103 when signed. The member of
// brokerName registered at brokerAddr is removed, whatever its id (Java
// removes by id, which lets a deposed leader's late unregister remove its
// successor), if the request came on one of its connections or is signed.
//
// # Answers
//
// GET_ROUTEINFO_BY_TOPIC (ext topic), compact JSON; queueDatas[i] and
// brokerDatas[i] describe the same group:
//
//	{"queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,
//	                "perm":6,"topicSysFlag":0}],
//	 "brokerDatas":[{"cluster":"DefaultCluster","brokerName":"broker-a",
//	                 "brokerAddrs":{"0":"10.0.0.2:10911","1":"10.0.0.1:10911"}}],
//	 "filterServerTable":{}}
//
// A topic no group serves is answered 17 TOPIC_NOT_EXIST, remark "No
// topic route info in name server for the topic: <topic>", no body.
// TBW102 (the auto-create template) is such a topic unless some leader
// reports it.
//
// GET_BROKER_CLUSTER_INFO:
//
//	{"brokerAddrTable":{"broker-a":{"cluster":"DefaultCluster","brokerName":"broker-a",
//	                                "brokerAddrs":{"0":"10.0.0.2:10911"}}},
//	 "clusterAddrTable":{"DefaultCluster":["broker-a"]}}
//
// GET_ALL_TOPIC_LIST_FROM_NAMESERVER: {"topicList":["A","B"]} (sorted).
//
// DELETE_TOPIC_IN_NAMESRV: ext topic, and optionally clusterName to
// delete it from that cluster's groups only.
//
// # Goroutines: who calls what
//
// Server.Start starts the remoting server (accept loop, one read
// goroutine per connection, pool workers), one scan goroutine and the
// confirmation workers, which ask nodes over the Server's own remoting
// client (one connection per confirmed node) and apply confirmed
// registrations to the RouteTable. Request handlers run on the pool
// workers and call the RouteTable; the scan
// goroutine calls RouteTable.Expire every ScanInterval; the connection
// close hook runs on the closed connection's read goroutine and calls
// RouteTable.RemoveConn. A registration that was still queued when its
// connection closed removes itself again after applying, so a closed
// connection never leaves a member behind. Close stops all of them and
// waits. RouteTable methods are safe for concurrent use; queries share the
// read lock.
//
// RegisterBroker and UnregisterBroker run on the caller's goroutine and
// block until the name server answers or ctx ends.
package routing
