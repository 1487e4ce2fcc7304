// Package store is the message store: the CommitLog, the ConsumeQueues and
// the IndexFile under one roof, the dispatcher that keeps the latter two in
// step with the former, and the one recovery path used after every kind of
// stop.
//
// # Layout
//
//	Dir/
//	  LOCK                      exclusive lock: one process per store
//	  checkpoint                how far everything is durable and in step
//	  commitlog/00000000000000000000 …   segments (package commitlog)
//	  consumequeue/{topic}/{queueId}/…   20-byte units (package consumequeue)
//	  index/{yyyyMMddHHmmssSSS}          hash index (package index)
//
// # Batches
//
// Put writes a batch of RocketMQ message records followed by a batch marker
// (32 bytes: magic "LMQB", record count, sequence number, first offset) as
// one CommitLog append, so the batch sits in one segment. The sequence
// number is the caller's (the raft index): LastSeq after recovery is the
// sequence number of the last complete batch, and Put skips a batch whose
// number is not above it, so re-delivered raft entries are applied once.
// Records are visible to readers (ConsumeQueue units written) only once the
// whole batch is in the CommitLog; recovery dispatches a batch only when
// its marker is found and cuts an incomplete batch off the tail.
//
// PutEncoded takes the batch as encoded records (a raft entry's) instead
// of messages. A record in the encoder's canonical form (properties sorted
// by name, no name twice) is copied as it is with its queue and physical
// offsets patched in; any other valid record is decoded and encoded like
// Put's. Either way the CommitLog gets the bytes Put would write for the
// decoded messages (FuzzPutEncoded holds it to that), so replicas agree
// whichever of the two a node used.
//
// Put assigns physical offsets and queue offsets from apply order and takes
// nothing from the local machine (store time and store host come with the
// message), so replicas applying the same batches hold byte-identical
// CommitLogs.
//
// # One log
//
// With Config.OneLog the CommitLog is the raft log (entries.go): each raft
// entry is its records followed by a version-2 marker holding the entry's
// term, type and non-record bytes; AppendEntries writes and fsyncs them
// (raft's StoreLogs), Entry reads one back, TruncateEntries removes an
// uncommitted suffix and CompactEntries forgets a prefix. Queue offsets
// are fixed at append from the append-time queue heads (which a truncation
// rolls back), so the bytes never change after they are written; readers
// see a record only once DispatchEntry has made its committed entry
// visible. Recovery lists the entries from Config.EntriesFrom, dispatches
// up to the checkpoint (or Config.CommittedSeq) and keeps the rest pending.
// Retention keeps every segment from the first entry raft may still read.
// A store keeps the layout it was created with (the "onelog" file), or the
// one it was converted to: ConvertToOneLog marks a closed two-log store
// one-log in place, its CommitLog becoming the prefix that a snapshot
// covers (dledger's switch of a group, dledger/convert.go).
//
// # Invariants
//
//   - A ConsumeQueue unit never points at a record that cannot be read:
//     units are written after the record, and recovery cuts units past the
//     recovered end of the CommitLog.
//   - Every record is verified (CRC32-C of the whole entry) when it is
//     read; a corrupt record is reported (CorruptRanges, the log) and
//     skipped, never returned.
//   - The checkpoint's CommitLog offset O means: the CommitLog up to O is
//     flushed, every record before O is dispatched, and those queue units
//     and index entries are flushed. Recovery replays from O.
//
// # Recovery
//
// Open reads the checkpoint, checks every queue it records against the
// files (a queue shorter than recorded, or with a missing file, gets its
// topic rebuilt), checks the index likewise, then scans the CommitLog from
// the checkpoint (from its start when anything is rebuilt or the checkpoint
// is missing or damaged), verifying every entry, dispatching complete
// batches and reporting corrupt ranges. After an unclean stop it cuts every
// queue back to the recovered end. The same code runs after a clean stop,
// a crash, a power loss or a deleted file; only how much it replays
// differs.
//
// # Restore
//
// RestoreFrom replaces the data with CommitLog segments staged elsewhere
// (a raft snapshot install): it links them into commitlog.restore/, closes
// the parts, removes the checkpoint, swaps commitlog.restore/ and
// commitlog/ (renameat2 RENAME_EXCHANGE where available), removes the old
// log, consumequeue/ and index/, reopens the parts and runs the recovery
// above, which with no checkpoint rebuilds every queue and the index. A
// crash at any step leaves the old or the new CommitLog and no checkpoint
// that vouches for the other's queues, so the next Open recovers a
// consistent store and the restore can be done again.
//
//	Dir/commitlog.restore/      the incoming segments; after the swap, the
//	                            outgoing ones until removed
//
// # Geometry and the group's settings
//
// The segment size, ConsumeQueue and IndexFile sizes (Geometry) and the
// maximum message size are the raft group's settings. SetMaxMessageSize
// changes the bound Put and PutEncoded check; Reconfigure gives a store
// that was never written another geometry (its files re-created empty) and
// refuses one that holds data (ErrNotEmpty). CheckEncoded is PutEncoded's
// check of one record without the write: the leader runs it before it
// proposes. CommitLogChecksum is the CRC-32C of a CommitLog range, from
// the sums kept as it was written or read from the files, for the replica
// verifier.
//
// # Concurrency
//
// Put and PutEncoded may be called from any goroutine; batches are applied
// one at a time under the store's write lock, in the order the lock is
// taken (the raft FSM calls them from one goroutine). Get, MinOffset, MaxOffset,
// OffsetByTime, MessageAt, MessageByID and QueryByKey may run concurrently
// with Put and each other. RestoreFrom replaces the CommitLog, queues and
// index under a read-write lock that those readers (and SegmentPaths,
// Min/MaxPhysicalOffset, ScanCommitLog, Topics, Flush, Clean, DeleteTopic)
// take in read mode, so they wait for it and then see the new data; it
// must not overlap Put (the FSM runs both on its goroutine), and it stops
// and restarts the background loops. Lock order: rw, then mu.
//
// The store owns two goroutines, the checkpoint loop and the retention
// loop, which Close stops. OnDispatch runs on the Put caller's goroutine
// after the write lock is released.
package store
