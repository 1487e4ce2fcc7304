// Package dledger runs one broker group as one Raft group
// (hashicorp/raft, log and stable store hashicorp/raft-wal): the group
// elects its leader and fails over on its own, and every replica's message
// store holds the same bytes.
//
// # Write path
//
//	broker ──Propose──▶ proposer ──raft.Apply──▶ raft log ──▶ quorum commit
//	                                                                   │
//	        ◀── PutResults ◀── completer ◀── FSM.ApplyBatch ◀──────────┘
//	                                          store.PutEncoded(raft index, records)
//
// Propose runs on the leader. It stamps what varies between machines into
// each message before it is agreed on (store time from the leader's clock,
// store host = the group's identity, UNIQ_KEY if missing) and encodes it as
// a RocketMQ record, once: that record is what the raft log, the network
// and every replica's CommitLog carry. The proposer coalesces concurrent
// proposals into one raft entry (bounded by MaxBatchBytes and
// MaxBatchMessages): group commit, one raft log write per entry on each
// node (and under SYNC_FLUSH one fsync; see "Durability" below). At
// most MaxInFlight entries are proposed and not yet answered; the batcher
// closes the next entry only when a slot is free, after yielding briefly
// while answered proposers queue their next proposals, so under load
// entries grow rather than multiply (each entry costs a log write on every
// node and a network round whatever its size). A full queue answers
// ErrBusy; nothing queues without bound.
//
// The leader keeps the last 64 entries in memory for replication
// (raft.LogCache); a follower further behind reads them from the log.
// AppendEntries are not pipelined (the transport's MaxRPCsInFlight is 1):
// raft's pipeline can deadlock after a follower rejects a request, and
// with few, large entries in flight it gains nothing measurable.
//
// # One log (Config.OneLog; raft.log = commitlog, the default)
//
// The CommitLog can be the raft log itself: commitLogRaftLog (onelog.go)
// is raft's LogStore over the store's entry methods, and raft's term and
// vote live in raft/state.json (fileStable). StoreLogs splits an entry
// that carries records into its header and records, which the store writes
// once, with their queue and physical offsets (and under SYNC_FLUSH
// fsyncs once per append);
// the FSM then dispatches committed entries (fsm_onelog.go) instead of
// writing them. Every entry the FSM sees is dispatched, so the store's
// LastSeq is the FSM's applied index; a local snapshot's manifest ends at
// the snapshot's raft index (snapshotSink.coverIndex: raft counts the
// no-ops and barriers the FSM never sees). Group settings that change the
// geometry stop a node whose store differs instead of re-creating it (its
// CommitLog holds raft entries from the first one on). Every node of a
// group uses the same layout: a node without data asks the members for
// theirs and takes the layout of those that hold data, or, in a new group,
// Config.OneLog (layout.go); a group created with two logs switches in
// place once every member is configured for one (convert.go: a replicated op at format version 6, one restart
// of each node, which converts its data before raft starts; the
// CommitLog written beside raft-wal stays as the prefix a snapshot
// covers). A node's data, once one-log, stays so.
//
// # Durability (boot.go, abstain.go)
//
// Under SYNC_FLUSH every raft append is fsynced before StoreLogs returns,
// so an acknowledged send is on disk on a majority and survives every node
// losing power at once. Under ASYNC_FLUSH (the default, as in RocketMQ and
// NATS JetStream) the one-log store leaves appends to its background flush
// (store.flush_interval, 500 ms): a kill -9 loses nothing, since the page
// cache outlives the process, but a crash of the machine may take a node's
// last appends, some of which counted towards commits. Such a node must
// not help elect a leader that lacks them. The boot record (raft/boot.json:
// the machine's boot id, whether appends were unsynced, whether the node
// stopped cleanly) tells it at start; it then abstains — refuses every
// vote, pre-vote and hand-over, and sends none of its own (voteGate wraps
// raft's transport) — until its log is as long as the leader's was when
// it asked (node info's lastIndex), or a majority of the voters say they
// are recovering too (then no majority kept its log whole, and the group
// elects from what remains rather than not at all). /readyz says so and
// ledgermq_raft_abstaining is 1 meanwhile. The raft log (raft-wal) fsyncs
// every append in both modes.
//
// # Entry format
//
//	offset size field
//	0      1    format version the entry needs: 1 for types 1-3, 2 for 4,
//	            3 for a metadata entry carrying an "acl" op, 4 for a
//	            "pop" op, 5 for a "putGroup" op of a FIFO group
//	1      1    type: 1 messages, 2 metadata op, 3 messages and an op,
//	            4 replica checkpoint
//	2           messages: count uint32, then count × (length uint32, record)
//	            metadata: a metadata.Op as JSON
//	            messages and an op: op length uint32, the op as JSON, then
//	            a messages payload (ProposeWithOp: both parts or neither)
//	            checkpoint (20 bytes): from int64, to int64, CRC-32C uint32
//	            of the leader's CommitLog bytes in [from, to)
//
// # Fail-stop (I8)
//
// An entry a node cannot decode (a version or type this binary does not
// apply, damage) or apply (the store refuses it or cannot write, a
// metadata op fails) stops the node: the log line and Group.Err name the
// raft index and the reason (*ApplyError), the applied index stays before
// the entry, raft shuts down, Group.Failed is closed and `ledgermq broker`
// exits non-zero. It never skips: a skipped entry is a replica that
// differs from the others. For this to be safe the leader refuses before
// proposing whatever the store would refuse at apply (store.CheckEncoded
// on every record, with the group's settings; entries bounded by what one
// segment holds), so a bad client request never reaches the log.
//
// # Group-wide settings
//
// Every setting that changes what apply writes is the group's, recorded in
// the replicated metadata (metadata.Settings: segmentSize, maxMessageSize,
// unitsPerQueueFile, indexSlots, indexEntries, messageDelayLevel). The
// first leader, after its barrier and before it takes a write, proposes a
// bootstrap settings op with its own values (a later bootstrap op changes
// nothing). Applying it, a node adopts the group's values: the maximum
// message size at once; a different geometry by re-creating its store
// empty (store.Reconfigure) when nothing was ever written, else it stops
// with ErrSettings naming each key and both values; a different delay
// table by stopping once (ErrRestartNeeded): at the next start the broker
// runs the group's table. The metadata is saved right after the op, and
// Open reads it before it has the store opened (Config.Stores), so a node
// started later with other values opens its store with the group's (each
// difference logged).
// ProposeSettings changes them through raft: the geometry is fixed, the
// maximum message size may only grow (a smaller one could refuse at apply
// a message accepted before it). The broker's own maxMessageSize check is
// its own; a node whose broker allows more than the group is refused by
// the group (ErrBadMessage) before anything is proposed.
//
// # Peers by name
//
// A raft address (Config.Peers, AdvertiseAddr, AddVoter's) may name a host
// rather than an IP: a Kubernetes pod keeps its DNS name across restarts
// and gets another IP. Nothing resolves it for good. Raft keeps addresses
// as given, and the node advertises its own as configured, so a leader or
// candidate is known to its peers by name (Role's LeaderAddr); the TCP
// stream layer (dial.go) resolves a name with Config.Resolver
// (net.DefaultResolver unless a test gives its own) at every connection it
// opens, for raft's RPCs and for node info (layout, versions, drain) alike,
// and tries its addresses in turn. A peer that comes back at a new IP is
// reached once a connection to its old one fails and its name answers the
// new one.
//
// # TLS
//
// With Config.TLS the raft port is mutual TLS: the node presents its
// certificate when it dials and requires one when it accepts, both
// verified against the cluster's CA (a dialled peer against the name
// dialled), so a node whose certificate another
// CA signed can neither join nor be reached. The handshake of an accepted
// connection is part of its first read (bounded like the node-info sniff);
// node info travels inside TLS like raft does. Certificates are reloaded
// by the configs themselves (internal/tlsconf), so rotating files needs no
// restart.
//
// # Versions
//
// The group's format version (metadata, 1 until raised) says which entries
// may be proposed; version 2 adds checkpoints, version 3 the group's
// access-control rules (metadata op "acl", in a metadata entry whose
// version byte is 3: ProposeMetadata refuses it with ErrFormatVersion
// below version 3, and a binary of version 2 stops on the entry's version
// instead of meeting a kind it does not know), version 4 the POP
// consumption state (metadata op "pop", version byte 4, likewise), version
// 5 FIFO subscription groups (a "putGroup" op whose group sets
// consumeMessageOrderly, version byte 5: a binary of version 4 would apply
// it without the field). Each node answers, on its
// raft port, which versions its binary applies (a connection whose first
// byte is 0xB7, not one of raft's RPC types, gets one JSON line
// {"node","minVersion","maxVersion"}; the others go to raft). The leader
// asks every member (voters and non-voters: both apply) every two election
// timeouts and raises the version through raft (OpFormatVersion, never
// lowered) to the highest all support; one that does not answer holds it.
// A new kind is proposed only at a version that allows it, so a rolling
// upgrade never shows an old binary an entry it cannot apply; if it sees
// one anyway (the gate bypassed, a downgraded node) it stops (fail-stop).
// Config.MaxFormatVersion makes a node claim and apply an older maximum,
// for tests. The settings and formatVersion ops are version 1: a binary
// without them (before this release) skips ops it does not know, and has
// no settings to enforce.
//
// # Replica verifier
//
// Every VerifyInterval (default 5 s; negative disables) the writable
// leader of a version-2 group proposes a checkpoint: the CRC-32C of its
// CommitLog bytes in [from, to), where from is where the previous
// checkpoint ended and to its CommitLog end (records, markers, trailers
// and segment fillers: commitlog.Log.Checksum). The entries before the checkpoint in the log wrote those bytes
// on every replica, so every replica applying it computes the same range
// over its own bytes: equal counts as matched; different (or a CommitLog
// that ends before to) is logged with the index, the range and both sums,
// counted, kept as LastMismatch, shown by RAFT_STATUS, and stops the node
// (ErrDiverged, fail-stop). A range this node no longer holds (retention,
// or a snapshot install that brought only later segments) is skipped and
// counted.
//
// Decision: the sums of what each node wrote, not its files read back
// (Config.VerifyFiles reads them). A window's checksum comes from running
// CRCs the CommitLog keeps as it writes (commitlog's "Checksums of
// ranges"): every replica checks what it wrote, which is where a replica
// that applies an entry differently shows. Reading the window back from the
// files also saw a byte changed on disk within the seconds between its
// write and its checkpoint, but it read every byte written once more on
// every node: about a tenth of each node's processor time under load
// (7 % of the leader's, 14 % of a follower's in a 10 s profile at 62 000
// sends/s) and, on a follower, up to a hundred milliseconds of the FSM's
// goroutine every VerifyInterval. A byte that changes on disk later is
// caught by the store's per-record CRCs on read, as before. Nothing is
// persisted: after a restart the first window is read from the files, and
// only where the chain stands (the last checkpoint's end) is kept, in
// memory; a leader that knows none (it has applied no checkpoint since it
// started) proposes an empty range at its CommitLog end to start the
// chain, rather than read the whole log.
//
// # FSM (invariants I2, I3)
//
// The FSM applies entries in log order on raft's FSM goroutine. Messages go
// to store.PutEncoded as the encoded records the entry carries (checked,
// not decoded; the store copies them and patches in their offsets, giving
// the bytes store.Put would write for the decoded messages), with the
// entry's raft index as the batch's sequence number:
// physical and queue offsets come from apply order, nothing local enters
// the store, and the store skips an index at or below the last one it holds
// durably, so entries re-delivered after a crash (raft replays the log after
// the last snapshot: NoSnapshotRestoreOnStart) are applied exactly once.
// Metadata ops go to metadata.State, which skips indexes the same way; an
// entry of both kinds applies its messages first and its op only if the
// store took them, and a replay completes whichever part a crash left. A
// store that cannot write stops the node (it is not allowed to skip an
// entry); a leader whose store refuses writes hands leadership away.
//
// # Snapshots
//
// A local snapshot is cheap. FSM.Snapshot forces the CommitLog, queues and
// index to disk and captures a manifest (store sequence, CommitLog bounds,
// metadata); Persist writes the manifest JSON into a sink of the group's
// own snapshot store (snapstore*.go), which on Close pins the CommitLog
// segments holding the bytes below the manifest's CommitLogMax by
// hard-linking them into the snapshot directory. Retention may delete the
// originals; the links keep their data until the snapshot is reaped (the
// newest two are kept). raft then compacts its log.
//
// A follower that needs entries the leader's log no longer holds (it was
// down too long, or its disk was replaced) is sent the leader's newest
// snapshot (InstallSnapshot): the manifest and the pinned segments' bytes
// up to CommitLogMax, never what was appended to a linked segment later.
// The snapshot's Size is the exact stream length, so raft's transport
// deadline, max(Timeout, Timeout × Size / 256 KiB), scales with it. The
// follower's sink parses the stream into <id>.tmp/, checks every bound and
// the CRC, fsyncs and renames it to <id>/. FSM.Restore then gets the staged
// files from the reader (StagedDir; a stream from anywhere else is staged
// first), adopts and saves the manifest's metadata if newer, and, when the
// store lacks the snapshot's data, calls store.RestoreFrom: the staged
// segments replace the CommitLog and the store's one recovery path
// rebuilds the queues and the index; the Store value stays the same. raft
// then applies the entries after the snapshot's index.
//
// After an install raft v1.8.0 deletes the whole log (a monotonic store)
// but keeps its in-memory last index; when the log reached past the
// snapshot, raft would then reject every AppendEntries and receive the
// same snapshot for ever. Restore therefore leaves the log store a plan
// (logstore.go, installPlan), as the Raft paper's InstallSnapshot rule
// says: if the log holds the snapshot's last entry with the snapshot's
// term, only the entries up to it are deleted and the rest stay; otherwise
// the whole log goes and the node stops once (ErrRestartNeeded), so the
// restart reads the emptied log and the snapshot consistently.
//
// raft-wal keeps compacted entries readable until their whole log segment
// (Config.RaftSegmentSize) is deleted, and raft sends a snapshot only when
// it cannot read an entry, so a lagging follower catches up from the log
// while that segment lives.
//
// Snapshot directory, DataDir/raft/snapshots/:
//
//	<term>-<index>-<unixmillis>/   a finalised snapshot
//	  meta.json                    raft's SnapshotMeta (+ format, segment size,
//	                               received); removed first when reaped
//	  manifest.json                the manifest (state.bin in directories that
//	                               raft's FileSnapshotStore wrote: read as
//	                               manifest-only snapshots)
//	  00000000000000000000 …       CommitLog segments named by start offset,
//	                               SegmentSize bytes: hard links (local) or
//	                               staged files (received)
//	<id>.tmp/                      a snapshot being written; removed at start
//	restore-*.tmp/                 a foreign stream staged by Restore
//
// Snapshot stream (big-endian):
//
//	offset  size  field
//	------  ----  ------------------------------------------------------------
//	0       4     magic "LMQS" (0x4C4D5153)
//	4       2     version (1)
//	6       2     flags (0)
//	8       8     segment size S of the sender's CommitLog; must equal the
//	              receiver's (64 KiB .. 2 GiB-1)
//	16      4     manifest length M (1 .. 64 MiB)
//	20      4     segment frame count K (<= 2^20, and no more than segments
//	              up to the manifest's CommitLogMax)
//	24      M     manifest JSON
//	              K segment frames, oldest first:
//	0       1     kind 'S' (0x53)
//	1       8     start offset: a multiple of S, previous start + S
//	9       8     byte count n, 1 .. S; S for every frame but the last, whose
//	              bytes end at the manifest's CommitLogMax
//	17      n     the segment's first n bytes
//	              end frame:
//	0       1     kind 'E' (0x45)
//	1       4     CRC-32C (Castagnoli) of every stream byte before this field
//
// Size = 24 + M + sum(17 + n) + 5. The receiver writes each segment to a
// file of S bytes (the streamed bytes, then zeros), fails on the first byte
// that breaks a bound (ErrBadSnapshot) and accepts the snapshot only once
// the CRC matches. A sink whose first byte is '{' receives a bare manifest:
// a local snapshot from Persist.
//
// Snapshot invariants:
//
//   - A snapshot's segments hold the bytes below its CommitLogMax unchanged
//     while it exists: local ones link segments that are only appended past
//     that point (the CommitLog was flushed first), received ones are
//     fsynced before the rename.
//   - When raft starts, the store holds at least the newest snapshot: the
//     snapshot store finishes an install that a crash or an error cut short
//     (RestoreFrom leaves the old or the new CommitLog, never a mix, so it
//     can be done again) and drops a dataless snapshot ahead of the store
//     (its restore never succeeded, so raft's log was not compacted for it).
//
// # Leadership (I6)
//
// A new leader runs Barrier before it takes writes; only then is it
// announced (RoleEvent with role "leader" and its term), so the broker never
// registers as brokerId 0 before it can serve. Roles come from raft's
// leader observations, read again once after the observer is registered:
// raft starts before it, and a follower that heard from its leader in
// between gets no further observation while that leader lasts (Role would
// name no leader, and the broker could not forward). TransferLeadership hands
// over to a named or to the most caught-up node; PreferredLeader moves
// leadership back once that node has caught up. Close transfers leadership
// before it stops a leader. Group.Barrier lets a user of the group (the
// broker's schedulers) wait until every earlier entry is applied here
// before it reads replicated progress; it never blocks past a raft
// shutdown (awaitRaft).
//
// # Membership
//
// AddNode joins a node as a non-voter and promotes it once it has caught up;
// RemoveNode removes one. Status reports a node's raft and store positions;
// a node's lag is the leader's commit index minus its applied index. The
// applied index counts the entries raft never hands to the FSM (a new
// leader's no-op, barriers) once everything before them is applied, so an
// idle group's lag is 0.
//
// # Start-up decisions
//
//	raft state   store         JOIN marker  Open
//	-----------  ------------  -----------  ------------------------------------
//	none         empty         absent       bootstrap from Peers (first start)
//	none         empty         present      wait, empty, to be added (rebuilt)
//	none         has entries   any          refuse: the raft log was lost
//	present      any           any          start (a marker left is removed)
//	unreadable   any           any          refuse
//
// "Refuse" is a *StartError (ErrCannotStart) naming the node, the part (raft
// log or message store), the path, the cause and the way out; `ledgermq
// broker` exits with status 3 on it instead of a panic (raft.NewRaft panics
// on a log entry it cannot read; newRaft recovers that panic, which comes
// before raft starts any goroutine). A node never empties itself: the way
// out is PrepareRejoin (run by `ledgermq admin raft replace-node` after the
// node left the configuration), which moves the data directory aside and
// leaves an empty one with the JOIN marker, so the node neither bootstraps
// nor votes until the leader has added it back and it has caught up. A
// voter that forgot entries it acknowledged could help a minority lacking
// them look like a majority.
//
// The raft log is raft-wal v0.4.1 or later: v0.4.0 marked the tail segment
// sealed without an index block when raft cleared a log suffix (hashicorp/
// raft-wal#31), and the next open failed on every entry of that segment.
//
// # Goroutines
//
// A Group owns: the proposer's batcher and completer, the role watcher, the
// version loop, the verifier loop (if enabled), the preferred-leader loop
// (if configured), while it abstains the abstention loop and the vote
// gate's forwarder, and short-lived step-down and failure goroutines; Close
// and Kill stop and wait for all of them, and for raft's own. The raft
// port's stream layer (peerinfo.go) owns its accept goroutine and one
// goroutine per connection until its first byte is read; it stops when the
// transport closes it, and Close waits for it.
//
// The snapshot store owns none. raft calls it from:
//
//	goroutine           calls
//	------------------  -----------------------------------------------------
//	NewRaft's caller    List (startup, bootstrap check)
//	main loop           Create + Write + Close (InstallSnapshot from a leader)
//	snapshot loop       Create, FSM Persist (Write, Close) for local snapshots
//	replication (each   List, Open, Read, Close: streaming to a follower
//	  follower)
//	FSM                 Open, FSM.Restore, Close; FSM.Snapshot
//
// Its methods are safe for concurrent use; a sink or a reader is used by
// one goroutine at a time. store.RestoreFrom runs on the FSM goroutine and
// holds the store's lock in write mode while readers (the broker's pulls
// and lookups) wait.
//
// # Testing
//
// Package dledgertest holds the harness: MakeCluster starts a group of
// real raft nodes in the process over loopback TCP through
// internal/faultnet (partitions, kills), each in its own temporary
// directory, with Kill/Restart/Wipe and replica comparison. The broker's
// tests and the chaos harness reuse it. Only tests import it, so the
// binary links neither the harness nor faultnet (cmd/ledgermq's deps test
// checks that). The tests that drive a group are therefore external
// (package dledger_test, which dledgertest does not cycle with);
// export_test.go hands them the few internals they inspect (the raft log,
// the FSM hook, the entry encoder). Unit tests of codecs, the log store
// and the snapshot store stay internal.
package dledger
