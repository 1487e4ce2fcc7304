// Package jepsen is ledgermq's chaos harness (`ledgermq jepsen run`,
// `ledgermq jepsen replay PLAN`, `ledgermq jepsen check DIR`): it starts a name server and one broker
// group (or several, --groups) as real processes of the ledgermq binary, runs producers and a
// consumer group through our client while a fault plan drawn from a seed
// is applied, heals, drains, reads every replica, checks the history and
// writes a report. Nothing here imports package testing: the command
// links it.
//
// # What runs
//
//	harness process                           processes of the binary
//	---------------------------------------   ---------------------------------
//	producers p0…pN-1 ─┐                      ledgermq namesrv
//	txn producers t0…  │                      ledgermq broker n0, n1, n2 (…n4)
//	register r0…       ├─ client proxies ───▶ each node's raft peers are one proxy
//	consumers c0…      │  (Net, 127.0.0.1)    per node (shared, the sender named
//	POP consumers s0…  │                      (--workload pop: the gRPC ports too)
//	nemesis            │                      by its process); the others' client
//	monitor (status)   ┘                      ports and the name server are
//	                                          proxies of its own links
//
// Mechanism: harness-owned TCP proxies (proxy.go). Every directed link
// has its proxy: client→node (the address each node advertises, so the
// name server hands it out), client→namesrv, node→namesrv, and for every
// ordered pair of nodes i→j one for forwarded sends (node i's config
// names j's client port at it). With --workload pop every node also
// serves the RocketMQ 5 gRPC port (grpc_listen): client→node has a
// second proxy, to it (node i's grpc_addrs name it for i itself), and
// every i→j one more, through which a follower relays POP calls to the
// leader's gRPC port (grpc_addrs names j's at it); both share their
// Link's policy with the client port's proxies, so every fault applies. Raft is different: a membership change
// hands every node the leader's address for each server, so every node
// must reach node j's raft port at one address, RaftProxy(j) — the raft
// configuration is the same on every node — and that proxy names each
// connection's sender by the process that holds its other end (the
// kernel's socket table: /proc/net/tcp's inode, found among the node
// processes' /proc/PID/fd; proxy_source.go, Linux only). Every process
// dials from 127.0.0.1, so the address alone could not tell them apart;
// no broker change was needed. A connection whose sender cannot be named
// is refused (raft dials again), so no traffic passes outside a policy.
// A proxy forwards bytes from→to under Policy(Link{from,to}) and the
// answers under Policy(Link{to,from}), so a one-way fault is one Link. A
// Policy blocks (holds every byte, the socket stays open: a silent
// partition; held bytes pass after the heal unless the peer gave up),
// delays each chunk (plus jitter, order kept), or "loses" chunks with a
// probability, as a hold of one retransmission time (a byte stream cannot
// drop bytes without corrupting the framing). Network namespaces were not
// used: iptables is not installed here and netem is absent from the
// kernel, and proxies reach every fault of this increment. The monitor's
// status polls, the final reads and leadership transfers go to the
// nodes' own ports, past the proxies, so observing never suffers a
// fault. Snapshots installed from the leader and membership changes keep
// every link's meaning, since every node names every server alike.
//
// --tls and --acl (security.go) run the group as production runs it:
// a local CA in DIR/tls and TLS on every link (raft mutual), RocketMQ's
// plain ACL (DIR/plain_acl.yml) on every node and the name server; the
// workloads sign as a publish/subscribe account, the harness's admin,
// status polls and final reads as an admin account. The proxies pass
// TLS bytes through, so every fault means what it means in plaintext.
//
// Processes (cluster.go) run in their own process group with
// Pdeathsig=SIGKILL, so none outlives the harness; Stop sends SIGCONT,
// then SIGINT (SIGTERM to the name server), and SIGKILL after a grace.
//
// # Run directory
//
//	DIR/plan.json      the fault plan (below); replay runs it again
//	DIR/history.jsonl  every event, one JSON object a line (below)
//	DIR/results.json   the verdict line, the mechanism and every figure
//	DIR/report.html    verdict, figures, SVG timeline, plan, the register's section
//	DIR/register.html  porcupine's visualization of the register history (embedded
//	                   in and linked from report.html; with --workload register)
//	DIR/cluster.json   devcluster's format with the nodes' own addresses
//	DIR/proxies.json   the address clients use for each node and the name server
//	DIR/nI.conf nI/ nI.log namesrv.log cluster.secret
//
// A temporary directory (no --dir) is removed at the end unless --keep.
// `ledgermq jepsen check DIR` runs the checkers again on DIR's history
// (the CommitLog comparison is taken from results.json).
//
// # Plan format
//
//	{"seed":7,"nodes":3,"time":"1m0s","nemeses":["kill","partition"],
//	 "faults":[{"at":"5s","kind":"kill","targets":["leader"],"duration":"6.2s"},
//	           {"at":"17s","kind":"partition","shape":"halves","targets":["n1"],"duration":"8s"}, …]}
//
//	kind       targets                what it does; healing
//	---------  ---------------------  -------------------------------------------------
//	kill       leader | nI | majority SIGKILL; restart
//	pause      leader | nI            SIGSTOP; SIGCONT
//	partition  shape isolate: leader  cut the targets from the rest (both directions)
//	           shape halves: minority cut a minority from the majority
//	           shape bridge: nI       groups[0] | groups[1] cut, targets[0] sees both
//	           shape ring (5 nodes)   each node sees only its two ring neighbours
//	oneway     leader (inbound?)      block what the leader sends (or receives) to/from nodes
//	loss       leader | nI            every link of the target "loses" chunks with p=loss
//	delay      leader | nI            every link of the target delayed delay+jitter
//	namesrv    namesrv                SIGKILL of the name server; restart
//	transfer   -                      leadership transfer every "every" for the duration
//	power      leader | nI | all      SIGKILL, every file cut back to what was fsynced; restart
//	disk-full  leader | nI            the node's tmpfs filled until ENOSPC; filler removed
//	member     nI (wipe?)             remove nI from the raft group (leadership handed
//	                                  away first if nI leads); wipe: SIGKILL, else it
//	                                  keeps running removed. Heal: stop it, wipe: move
//	                                  its data aside (as admin raft replace-node), start
//	                                  it, AddNode (non-voter, caught up, voter); after
//	                                  the run's heal every node is a voter again
//	hostile    namesrv + leader | all 32 connections per target each announce a 16 MiB
//	                                  frame (REGISTER_BROKER to the name server,
//	                                  SEND_MESSAGE to a node's client port), send its
//	                                  header and 12 MiB, and stall; one the server
//	                                  closes dials again. Heal: close them (a "step"
//	                                  event counts those the servers closed). Not a
//	                                  leader fault: sends must go on during it
//	group-down all (--groups 2+)      SIGINT to every node of the fault's group at once
//	                                  (a whole-group stop); start them all again
//
// # Two or more broker groups (--groups N)
//
// The cluster has N groups of --nodes nodes (broker-a: n0…, broker-b:
// b0…, as `ledgermq dev --groups` lays them out), one name server, every
// link through the proxies as above. The topic is created on every group
// and routed to all of them before the load; the producers send without a
// sharding key, so our client spreads them over every group's queues by
// the name server's route and sends around a group that is down. The plan
// is one timeline per group (plan_groups.go; broker-a's is the one-group
// plan of the same seed), every fault naming its "group" and acting
// there ("leader" and "all" resolve in it), the timelines run at once.
// While a group-down fault lasts no other group has a fault, so sends
// must keep being acknowledged by the others. Every event of the history
// carries its "group". The checkers run on the whole topic (positions are
// group, queue, offset; replicas compared within their group) and on each
// group's narrowed history (check_groups.go); the verdict line adds
// " broker-a(acked=N lost=N duplicates=N divergent=N) …" (with
// --exactly-once " exactly-once-duplicates=N" before the ")") and the summary a
// line per group (and its transactions' and register's lines) and the
// sends made while a group was down.
//
// The txn and register workloads run on every group too. A transaction
// is the group's that stored its half message: the client spreads the
// transactions over every group's queues, sends END_TRANSACTION to that
// group's leader (as a RocketMQ producer ends a transaction on the broker
// that stored its half message) and retries a half message whose
// attempt's outcome was unknown on the same queue only, so that no other
// group holds a copy to check back and commit apart; that group checks
// it back ("txn-check" events carry the asking group). The committed
// message must be stored in the group and queue the half message's
// answer named (txn-misplaced). Each group holds its own consumer
// offsets, so a register key is a group's queue: each register client
// draws a group as well as a queue and goes to that group's leader;
// porcupine checks every key of every group (the topic's verdict) and
// each group's keys alone (its line). Every nemesis acts within its
// fault's group: power cuts back and restarts the group's nodes ("all" is
// the group's), disk-full fills a node of the group (every node of every
// group has its tmpfs), member removes a node from its own group's raft
// configuration and adds it back (leadership handed to another node of
// that group), hostile stalls frames against the name server and the
// group's leader or nodes; their "step" events name the group.
//
// power: with a power fault in the plan every node runs with
// store.sync_report=true and records, after each fsync, how much of each
// file is durable (internal/syncreport: the model, per kind of file, is
// in its package doc). After the kill the harness cuts every recorded
// file back to that (truncates, punches out the unsynced tail of a
// preallocated file), fsyncs the node's files, records in its boot record
// that the machine has booted since (dledger.MarkPowerLoss) and restarts it
// at the heal; a "step" event per node says how many files and bytes were
// cut. Under ASYNC_FLUSH (the default) the raft log is flushed in the
// background, not per append: a cut node comes back abstaining from votes
// until it has caught up with the leader (dledger's abstain.go). "all" is
// every node at once: with it, I1 holds only if every acknowledged entry
// was fsynced on a majority, which SYNC_FLUSH does and ASYNC_FLUSH does
// not promise, so a run whose nodes do not run SYNC_FLUSH narrows "all" to
// the leader and says so (make chaos runs power a second time under
// SYNC_FLUSH).
//
// disk-full: with a disk-full fault in the plan every node's data
// directory is a tmpfs of DiskSize bytes of its own, mounted before the
// nodes start and unmounted when the run ends (error, Ctrl-C and SIGTERM
// included; not after a SIGKILL of the harness); without the right to
// mount, the run is refused (ErrDiskFullUnsupported). The fault writes a
// filler file until ENOSPC and removes it at the heal. The harness is
// then also the nodes' service manager (supervise.go): a node that stops
// itself on a full disk (it cannot apply a committed entry, I8) is
// started again once its disk has space; each exit and start is a step
// event. The nodes' files go with the tmpfs at the end of the run.
//
// "leader" is resolved when the fault starts (the monitor's last poll);
// every other choice was drawn from the seed when the plan was made.
// Faults never overlap; there is a quiet start (5 s) and a fault-free
// tail, and the heal phase heals everything again whatever the plan did.
//
// # History (history.jsonl)
//
// Times t, invoke are milliseconds since the run began (monotonic).
//
//	type    fields
//	------  ---------------------------------------------------------------
//	send    process p<i>, value p<i>-<seq>, seq, invoke, t (completion),
//	        outcome ok|failed|unknown (client.OutcomeOf), queue, offset, node
//	        (the acknowledging node), msgid, attempts, maybe_dup, error
//	recv    process c<i>, value, seq, queue, offset, msgid, reconsume
//	read    node, value, seq, queue, offset, msgid: the final read of that
//	        replica (every queue from offset 0, at its own address)
//	fault   kind, phase start|step|end, targets (resolved), leader (at the
//	        start), detail (the plan's fault; a step's: what was done, e.g.
//	        "remove n1", "add n1 back …"), error
//	status  node, role (leader, follower, candidate, down, unreachable), term,
//	        leader: written when a node's role or term changes
//	offset  node, queue, offset: the consumer group's committed offset as
//	        that node holds it (GET_CONSUME_STATS, its own table: queries
//	        are the leader's; polled every 500 ms at its own address),
//	        written when it changes; kind "final": once more after
//	        convergence (-1: no answer)
//	txn     process t<i>, value t<i>-<seq>, seq, invoke, t, outcome of the
//	        half send, kind the local transaction's outcome, queue, node,
//	        error (the send's, or the END_TRANSACTION's)
//	txn-check  value, outcome (commit|rollback): a check-back answered
//	        (group: the group that asked, in a run of two or more)
//	register   process r<i>, kind read|write, queue (the key; with two or
//	        more groups group and queue), offset (the value written or
//	        read), invoke, t, outcome ok|failed|unknown, node (where the
//	        route pointed)
//	phase   kind load|heal|drain|final-read
//	pop     process s<i>, kind start|recv|ack|change (--workload pop):
//	        start, once per consumer; recv, one per message delivered
//	        (value, seq, queue, offset, msgid, attempts: the delivery
//	        attempt, receipt: its handle, invoke: when the receive was
//	        sent, node: the node asked, outcome ok) or a receive that failed
//	        (outcome failed|unknown, error, no value); ack, one per entry of
//	        an AckMessage (the delivery's fields, invoke, t, outcome
//	        ok|failed|unknown: failed is INVALID_RECEIPT_HANDLE, unknown no
//	        answer or another error); change, a ChangeInvisibleDuration
//	        (detail: the new duration and receipt when ok)
//
// queue and offset are -1 where not known, and meaningless on events
// that are not about a message.
//
// # Workload
//
// Producers send unique payloads one at a time (our client, 2 s send
// timeout, 2 retries; or WorkloadConfig.NewSender's Sender, e.g. the real
// rocketmq-client-go in compat's TestJepsenRealClientSender), each with
// its producer id as sharding key, so one producer's messages share a
// queue and their order there is checkable.
// A push consumer group (ConsumeFromFirstOffset) receives throughout. At
// the end: heal, stop the producers, wait for the group to serve, drain
// until every acknowledged value was delivered (bounded), wait until the
// replicas' statuses converge, read every replica, stop the processes and
// compare their CommitLogs byte for byte (devcluster.CompareCommitLogs).
//
// --workload adds to it: txn (workload_txn.go) two transactional
// producers t0, t1 sending t<i>-<seq> to the same topic (received by the
// same group) through client.TransactionProducer, the local transaction's
// outcome named by the payload — by seq%5: 0,1 commit; 2 rollback; 3
// unknown, then commit on check-back; 4 unknown, then rollback; a
// transaction whose local transaction never ran (half send failed or
// unknown) is answered rollback — and kept open until the drain ends to
// answer check-backs; register (workload_register.go) three clients
// reading (QUERY_CONSUMER_OFFSET) and writing (UPDATE_CONSUMER_OFFSET,
// values unique and increasing over the run) three queues' offsets of a
// group no consumer uses, one operation at a time, each to the leader the
// name server routes to (route refreshed every second and after a
// failure), recording invoke and answer times (with two or more groups
// each operation draws its group first: a key is a group's queue); pop
// (workload_pop.go) three SimpleConsumers s0… of one consumer group
// (jepsen-pop) receiving the same topic over the nodes' gRPC ports (up to
// 8 messages a receive, invisible 3 s, long polls of 2 s), each receive
// to a group's leader as the name server routes it (in turn over the
// groups), through the proxies: by a hash of the value, a first delivery
// is acknowledged (most; one AckMessage a batch), left un-acknowledged
// (it must come back with attempt 2), has its invisible time cut to 1 s
// and is left, or has it changed and is acknowledged with the new
// receipt handle; a redelivery, and every delivery once the load ends,
// is acknowledged. The drain waits for the POP group too.
//
// # Checkers (check.go)
//
// The final log is the replicas' reads merged by (queue, offset).
//
//   - lost: an ok send whose value is in no replica's final read; split by
//     the value's place among its producer's values found: prefix (below
//     the first), middle (between: definite loss), postfix (after the
//     last); also per node (lost-on-node: missing from that replica) and
//     per acknowledging node.
//   - unexpected: a value read or delivered that no producer sent.
//   - duplicates: a value stored at more than one queue offset (a retry
//     after an unknown attempt may do that); unjustified when the send was
//     acknowledged at its only attempt — the broker stored one send twice.
//     redelivered: one queue offset delivered more than once (allowed).
//   - exactly-once (--exactly-once, CheckInput.ExactlyOnce): a value
//     stored at more than one queue offset of one broker group
//     (GroupDuplicates; in the summary duplicates-within-a-group). Every
//     group keeps a duplicate window (the broker's dedup.window, 2 min)
//     that answers a retry of a stored (topic, UNIQ_KEY) with its first
//     store, and a retry keeps its UNIQ_KEY, so no retry to the same group
//     within the window may store a value again, even after an unknown
//     attempt. A copy in another group (a retry that moved there) is not
//     counted: no one group's window sees both.
//   - inconsistent-offsets: a queue offset whose value differs between
//     replicas, or a delivery the final log does not hold at that offset
//     (data served and then lost: uncommitted reads).
//   - reorders: a producer's value stored in its queue below a value the
//     same producer had acknowledged before sending it. gaps: a stored
//     queue offset never delivered to the group.
//   - divergent: queue offsets where the replicas' reads differ (1 if only
//     the CommitLog bytes differ).
//   - offset-regressions: a node's committed offset of a queue went down
//     while the group ran (reported, allowed: commits still pending on a
//     leader that was killed or lost leadership may be lost, and a
//     restarted node answers what it has applied so far);
//     offset-divergent: once the replicas have converged (after the
//     consumers stopped), a queue whose committed offset differs between
//     nodes — replicated metadata (docs/invariants.md I5) must agree; it counts in
//     divergent.
//   - transactions (check_txn.go): txn-lost, a committed transaction
//     (local transaction ran, decision commit) in no replica's final read;
//     txn-rolledback-delivered, any other one stored or delivered;
//     txn-duplicates, one stored at two offsets (always unjustified: a
//     transaction commits once whatever its half message's retries);
//     txn-misplaced, a committed one stored in another group or queue
//     than its half message's answer named (it is ended on the group that
//     stored its half message). The first three are folded into lost,
//     unexpected and (unjustified) duplicates.
//   - register (register.go): the register history checked by porcupine
//     per key (a group's queue with two or more groups), as a register
//     whose acknowledged writes may be lost (the
//     broker acknowledges a commit before raft commits it) but whose
//     reads never go back: linearizable=true|false in the summary,
//     results.json and the report; an operation without an answer is open
//     (returns after the end of the history). A timed-out search (1 min)
//     is reported, not judged.
//   - pop (check_pop.go), with --workload pop, per group too:
//     pop-never-received, an acknowledged send (or committed transaction)
//     the POP group never received (no message lost to POP across the
//     faults); pop-ack-lost, a delivery of a message (a group's queue
//     offset: a value stored twice is two messages) by a receive sent
//     after an ack of it was answered OK — a failover must never lose an
//     ack. Allowed: a redelivery whose receive was sent before the ack's
//     answer (they raced), and any after an ack that failed or whose
//     outcome is unknown. pop-attempt-regressions, a delivery whose
//     receive was sent after another delivery of the message was
//     answered, with a lower attempt (the same attempt again is counted,
//     attempt-repeats, not judged). Reported: received (distinct values),
//     deliveries, redelivered (attempt above 1), acks by outcome, changes,
//     receive failures.
//
// The verdict is PASS when nothing was lost, unexpected, unjustifiably
// duplicated, inconsistent, reordered, skipped or divergent, the register
// (if run) was linearizable, the POP checks (if run) found nothing and
// the final read worked, and (with --exactly-once) no value was stored
// twice within one group; it is the last line (the exactly-once part with
// --exactly-once only, the pop part with --workload pop only):
//
//	verdict: PASS|FAIL acked=N lost=N unexpected=N duplicates=N divergent=N max-unavailable-ms=N exactly-once-duplicates=N pop(received=N redelivered=N ack-lost=N never-received=N)
//
// # Testing the tester
//
// check_test.go plants every anomaly in hand-written histories. Broker
// builds broken on purpose (build tag jepsenbroken, internal/canary,
// switched on by JEPSEN_BROKEN) must fail a run, each by the checker
// meant for it (cmd/ledgermq TestJepsenCatchesBrokenBuilds, run by make
// chaos): ack-before-commit loses acknowledged sends of an isolated
// leader (lost, middle); apply-twice stores every 50th entry twice
// (unjustified duplicates); reset-offsets makes a node serve only the
// offsets committed to it since it started, so a restarted node (and any
// follower) answers 0 where its peers answer the replicated offsets
// (offset-divergent); skip-fsync (under SYNC_FLUSH the raft log fsyncs
// each segment file once and skips every later fsync, so nothing records
// the entries as durable) loses acknowledged sends at a power loss of
// every node (lost); serve-uncommitted answers every 3rd offset commit to
// reads for 100 ms and never hands it to raft, so the register goes back
// to an older value after a read (linearizable=false, --workload
// register); pop-ack-in-memory answers every POP ack at once and never
// proposes it, the leader only remembering it (its own receives skip the
// receipt), so after the leader is killed the next one delivers the
// acknowledged messages again (pop-ack-lost, --workload pop).
//
// # Not yet (later increments)
//
// Adding a node that was never a member (a 4th or 6th; the membership
// nemesis removes and adds back the group's own nodes, wiped or not) and
// network namespaces (proxies reach every fault). Power loss reverts
// neither files rewritten in place (IndexFiles, raft-wal's bbolt
// metadata) nor renames that were not yet made durable: see
// internal/syncreport for why keeping them is one outcome a power loss
// can have.
package jepsen
