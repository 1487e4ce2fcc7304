// Package console is ledgermq's web console, `ledgermq console`: the
// operator's view that RocketMQ users get from rocketmq-dashboard, served
// by the ledgermq binary itself over the admin API (package client) and
// the nodes' operator endpoints (package ops).
//
//	ledgermq console --namesrv 127.0.0.1:9876 [--listen 127.0.0.1:8080]
//
// # Pages
//
//	path                        what
//	--------------------------  ---------------------------------------------------
//	/cluster                    every broker group and its nodes: role, term, last,
//	                            commit and applied index, lag, voter, brokerId on the
//	                            name servers (ClusterList), the health check
//	                            (Health), each node's own /status and readiness;
//	                            the leader of each group, its raft format version,
//	                            each node's replica verifier (RaftStatus), and the
//	                            leader changes the console has seen. Refreshes itself.
//	/topics, /topics/{t}        the name servers' topics (system topics on request);
//	                            one topic's route and queues with min/max offsets
//	/groups, /groups/{g}        subscription groups; one group's lag per queue,
//	                            online clients (language, version), subscriptions,
//	                            and the offset reset by time
//	/messages                   search by message id, key, queue offset or time
//	                            range; body as text and hex, properties, and the
//	                            trace (MessageTrace) of the first 8 found
//	/chart, /api/metrics        live inline-SVG charts of the send and consume
//	                            rates and every node's raft apply lag, sampled
//	                            from /metrics
//	/pending                    per broker group, the timer messages waiting for
//	                            their time, the half messages waiting for
//	                            END_TRANSACTION and the POP messages in flight per
//	                            consumer group and topic: how many, how many due
//	                            again, the oldest invisible-until (PendingTimers,
//	                            PendingTransactions, PopState)
//	/acl                        per node, whether the ACL is on and which rules
//	                            it enforces (GET_BROKER_RUNTIME_INFO's aclHash,
//	                            aclIndex, aclFrom); per group, its accounts and
//	                            white list as written, secret keys hidden
//	                            (GET_BROKER_CLUSTER_ACL_CONFIG, an admin call)
//
// The one action, the offset reset, is a POST in two steps: a dry run
// (ResetOffsetByTime without Execute) shows each queue's offset before
// and after, and only its page offers to execute that same reset, behind
// a checkbox the server requires (confirm=yes).
//
// # Why server-rendered HTML and a page of our own JavaScript
//
// Every page is rendered by html/template from the admin API's answers:
// the template escapes every topic, key, property and body by context, so
// no data from the cluster is ever turned into markup by concatenation,
// here or in the browser. The script (assets/static/console.js, under 200
// lines) only swaps in a server-rendered fragment (the cluster page
// reloads its #live block), draws the chart from /api/metrics with SVG
// DOM calls, and hides the search fields the chosen mode does not use;
// every page works without it, the chart aside. That keeps the console
// one binary with no build step and no third-party front-end code to
// vendor, audit or update (htmx or a chart library would be both), and
// lets a strict Content-Security-Policy (scripts and styles from 'self'
// only, no inline code) hold. A single-page application would need an
// npm build and a JSON API for every view, for pages that are tables.
//
// # Where the numbers come from
//
// The cluster page's raft columns are ClusterList's (RAFT_STATUS of every
// member, lag against the leader's commit index); the health block is
// Health (lag bound DefaultCatchUpSlack). Each node's /status and
// /metrics are read at its http_addr, learned once per node from its
// GET_BROKER_CONFIG; a node whose http_addr is empty or port 0 shows no
// /status and drops out of the chart. The chart's sampler (one goroutine,
// owned by Run) asks ClusterList and every node's /metrics each
// SampleEvery and keeps 90 points: the send rate is the increase of the
// leaders' rocketmq_messages_in_total per second, the lag each node's
// ledgermq_raft_apply_lag_entries.
//
// The leader history is kept in memory from every ClusterList the
// console reads (the sampler's and the cluster page's): a group whose
// leader or leader's term differs from the last seen is a change; a
// group without a leader changes nothing until the next one shows up.
// The last 50 per group are kept; a restarted console starts empty.
//
// # Security
//
//   - Cluster credentials: with ACL on, the console signs its admin calls
//     with --access-key/--secret-key, and --tls-ca (with --tls-cert and
//     --tls-key) runs them over TLS, the same flags as `ledgermq admin`.
//     An operator may instead sign in on /login with an account of their
//     own (Config.SignIn, session.go): the session's pages then sign every
//     call with it, so the console needs no account of its own.
//   - The console's listener binds 127.0.0.1:8080 by default. Any address
//     that is not loopback needs --console-user and --console-password
//     (HTTP basic auth on every request, compared in constant time);
//     without them the command refuses to start (CheckListen). With
//     --https-cert and --https-key the command serves the console over
//     TLS (its listener; the files re-read when they change) and sets
//     Config.HTTPS: the cookie is then Secure and Strict-Transport-Security
//     is sent.
//   - CSRF: the process draws a random token at start and sets it in a
//     cookie (HttpOnly, SameSite=Strict, Secure over HTTPS); every POST must carry it in the
//     cookie and in the form's hidden field, and an Origin header, when
//     sent, must name this console. GET never changes anything.
//   - Every answer carries a Content-Security-Policy (default-src 'self',
//     no inline script or style, no framing), X-Frame-Options DENY,
//     nosniff and no-store.
//
// # Goroutines
//
// Run owns two: the HTTP server's Serve and the sampler; both have ended
// when Run returns (ctx done: Shutdown waits up to 5 s for requests in
// flight). A page's handler may start one goroutine per node to read
// /status in parallel and waits for them before it renders.
package console
