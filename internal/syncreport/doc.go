// Package syncreport is a test aid for the chaos harness's power-loss
// nemesis (jepsen/doc.go): with it on, every place the node makes file
// data durable records "file F is durable up to N bytes" in a sidecar
// file of the node's data directory, and after a kill -9 the harness cuts
// every recorded file back to what was durable before it restarts the
// node, which drops what the page cache held and the disk did not.
//
// It is off unless the broker is started with store.sync_report=true
// (only the harness sets it). The node opens one Report (Open) and hands
// it to the parts that sync files through their configuration
// (store.Config.SyncReport: the CommitLog, the ConsumeQueues, the raft
// log beside them); off, they hold a nil *Report, whose every method is a
// nil check. Nothing of it is global.
//
// # What a record means
//
// A record is written after the fsync (fdatasync, msync) that made it
// true returned, and before the syncing call returns to its caller, so
// nothing the node acknowledged depends on data the record does not
// vouch for. The record itself is not fsynced: the model is kill -9 plus
// the loss of the page cache, and the harness reads the record after the
// kill, while the page cache still holds it.
//
//	field  meaning
//	-----  --------------------------------------------------------------
//	len    bytes [0, len) are durable as they are now
//	size   the file's durable size (>= len); bytes [len, size) are durable
//	       as zeros: a preallocated or sparse file (CommitLog and raft log
//	       segments) whose size was made durable when it was created
//
// The model, per file:
//
//   - A recorded file is cut back at a power loss: bytes past size are
//     truncated and [len, size) zeroed (hole punched). That is exact for
//     append-only files: nothing past len was ever synced, and a
//     preallocated file's unsynced range was durable as zeros. CommitLog
//     segments, ConsumeQueue files and raft-wal segments are append-only
//     (a truncation zeroes or shortens, and is synced and recorded like an
//     append).
//   - A file created and never synced is recorded at creation with len 0
//     and a size: it comes back empty or zero-filled. A CommitLog segment
//     is created at its full size, fsynced and its directory fsynced, so
//     its size is durable; a ConsumeQueue file is recorded at size 0; a
//     raft-wal segment is preallocated and fsynced (with its directory)
//     only with its first entries, so it is recorded at its preallocated
//     size: the outcome in which its creation reached the disk (with the
//     next journal commit, such as the metadata database's fsync that
//     names it) and none of its data did. Its absence would be another
//     possible outcome; the model does not try it.
//   - A file never recorded is left as it is: the outcome in which all of
//     its writes reached the disk before the power went, which is one of
//     the outcomes a real power loss can have. Files written by
//     write-temp, fsync, rename and directory fsync (checkpoint, metadata,
//     snapshots' manifests, markers) are of that kind: their data is
//     synced before the rename, so keeping them is the outcome in which
//     the rename reached the disk. raft-wal's metadata database (the raft
//     stable store and its segment list) is bbolt, which writes only in
//     transactions that each end with fdatasync, so keeping it is the
//     outcome in which the last transaction's pages were written back;
//     cutting its growth while keeping its in-place pages could produce a
//     state no power loss can (a meta page that names truncated pages).
//     IndexFiles are updated in place through a mapping; reverting them
//     would need their old contents, so they are left as they are too
//     (they are rebuildable from the CommitLog and the checker does not
//     read them).
//
// After cutting, the harness fsyncs every file of the node's directory
// and rewrites the report so that each recorded file's entry is what it
// now holds (data to len, zeros to its size): what is on disk then is
// what the next process starts from. After a plain kill -9 the records
// stay as they were: data the next process finds in the page cache is not
// durable until it syncs it (the CommitLog's recovery does).
//
// A preallocated file that is fsynced (raft-wal's segments) is recorded
// at the end of what was written to it, not at its size: fsync makes the
// zeros past the data durable as zeros, and a later write into them is
// not durable until the next fsync.
//
// # File format
//
// DataDir/SYNC_REPORT, text, one record a line, the last line for a path
// wins; paths are relative to DataDir:
//
//	ledgermq-sync-report 1
//	<len> <size> <path>
//
// Lines are appended (one write each, so a kill leaves whole lines but
// perhaps a torn last one, which Read ignores); when the file has grown
// past compactAt it is rewritten with one line per path (write, rename:
// a kill leaves the old or the new file). A failed append (a full disk)
// makes the next successful write a full rewrite.
package syncreport
