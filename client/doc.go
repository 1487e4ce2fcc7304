// Package client is ledgermq's own Go client: a producer (synchronous,
// asynchronous, one-way and batch sends with fast failover, and an
// outcome for every send that a caller, and the chaos harness, can
// classify as stored, not stored, or unknown), a PullConsumer and a
// PushConsumer. It speaks the
// RocketMQ remoting protocol (package remoting, headers from package
// protocol), so it works against Java brokers too; against ledgermq's
// raft broker groups it fails over in well under a second.
//
//	p, err := client.NewProducer(client.WithNameServers("10.0.0.1:9876"), client.WithGroup("orders"))
//	defer p.Close()
//	res, err := p.Send(ctx, &client.Message{Topic: "Orders", Body: body, ShardingKey: orderID})
//	switch client.OutcomeOf(err) {
//	case client.OutcomeOK:      // stored; res.MaybeDuplicated() if it may be stored twice
//	case client.OutcomeFailed:  // certainly not stored: safe to send again
//	case client.OutcomeUnknown: // may be stored (once, or more): reconcile by res/err UNIQ_KEY
//	}
//
// # Why it exists
//
// rocketmq-client-go reads routes every 30 s and keeps dialling a dead
// leader in between, so after a leader is killed every send fails for
// 18–29 s although the name server lists the new leader (brokerId 0)
// about a second later. This client reads the route again at once after
// any failed attempt, waits (re-reading with backoff) while a group is
// between leaders, and goes to the new leader as soon as the name server
// names it. TestLeaderKillFailover measures the longest gap between two
// acknowledged sends across a leader kill (logged, not asserted).
//
// # The send path
//
//	Send ─ prepare: validate, properties + UNIQ_KEY, zlib if body >= 4 KiB
//	  └─ deliver (bounded by ctx and WithSendTimeout, default 3 s)
//	       ├─ resolve: route (cached; re-read, coalesced, before every retry)
//	       │     ├─ queue: ShardingKey/selector → hash; else round robin,
//	       │     │         skipping the group that just failed and groups
//	       │     │         the latency fault table avoids
//	       │     ├─ no leader in the route → wait 10…50 ms, re-read, again
//	       │     ├─ same address whose link just failed → wait once, re-read
//	       │     └─ an address that refused this send (leadership) → wait
//	       │        once, 20 ms doubling to 200 ms, re-read; a new address
//	       │        (the new leader) is tried at once
//	       ├─ attempt: SEND_MESSAGE (10) or SEND_BATCH_MESSAGE (320) to the
//	       │           group's leader (brokerId 0)
//	       └─ not stored → refresh the route at once; retry if the failure
//	                       is retryable: a leadership refusal (dial failed,
//	                       14, 501, 1500) until the send times out, any other
//	                       within the budget (WithRetries, 2)
//
// A leader kill or an election therefore costs a send time, not a failure:
// with the default 3 s timeout a send rides out elections of a second or
// more. Retries stop early, as failed, when the time left is less than
// twice the next wait, so that the last attempt does not time out in
// flight and turn a certain failure into an unknown outcome.
//
// Every message carries a UNIQ_KEY chosen before the first attempt and kept
// by every retry, so copies of a message stored twice share SendResult.MsgID.
//
// # Outcomes
//
// Every send ends in one of three outcomes. The errors are *SendError,
// which lists every attempt (Attempt: queue, address, outcome, error,
// latency, start) and matches ErrSendFailed or ErrUnknownOutcome with
// errors.Is, plus its cause (a *BrokerError with the code, remoting.ErrConnClosed,
// ErrNoRoute, ErrInvalidMessage, context errors, …). A send is unknown as
// soon as one of its attempts is, whatever the later ones did.
//
//	what happened to an attempt                       outcome  retried
//	------------------------------------------------  -------  -------------
//	answer 0, or 10/11/12 (stored with a warning)     ok       -
//	dial failed (refused, unreachable, WithDial hook, failed   until timeout
//	  TLS handshake)
//	answer 14, 501, 1500 (no writable leader there)   failed   until timeout
//	answer 2, 16, 17 (refused before storing: busy,   failed   yes
//	  no permission, no topic yet)
//	answer 13, 29, 3, 15, 215 (invalid, unsupported)  failed   no
//	answer 1 SYSTEM_ERROR (raft outcome unknown)      unknown  yes *
//	answer 14 after a follower's failed relay         unknown  yes *
//	connection lost after the request was written     unknown  yes *
//	timeout (the send's deadline)                     unknown  -
//	any other answer code                             unknown  no
//	success answer with a malformed header            unknown  no
//
// (*) A retry after an unknown attempt may store the message a second
// time; the SendResult then says MaybeDuplicated, unless a duplicate
// window covered the retry. A ledgermq broker group keeps a replicated
// window of the (topic, UNIQ_KEY) pairs it stored recently (the broker's
// dedup.window, 2 min by default) and answers a send of a pair it holds
// with the first store instead of storing it again (SendResult.Duplicate);
// every answer names the window the group applied
// (SendResult.DedupWindow). An unknown attempt is covered when the
// acknowledged attempt went to the same broker group, its answer named a
// window, and it started less than that window after the unknown attempt
// started (both on the client's clock, Attempt.Start). A retry to another
// broker group (a send without ShardingKey moves to another group after a
// failure), an answer without a window (the window off, a RocketMQ
// broker) and a retry after the window stay maybe duplicated.
// WithRetryAfterUnknown(false) stops at the unknown attempt instead
// (ErrUnknownOutcome), for callers that would rather reconcile than
// duplicate. Two cases are
// reported unknown although nothing was sent, because remoting cannot tell
// them apart from a lost request: a pooled connection found dead just as
// the request was queued, and a context that ends while dialling.
// classifyCode and classifyTransport hold the table.
//
// SendOneWay writes the request and returns; a nil error means written,
// with an outcome unknown by nature. SendAsync runs Send's path on a
// goroutine and hands its result to a callback. SendFunc is for a caller
// that keeps many sends in flight: it queues the first attempt with
// remoting's InvokeFunc and returns, and the attempt is settled, by the
// same code as Send's, on the goroutine that ends the call, which hands
// the result to the callback; only a send that needs a route read, a
// dial or a retry goes on on a goroutine (as SendAsync's). So a send
// answered at once costs no goroutine hand-off, and the frames queued by
// one read of answers leave in one write.
//
// # TLS
//
// WithTLS (a *tls.Config) or WithTLSFiles (a CA file, and optionally a
// client certificate and key, re-read when they change) run every
// connection, to name servers and brokers alike, over TLS; the server's
// certificate is checked for the dialled host. The handshake is part of
// the dial (bounded by remoting's DialTimeout), so a refused one sent
// nothing and the attempt is failed, not unknown. WithAdminTLS and
// WithAdminTLSFiles do the same for Admin. Off by default.
//
// # Credentials (ACL)
//
// WithCredentials (WithAdminCredentials for Admin) signs every request,
// to name servers and brokers, with an access key and secret key as
// RocketMQ's ACL clients do (package auth; a retry is signed afresh). A
// broker with its ACL on answers NO_PERMISSION (a *BrokerError with Code
// 16 and a remark naming what was refused) to unsigned requests and to
// requests the account may not make.
//
// # Routes
//
// The route cache maps each topic to its publish view (RocketMQ's
// TopicPublishInfo): the writable queues of every group, sorted, and each
// group's leader address. It is filled on first use, refreshed every
// WithRouteRefreshInterval (30 s) in the background, and at once after
// any failed attempt. At most one GET_ROUTEINFO_BY_TOPIC per topic is in
// flight; callers wanting the route meanwhile share it. A refresh that
// fails keeps the cached route. A topic the name servers do not know gets
// the TBW102 route (queue counts capped at 4), so the broker auto-creates
// it on the first send, after which the real route is read.
//
// A group listed without brokerId 0 (its leader died, an election is under
// way) keeps its queues in the order used for hashing, so ordered keys do
// not move during a failover; sends to it wait for a route with a leader.
//
// # Latency fault tolerance
//
// As RocketMQ's MQFaultStrategy (on by default; WithLatencyFaultTolerance):
// a group whose last send took >= 550 ms, >= 1 s, >= 2 s, >= 3 s, >= 15 s
// is avoided for 30 s, 60 s, 120 s, 180 s, 600 s; a failed send counts as
// 30 s of latency (600 s). Avoided groups are skipped while another group
// can take the message; with a single group, or all avoided, the one
// available first is used. Raft refinement: the fault is recorded against
// the leader address it was measured on, and a route naming a new leader
// for the group lifts it. Ordered sends and custom selectors ignore the
// table (a key must not move).
//
// # Goroutines and ownership
//
// Every goroutine the package starts is owned by a Producer (or a
// consumer: see PullConsumer and PushConsumer for theirs) and has ended
// when Close returns:
//
//	goroutine                       started by           ends
//	------------------------------  -------------------  ------------------------------
//	route refresh loop (1)          NewProducer          Close (context cancelled)
//	route fetch (1 per topic in     the route cache      its GET_ROUTEINFO answer or
//	  flight)                                            timeout; Close cancels it
//	async send (1 per SendAsync)    SendAsync            after its callback returns
//	SendFunc's rest (1 per send     SendFunc             after its callback returns
//	  not settled at once)
//	remoting read loops, callbacks  remoting.Client      Close
//
// Close refuses new sends, waits for the sends in progress (each bounded
// by its timeout), then stops the refresh loop and closes the
// connections. Callbacks must not call Close. Sends may be called from
// any goroutine; the route cache and fault table take short mutexes and
// never hold them across I/O. The package's tests run goleak in TestMain.
//
// # Consumers
//
//	c, _ := client.NewPushConsumer(client.WithNameServers(ns), client.WithGroup("billing"))
//	c.Subscribe("Orders", client.Selector{Expression: "paid || refunded"}, func(ctx context.Context, m *client.MessageExt) client.ConsumeResult {
//		return client.ConsumeSuccess // or ConsumeRetryLater: back through %RETRY%billing
//	})
//	c.Start(); defer c.Close()
//
// Both consumers pull with PULL_MESSAGE (11), long-polling (the broker
// holds a pull that finds nothing for WithLongPollTimeout, 20 s), always
// carrying the subscription in the request (sysFlag SUBSCRIPTION), so a
// broker that has not seen the heartbeat yet (a new leader) filters
// right. Pulls go to the group's leader, or to a follower while there is
// none (every node serves the committed log); offset commits, send-backs
// and the consumer list go to the leader. Like sends, every consumer call
// re-reads the route at once after a transport error or
// SERVICE_NOT_AVAILABLE (consumerBase.call), so consumption moves to a
// new leader as soon as the name server lists it, instead of after
// RocketMQ's 30 s route refresh. Bodies sent compressed are inflated.
//
// PullConsumer: the caller assigns queues (Assign, Queues) and moves
// positions (Seek, SeekToTime); Poll long-polls every assigned queue at
// once; Commit stores the positions after what Poll returned.
//
// PushConsumer: HEART_BEAT (34) to every node of every group of its
// topics, on Start and every 30 s; a rebalance on Start, every 20 s and
// on NOTIFY_CONSUMER_IDS_CHANGED (40, served through
// remoting.ClientConfig.OnRequest) shares each topic's queues among the
// group's members (GET_CONSUMER_LIST_BY_GROUP, 38) with an
// AllocateStrategy (RocketMQ's average allocation by default, so a group
// may mix our consumers and rocketmq-client-go's). A member list that
// cannot be read, or that lacks this member, keeps the queues held
// rather than dropping them all (RocketMQ drops them). Each queue held
// has a process queue (flow control: WithQueueLimits) and a pull loop;
// messages are consumed on a worker pool; the offset committed (every
// 5 s, when a queue is given away, and on Close) is the lowest offset not
// yet consumed. A message the handler fails is sent back (36) and comes
// again through %RETRY%<group>, which is subscribed automatically; the
// broker moves it to %DLQ%<group> after WithMaxReconsumeTimes. Close
// sends UNREGISTER_CLIENT (35), so the others rebalance at once.
//
// # Admin
//
// Admin (admin*.go) is the operator's API, which `ledgermq admin` is
// built on: topics (create, delete, list, route, per-queue status),
// subscription groups, consumer progress and connections, offset reset
// by time (a dry run unless executed), messages by id, key, queue offset
// and time, the cluster with each node's raft role, term, applied index
// and lag, health, and raft membership (transfer leadership, add a node
// as a non-voter and promote it once caught up, remove a node). It uses
// RocketMQ's requests where RocketMQ has them and ledgermq's raft
// requests (4001–4004) for membership.
//
// # Orderly consumption
//
// WithConsumeOrderly makes a PushConsumer orderly (push_orderly.go): in
// clustering mode it locks its queues (LOCK_BATCH_MQ, 41, a batch per
// broker group) before pulling them, renews the locks every 20 s, hands
// each queue's messages to one worker at a time in offset order, stops a
// queue whose lock it lost, and unlocks (42) queues it gives away or holds
// on Close after committing their offsets (a give-away waits at most 1 s
// for a running handler before it leaves that queue's release to a
// goroutine of its own, so one slow handler does not stall the
// rebalance); ConsumeRetryLater retries the same message locally after
// WithSuspendCurrentQueueTime. A worker that has had one queue for
// WithMaxTimeConsumeContinuously (60 s) while another queue waits lets
// that queue go first, so a busy queue cannot starve the others.
//
// # Request-reply
//
// Producer.Request (request.go) sends a message carrying CORRELATION_ID,
// REPLY_TO_CLIENT and TTL and waits for its reply; NewReply makes the
// reply a consumer sends with any producer, which goes to the cluster's
// reply topic with SEND_REPLY_MESSAGE (324). The broker pushes it to the
// requester (PUSH_REPLY_MESSAGE_TO_CLIENT, 326) over the connection the
// requester heartbeats as a producer: it heartbeats the leaders of the
// request topic's and of the reply topic's routes before it sends.
//
// # Traces
//
// WithTrace makes a producer write a Pub event for every message it sends
// and a push consumer a SubBefore and a SubAfter for every message it
// handles, in RocketMQ's trace format, batched into messages of the trace
// topic (trace.go); Admin.MessageTrace reads a message's events back.
//
// # Transactions
//
// NewTransactionProducer (transaction.go) sends a message as a half
// message (sysFlag 4, TRAN_MSG, PGROUP), runs the listener's
// ExecuteLocalTransaction once it is stored, and sends the outcome with
// END_TRANSACTION (37) to the current leader of the group that stored it:
// commit and rollback are sent again while no node answers or the one
// asked is not the leader (the broker applies an outcome once); unknown is
// written without waiting. The producer heartbeats (34, producerDataSet)
// the leaders it uses, at once and every 30 s, so a leader can check back:
// a CHECK_TRANSACTION_STATE (39) for the producer's group calls
// CheckLocalTransaction, whose answer goes to the asking broker as a new
// END_TRANSACTION with fromTransactionCheck; a check for another group is
// ignored.
//
// # Left for later increments
//
// Batch consumption (a handler taking several
// messages), the consume timeout (RocketMQ's 15 min), the SEND_MESSAGE
// fallback when a send-back fails (the message is consumed again locally
// after 1 s instead), heartbeats of plain producers, request-reply and
// namespaces.
package client
