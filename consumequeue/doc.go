// Package consumequeue is RocketMQ's ConsumeQueue: for every topic/queue, an
// array of fixed-size units indexing the CommitLog, so that a consumer
// reads "the next 32 messages of queue 3" by queue offset and filters by
// tag without touching the records it skips.
//
// # On-disk format
//
//	{Dir}/
//	  {topic}/                     one directory per topic (see ValidTopic)
//	    {queueId}/                 decimal, no padding: 0, 1, … 7
//	      00000000000000000000     units at queue offsets [0, U)
//	      00000000000006000000     units at queue offsets [U, 2U)
//	      …                        U = Config.UnitsPerFile (default 300 000)
//	  ..deleted-{hash}/            a topic being deleted (removed by Open)
//
// A file is named by the 20-digit zero-padded byte offset, within the
// queue, of its first unit: queue offset × 20, as RocketMQ names them.
// Files after the first start at multiples of U. The first file normally
// does too; a queue that starts at a non-zero queue offset S (Put on a
// queue that holds no unit) has a first file named S × 20 that ends at the
// next multiple of U. Files hold consecutive units with no header:
//
//	unit (20 bytes, big-endian)
//	+----------------------------+------------------+---------------------+
//	| 0..8  CommitLog offset i64 | 8..12 size i32   | 12..20 tags code i64|
//	+----------------------------+------------------+---------------------+
//
// A valid unit has size > 0 and offset ≥ 0. All zeroes marks a slot never
// written (the file system extended the file but the data never reached
// the disk).
//
// Unlike RocketMQ, files are not pre-allocated or memory-mapped: units are
// written with pwrite at their position and the file grows as units are
// appended; reads use pread. Ten thousand topics of eight queues take a
// few blocks each, not 480 GB, and the number of open descriptors is
// bounded by Config.MaxOpenFiles whatever the number of queues.
//
// A queue's newest units wait in memory, its tail (tail.go), until they
// make Config.WriteBuffer bytes (204 units), fill their file, or a Flush,
// Close or truncation comes, and are then written with one pwrite: a
// small write every few milliseconds to each busy queue would pay the
// file's modification-time update (a journalled inode change) every time.
// Readers get the tail from memory. The buffers come from a budget
// (Config.MaxBuffered); a queue that finds it spent writes each Put at
// once.
//
// # Invariants
//
//   - A queue holds the units at queue offsets [MinOffset, MaxOffset).
//     Files form one contiguous run; every file but the last is full.
//   - Units increase in CommitLog offset (the dispatcher writes them in
//     CommitLog order); TruncateByPhysical, DeleteBefore and OffsetByTime
//     binary-search on it.
//   - MinOffset is not persisted: after a restart it is the first unit of
//     the first file until the owner calls DeleteBefore again. MaxOffset is
//     recovered exactly from the last file's size, after cutting a partial
//     trailing unit and trailing never-written (size 0) units and
//     truncating the file; a last file left with no unit is removed and
//     the file before it checked the same way.
//   - Loading a queue whose files do not form a contiguous run fails with
//     ErrMissingFile; the owner deletes the topic and rebuilds its queues
//     from the CommitLog. Nothing read from disk can make this package
//     panic: invalid units are reported with ErrBadUnit, never returned.
//   - A unit is durable once Store.Flush returns after it was put.
//     Between flushes nothing is promised (a unit may still be in its
//     queue's tail, in memory); the CommitLog is the durable copy and the
//     queues are rebuilt from it.
//   - A queue's tail holds the units at [written, MaxOffset), all in the
//     file holding written; every unit below written is in its file.
//
// # Memory and descriptors
//
// Open lists only Dir itself, to remove trash left by an interrupted
// DeleteTopic. A queue is loaded (its directory listed, its last file's tail checked)
// on first use. A handle holds a few integers and no descriptor: files are
// named on demand from queue offsets. Open descriptors live in one LRU
// cache shared by all queues, bounded by MaxOpenFiles; a descriptor is
// reference-counted while a read or write uses it and only idle ones are
// closed. A file closed while dirty is not synced then (that would put an
// fdatasync on the dispatcher's path as soon as more queues are busy than
// there are descriptors) but remembered, and the next Flush syncs it —
// one syncfs for the whole file system when many are pending. New
// directories and files likewise get their parent directory synced by the
// next Flush; removals (Truncate, DeleteBefore, DeleteTopic, load repairs)
// sync the directory at once.
//
// # The file system (Config.FS)
//
// Every file and directory operation (open, create, read, write, truncate,
// fdatasync, syncfs, mkdir, rename, remove, listing) goes through
// Config.FS (internal/vfs; the operating system's by default), so tests
// fail any of them with vfs.Faulty (faults_test.go): a failed Put publishes
// nothing and the same Put succeeds once the file system works again; a
// failed Flush keeps its work for the next one; a topic whose directory
// cannot be moved aside is not deleted.
//
// # Who calls what
//
//   - The store's dispatcher, one goroutine: Put, in CommitLog order.
//   - Pull handlers, any number of goroutines: Get, GetUnit, MinOffset,
//     MaxOffset, OffsetByTime — concurrently with Put.
//   - The store's flush goroutine: Store.Flush, concurrently with all.
//   - Retention: DeleteBefore. Recovery, before the dispatcher starts:
//     Queues, LastUnit, TruncateByPhysical. Admin: Topics, DeleteTopic.
//
// Every method is safe for concurrent use. Locks are taken in this order:
// Store.mu (handle map; held by DeleteTopic while it removes a topic), then
// Queue.mu (one per queue: writers exclusive, readers shared; it guards
// the tail), then the list of buffered queues' mutex (tail.go; Flush takes
// it alone to take the list, then each queue's lock) or the file cache's
// mutex (never held across disk I/O other than open and
// close). A goroutine holds at most one cached descriptor at a time, except
// Flush, which holds only descriptors already open; so waiting for a free
// descriptor cannot deadlock. The package starts no goroutine.
package consumequeue
