// Package timerwheel is the time-ordered index of timer messages (RocketMQ
// 5's TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS): a log of
// fixed-size records, one per parked message in queue-offset order, whose
// records are linked per second of due time, and a table of one-second
// slots pointing at each second's latest record (RocketMQ's TimerLog and
// TimerWheel, rebuilt on different decisions). Millions of pending timers
// cost disk, not memory: the records are read through a shared mapping,
// and the slot table's size depends on the span of due times, never on
// the number of timers.
//
// The wheel is derived data. The broker parks timer messages in one queue
// of a system topic, which raft replicates like any other; every replica
// indexes that queue here as it applies it, so a record's identity (Q, its
// queue offset) and its due time are the same everywhere, while the files
// need not be. Nothing here is replicated and nothing here decides what
// was delivered: the owner's replicated progress does (see Key).
//
// # Files
//
//	Dir/
//	  LOCK                   flock of the open Wheel (internal/vfs)
//	  checkpoint             36 bytes, replaced atomically (below)
//	  00000000000000000000   records of queue offsets [0, N)
//	  00000000000000262144   records of [N, 2N)      N = Config.SegmentRecords
//	  …                      names: first queue offset, %020d
//
// A log file holds N records at fixed positions (record q at (q − base) ×
// 48), created sparse at its full size, written with pwrite (a full disk
// is an error, not a fault on a mapped page) and read through a read-only
// MAP_SHARED mapping.
//
// Record (48 bytes, big-endian):
//
//	offset  size  field
//	------  ----  ------------------------------------------------------------
//	0       4     magic 0x4C4D5457 ("LMTW"); zero: never written
//	4       2     version 1
//	6       2     flags: bit 0 Gone (cannot be delivered; in no slot)
//	8       8     q     the parked message's queue offset (= its position)
//	16      8     due   Unix ms, > 0 unless Gone
//	24      8     prev  q of the previous record of the same second, -1 none
//	32      8     phy   CommitLog offset of the parked message
//	40      4     size  its size
//	44      4     CRC-32C of bytes 0..44
//
// DecodeRecord checks magic, version, CRC, q, flags and that prev < q, so
// walking a chain always ends, whatever the disk holds (FuzzDecodeRecord).
//
// Checkpoint (36 bytes, big-endian): magic 0x4C4D5443 ("LMTC") 4, version
// 1 2, reserved 2, first 8 (records below were released), len 8 (records
// [first, len) are durable), lastPhy 8 (phy of record len−1, −1 none),
// CRC-32C of bytes 0..32 4.
//
// # Slots
//
// A slot is one second of due time; a page holds PageSeconds (one day) of
// slots, each 1 + the q of that second's latest record (0: empty). Pages
// live in memory, created when a record falls in them and dropped by
// Release once the progress has passed their last second. Within a second
// the chain runs newest to oldest; Scan collects a second's matching
// records into a bounded max-heap and sorts them, so its memory is bounded
// by its limit and its order is exact (Key: due ms, then q), not merely
// per second.
//
// # Delivery order and progress (the owner's)
//
// The owner keeps, replicated, an enqueue cursor Q (parked offsets below it
// have been considered) and a delivery cursor R (a Key): the timers
// delivered are exactly {q < Q and Key < R}. A round delivers, in one raft
// entry with the new cursors, the records of [Q, Q′) that are Gone or
// before R (they arrived late, after the cursor passed their time), then
// Scan(R, now, Q′, …) in Key order, and moves R past the last. Because a
// cursor names the same set on every replica, a new leader neither repeats
// nor skips a delivery.
//
// # Recovery: rebuild from the checkpoint
//
// Open trusts only what the checkpoint vouches for. It drops files wholly
// below first or past the one that takes the next append, ends the held
// range at the first missing file, then reads every record of [first, len)
// (one sequential pass, 48 bytes per pending timer): the range ends at the
// first record that does not decode, chains are relinked where a record's
// prev disagrees with the rebuilt slot, and the slot pages are filled.
// Records after the checkpoint (appended since, perhaps torn by a power
// loss) are not trusted: the owner appends them again from its queue,
// starting at Len. The owner compares LastPhy with the parked record at
// Len−1 in its store and calls Reset when they differ (an index left from
// other data). Decision: rebuild the slots from the log at every open
// rather than persist them, so one recovery path serves a clean stop, a
// kill and a power loss alike; its cost is the one pass above. Release
// writes the checkpoint with the new first before it deletes files, so a
// crash never leaves a checkpoint naming a deleted file as held.
//
// # Who calls what; locks
//
// One writer (the owner's indexer goroutine) calls Append, Sync, Release
// and Reset; readers (the scheduler, admin requests) call Scan, Get,
// Range, Len, First — all safe concurrently. One RWMutex: writers
// exclusive, readers shared; no method holds it across anything but this
// package's own file I/O. The package starts no goroutine.
package timerwheel
