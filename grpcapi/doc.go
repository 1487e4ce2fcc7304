// Package grpcapi serves RocketMQ 5 clients: the gRPC service
// apache.rocketmq.v2.MessagingService (proto/, generated into v2pb by
// `make proto`), in one of two shapes, as RocketMQ 5's proxy has them:
//
//   - local mode (Config.Broker): on a port of its own beside a broker
//     node's remoting port, served by the node's broker (what follows);
//   - cluster mode (Config.Cluster, `ledgermq proxy`): a stateless proxy
//     in front of every broker group its name servers know. Routes name
//     the proxy's own endpoint (Config.Advertise) for every queue of
//     every group; a message goes to a group and queue chosen as below
//     over the groups' writable queues, and its SEND_MESSAGE_V2 (an
//     END_TRANSACTION: to the group the transaction id names) to the
//     group's leader over remoting, as are a pull consumer's calls; POP
//     consumer calls are relayed to the leader's gRPC port, which each
//     broker publishes in its GET_BROKER_CONFIG answer
//     (broker.GRPCEndpointKey); a receive that
//     names no group takes the readable groups in turn, an ack the group
//     its receipt handle names. A send whose leader is gone waits for the
//     route to name the next and is sent there once (cluster.go).
//     With ClusterConfig.ACL the proxy checks every call as a node does
//     (below), against the plain ACL the broker groups replicate, which
//     it reads with GET_BROKER_CLUSTER_ACL_CONFIG as its own admin
//     account (ClusterConfig.Credentials) and keeps current (every
//     ACLRefresh, and at once, at most once a second, for an access key
//     it does not know; clusteracl.go says why it holds an account rather
//     than forwarding the caller's); what it sends the brokers over
//     remoting is signed with that account, and relayed consumer calls
//     carry the client's signature to the leader, which checks it again.
//
// Both shapes run the same handlers over a backend (backend.go: local.go,
// cluster.go).
//
// Every producer request becomes the remoting request the broker already
// serves (broker.Broker.ServeLocal), so the gRPC port stores messages
// exactly as the remoting port does: the same checks, the same raft
// proposal, the same forwarding from a follower to the group's leader;
// POP consumers are served by the broker's POP consumption (Popper), pull
// consumers by its pull and offset requests. What is served:
//
//   - QueryRoute: the topic's queues, each named by the broker group and
//     (local mode) the gRPC endpoint of the node serving writes (the leader's, when
//     Config.Peers names it; else this node's, which forwards), permission
//     and the message types a queue accepts (all four: topics carry no
//     type). An unknown topic is TOPIC_NOT_FOUND.
//
//   - Heartbeat, NotifyClientTermination: acknowledged.
//
//   - Telemetry: each Settings the client sends is answered with the
//     settings it should use (the retry policy, the request timeout, the
//     publishing or subscription settings); the stream stays open until
//     the client or the server ends it.
//
//   - SendMessage: each message as a SEND_MESSAGE_V2 (convert.go: the
//     client's message_id is the message's UNIQ_KEY and its id for good;
//     the message group is the sharding key and picks the queue, so that a
//     group stays in order; a delivery timestamp makes a timer message;
//     a TRANSACTION message is stored as a half message). The queue is
//     chosen here, as RocketMQ's proxy does, not taken from the client.
//
//   - EndTransaction: commits or rolls back the half message named by the
//     transaction id SendMessage answered (it carries the half message's
//     place and group, txid.go).
//
//   - ReceiveMessage, AckMessage, ChangeInvisibleDuration,
//     ForwardMessageToDeadLetterQueue (receive.go, ack.go): POP
//     consumption over the broker's replicated POP state (broker/pop.go).
//     The broker picks the queues of a receive across the topic (the
//     clients name queue 0 only), hands out up to batch_size messages,
//     each invisible to the group for invisible_duration, and long-polls
//     up to long_polling_timeout within the call's deadline, woken by a
//     new message, an ack or a receipt's expiry. The answer is a Status
//     (OK; MESSAGE_NOT_FOUND when nothing came, which clients do not
//     treat as an error), the messages (body uncompressed with its CRC32
//     digest, receipt handle, delivery attempt, queue offset), then the
//     delivery timestamp. A message not acknowledged in time comes back
//     with attempt+1; after the group's retry max (16 unless the group
//     says) it goes to %DLQ%<group>. A receipt handle is stale once its
//     message went out again or had its invisible time changed
//     (INVALID_RECEIPT_HANDLE). POP is served by the group's leader
//     (routes name it; a follower relays these calls to the leader's
//     gRPC port when Config.Peers names it, forward.go, and otherwise
//     answers INTERNAL_SERVER_ERROR, which clients retry) and once the
//     group is at format version 4 (VERSION_UNSUPPORTED before).
//
//   - QueryAssignment: the broker group as one queue (id -1), as
//     RocketMQ's proxy answers for POP; Heartbeat of consumers checks the
//     group; the Telemetry subscription settings carry the group's max
//     attempts and whether it is a FIFO group (its consumeMessageOrderly:
//     the broker then hands out each queue's messages in order, the next
//     ones only after those in flight are acknowledged).
//
//   - PullMessage, UpdateOffset, GetOffset, QueryOffset (pull.go): the
//     PullConsumer's offset-based consumption of a queue the client names
//     (its broker group and id, one of the topic's readable queues), each
//     as the broker's remoting request through the backend, as a send is:
//     PULL_MESSAGE (up to batch_size messages, at most 32, from offset,
//     the filter as the pull's subscription, no offset committed; long-
//     polled up to long_polling_timeout, at most 25 s, within the call's
//     deadline: the broker holds the pull, over remoting from the proxy,
//     in process on a node's port, broker.Broker.ServeLocalWait, until a
//     message comes, the time is up or the call ends), UPDATE_CONSUMER_OFFSET (replicated by the group's
//     leader), QUERY_CONSUMER_OFFSET, and GET_MIN_OFFSET, GET_MAX_OFFSET
//     or SEARCH_OFFSET_BY_TIMESTAMP by the query's policy. A pull
//     answers, as RocketMQ's proxy does, a Status (OK; MESSAGE_NOT_FOUND
//     when nothing new matched; ILLEGAL_OFFSET for an offset outside the
//     queue), the messages (as a receive hands them out, without receipt
//     handle), then the offset to pull from next. A group with no offset
//     of a queue is OFFSET_NOT_FOUND, unless the broker answers 0 (it
//     does while the queue still holds its first message).
//
//   - RecallMessage (recall.go): a timer message's recall handle, which
//     SendMessage answers (SendResultEntry.recall_handle), sent as the
//     broker's RECALL_MESSAGE to the group the handle names
//     (broker/recall.go): OK with the message id, or the broker's
//     refusal (its ILLEGAL_OPERATION is INTERNAL_SERVER_ERROR, as
//     RocketMQ's proxy maps it); a handle that does not decode is
//     BAD_REQUEST.
//
// SyncLiteSubscription answers NOT_IMPLEMENTED. A half
// message a gRPC producer never ends is checked back over the telemetry
// stream of a producer of its topic (orphan.go).
//
// Security. With Config.TLS (the node's tls.enable: the remoting port's
// certificates, re-read when they change) the port serves TLS; clients
// are not asked for a certificate, and a follower relays to the leader's
// port over TLS (Config.PeerTLS). With Config.Access (the broker's ACL
// on), interceptors check every call (auth.go): the RocketMQ 5 signature
// (metadata x-mq-date-time and authorization "MQv2-HMAC-SHA1
// Credential=AK, SignedHeaders=x-mq-date-time, Signature=HEX", the hex
// HMAC-SHA1 of the date-time keyed with the account's secret key) is
// verified against the group's replicated plain ACL, white lists
// included; then each remoting request the call amounts to is authorized
// by the broker's code table (broker/acl.go): a send is SEND_MESSAGE_V2
// (PUB on the topic), a receive, ack, invisible-time change, dead-letter
// forward, assignment query or pull a PULL_MESSAGE of its group and
// topic (SUB on both), UpdateOffset and GetOffset UPDATE_CONSUMER_OFFSET
// and QUERY_CONSUMER_OFFSET (SUB on both), QueryOffset GET_MIN_OFFSET,
// GET_MAX_OFFSET or SEARCH_OFFSET_BY_TIMESTAMP (SUB on the topic),
// EndTransaction END_TRANSACTION (PUB), RecallMessage RECALL_MESSAGE
// (PUB on the topic), telemetry settings PUB
// on their publishing topics and SUB on their subscription, routes a
// valid signature. A bad or missing signature or an unknown account is
// UNAUTHORIZED, a missing permission FORBIDDEN (telemetry: the stream
// ends with PermissionDenied). The requests sent through ServeLocal are
// checked again there for the call's identity. A call a follower relays
// carries the client's signature, checked again by the leader, and the
// client's address, stated and signed by the follower with the group's
// cluster secret (relayauth.go), which the leader checks the call from:
// a client let in by a white-listed address alone works through any
// node. A call the proxy relays carries the client's signature too, and
// the client's address, stated and signed by the proxy's admin account
// in a scheme of its own, which the leader checks the call from: a
// white-listed client works through the proxy. The proxy checks
// each call against the rules of the broker group that serves it, and a
// call tied to no group against any group's (clusteracl.go). The
// date-time is not held against the clock, as RocketMQ's proxy does not:
// TLS keeps the signature from being replayed.
//
// Metrics: with Config.Observer, an interceptor (the first in the chain,
// so the ACL's refusals count) reports each call's method, gRPC status
// code, RocketMQ status code (the answer's Status; a stream's first) and
// duration when it ends (observe.go); the binary counts them in Prometheus
// series, on a node's http_addr and on the proxy's --http alike
// (cmd/ledgermq/grpcmetrics.go).
//
// Goroutines: Start runs the gRPC server on one goroutine; each telemetry
// stream's reader runs on one goroutine owned by the stream's handler; in
// cluster mode with the ACL, one goroutine owned by the backend re-reads
// the rules (New starts it, Stop ends it).
// A long poll waits on its handler's goroutine. Stop ends them all (long
// polls answer at once), waits, then closes the connections to leaders.
package grpcapi
