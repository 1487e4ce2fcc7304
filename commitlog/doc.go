// Package commitlog is ledgermq's CommitLog: a segmented, append-only log of
// opaque entries on memory-mapped files, after RocketMQ's MappedFile /
// MappedFileQueue. The store puts RocketMQ message records and its own
// batch-marker records in it; the log itself knows nothing about messages.
// It verifies every entry with a CRC-32C trailer, flushes with group commit,
// recovers by CRC scan and deletes old segments.
//
// # Directory
//
// Config.Dir holds the segment files and the LOCK file of the directory lock
// (internal/vfs). Other files are ignored with a warning.
//
//	Dir/
//	  LOCK                    flock held by the open Log (Open fails with ErrLocked)
//	  00000000000000000000    segment starting at offset 0
//	  00000000001073741824    segment starting at offset 1 GiB
//	  ...                     names: start offset, %020d
//
// Offsets are global and contiguous: segment i+1 starts at segment i's start
// plus SegmentSize, so every start is a multiple of SegmentSize. Every
// segment file is exactly SegmentSize bytes, created sparse (it takes disk
// space as it is written; Config.Preallocate reserves every block up front
// with fallocate instead) and mapped MAP_SHARED.
// Reads go through the mapping; appends do not (see Writes). Only the last
// file may be shorter when Open finds
// it (a creation cut short by a crash); Open extends it. A gap, a misaligned
// start or a wrong size elsewhere is ErrBadSegment.
//
// # Entries
//
// An entry is a payload followed by the CRC-32C (Castagnoli) of the payload:
//
//	offset  size  field
//	------  ----  ------------------------------------------------------------
//	0       4     length  int32 big-endian, the payload length including these
//	              4 bytes (RocketMQ's TOTALSIZE); >= MinEntrySize (8)
//	4       4     magic   uint32 chosen by the caller (0xDAA320A7 for RocketMQ
//	              messages); never BlankMagic
//	8       n-8   rest of the payload, opaque to the log
//	n       4     trailer EntryCRC(payload[0:n]), uint32 big-endian
//
// An entry's offset is the offset of its first payload byte and its size is
// n: the trailer is not part of the size callers see but takes space, so the
// next entry starts at offset+n+4. Callers store and hand back (offset, n);
// the consume queue keeps exactly these.
//
// # End of a segment and end of data
//
// An entry never straddles two segments, and neither does a batch from
// AppendBatch. When a batch does not fit in the rest of the active segment,
// the rest gets an end-of-segment marker and the batch goes to the next
// segment:
//
//	offset  size  field
//	------  ----  ------------------------------------------------------------
//	0       4     remaining  int32 big-endian: bytes from here to the segment end
//	4       4     BlankMagic 0xCBD43194
//	8       ...   zeros up to the segment end
//
// If fewer than 8 bytes remain they stay zero and carry no marker. A batch
// larger than SegmentSize-8 bytes (payloads plus trailers) is ErrTooLarge,
// so a batch always fits in an empty segment. Files are created zero-filled,
// so a zero length means "nothing written here": the end of the data.
//
// # Invariants
//
//   - Bytes below MaxOffset (the write position) are complete entries and
//     markers; the write position is published with an atomic store after
//     the bytes and trailers are written, so a reader never sees a partial
//     entry. Bytes from the write position to the end of the active segment
//     are zero.
//   - Bytes below FlushedOffset are durable. FlushedOffset <= MaxOffset.
//   - Segments are created (ftruncate or fallocate, fsync, directory fsync) before the
//     marker that sends data to them is written, so a durable marker always
//     has its successor file.
//   - A mapping is unmapped only when nobody uses it: the Log's list holds a
//     reference on each segment, and so does every Ref, running Scan and
//     flush. Retention deletes only a segment it holds the only reference to.
//   - Recover never drops valid data that follows damage: it reports the
//     damaged range and goes on. Only a damaged or zero tail with nothing
//     valid after it (in its segment and in every later one) is cut.
//
// # Recovery
//
// Open maps the segments but does not scan them, so the write position is
// unknown until Recover(from, visit, corrupt) walks the entries from a
// boundary the caller trusts. Per position it distinguishes:
//
//	found                       action
//	--------------------------  ------------------------------------------------
//	valid entry                 visit(offset, payload); continue after its trailer
//	end-of-segment marker       continue at the next segment (a marker with valid
//	                            data after it in its segment is damage)
//	< 8 bytes left in segment   continue at the next segment
//	zero length or bad entry    search forward for the next valid entry:
//	  ... found in segment      corrupt([bad, next)); continue there
//	  ... in a later segment    corrupt([bad, segment end)); next segment
//	  ... nowhere               end of data: zero the segment's tail, delete
//	                            later segments, set the write position here
//
// The forward search cannot trust the bad entry's length (a damaged length
// would skip good entries), so it tries every position, skipping zeros
// quickly, and accepts the first one where a plausible header and a matching
// trailer start. Candidate CRCs are derived from checkpoints of a running CRC
// with CRC-combination algebra (resync.go), so the search stays linear in the
// bytes it passes even in random data (BenchmarkResyncRandom: roughly 10 ns
// per byte of garbage in a 16 MiB segment; more in larger segments, where
// more random lengths are plausible). A false match needs a 32-bit CRC
// collision at a position that also carries a plausible length. To prove
// that nothing follows the end of the data, Recover asks the file system
// where each segment from the scan's start on holds data (lseek SEEK_DATA
// and SEEK_HOLE, sparse.go) and searches only there: a hole, or a
// preallocated block never written, reads as zeros and is skipped without
// being read, so the unwritten part of a 1 GiB segment is never faulted
// into the mapping. Where the file system cannot tell, every byte is taken
// as data and read. Once done, Recover drops from the process
// (madvise MADV_DONTNEED) the pages of the sealed segments it scanned and of
// the active segment's tail past the end.
//
// Scan runs the same verification read-only up to the write position, where
// everything is supposed to be valid, so it reports every damaged range
// below MaxOffset. Read verifies the one entry it returns (length prefix,
// magic, trailer) and never serves a corrupt one.
//
// # Writes
//
// AppendBatch assembles a batch (payloads, trailers) in a staging buffer
// owned by the append lock and writes it to the segment file with one
// pwrite, then publishes the write position. It does not store through the
// mapping: every first store to a page of a shared file mapping takes a
// page fault (on ext4 with a journal handle for the block), and every
// writeback then has to write-protect the mapped pages again (an rmap walk
// and a TLB shootdown), so writing through the mapping cost more than the
// copy it saves (BenchmarkAppendBatch44x1KiB). The mapping and the file
// share the page cache, so readers see the bytes through the mapping once
// the write position, published after the pwrite returned, covers them. A
// failed pwrite (an I/O error, or a full disk for a sparse segment) is ErrWrite:
// the range is zeroed again (FALLOC_FL_ZERO_RANGE, best effort) and
// nothing is published. Recovery and Truncate still zero a cut tail
// through the mapping.
//
// # Checksums of ranges (the replica verifier's)
//
// Each write also extends a running CRC-32C over the bytes written since
// Recover (sums.go), taken from the staging buffer while it is still in the
// processor's cache: batches, and at a roll the old segment's rest (its
// end-of-segment marker and zeros). Checksum answers the CRC of a range
// from the running CRCs at its two ends (CRC algebra), reading from the
// files only the bytes between an end and the write before it; a range
// before the sums (written before this process recovered the log, or
// forgotten: they keep the last 65 536 writes) is read from the files.
// Truncate cuts the sums back and they go on. ChecksumFiles always reads
// the files, and so also sees a byte changed on disk after it was written.
//
// # Flushing
//
// One flusher goroutine per Log, started by Open and stopped (after a final
// flush) by Close, which waits for it. A flush takes the range
// [FlushedOffset, MaxOffset), calls msync(MS_SYNC) on the page-aligned part
// of each segment it covers (on Linux that writes back and waits for the
// range's dirty pages of the file, like fdatasync limited to the range), then advances FlushedOffset and wakes every waiter. In FlushAsync
// mode the flusher runs every FlushInterval; in FlushSync mode AppendBatch,
// after releasing the append lock, kicks it and waits for its end offset, so
// appends that arrive while an msync runs are all covered by the next one
// (group commit). A failed msync is sticky (ErrFlush): durability can no
// longer be promised. Recover msyncs the range it scanned before it sets
// FlushedOffset to the recovered end: after a crash of the process (not
// of the machine) that data may be in the page cache only, and everything
// below FlushedOffset must be on disk (a snapshot relies on it). The flush
// that makes a sealed segment durable to its end also drops its pages from
// the process (MADV_DONTNEED: the mapping is shared, so the bytes stay in
// the page cache and a later reader faults them in again), so the resident
// size follows what is read, not everything ever written. Every
// msync is recorded in the durable-length report when it is on
// (internal/syncreport, the chaos harness's power-loss model).
//
// # The file system (Config.FS)
//
// Segment files are created, extended, reserved, written, mapped, synced
// and removed through Config.FS (internal/vfs; the operating system's by
// default), never through package os directly, so tests make any of those
// operations fail (vfs.Faulty: a full disk, a failing sync, a file that
// cannot be created) without a global switch or a file system of their
// own (faults_test.go). Reads go through the mapping. The directory lock
// is the operating system's (internal/vfs.Lock).
//
// # Goroutines and concurrency
//
//	method                       may run concurrently with
//	---------------------------  ----------------------------------------------
//	Open                         -
//	Recover                      accessors only; once, before any append
//	AppendBatch, Append          everything but Recover/Truncate/Close (they
//	                             are serialized among themselves)
//	Read, ReadAt, Scan,
//	Checksum, ChecksumFiles      everything but Truncate of the range read
//	Flush, WaitFlushed           everything
//	DeleteExpired                everything (before Recover: ErrNotRecovered)
//	Truncate                     readers of data it keeps; not appends
//	MinOffset, MaxOffset,
//	FlushedOffset, SegmentStart,
//	Segments, SealedSegments     everything
//	Close                        must not be called with Refs held (see Close)
//
// Locks, in the order they may be taken: appendMu (appends, Truncate, the
// end of Recover, Close), flushMu (one flush at a time; Truncate and
// Recover hold it so the flushed position never passes the write
// position), segMu (the segment list; readers take it shared), sigMu (the
// flush broadcast channel and the sticky flush error); sumMu (the running
// checksums) is taken after appendMu and before segMu. Positions are atomics
// and segment reference counts are atomic counters taken under segMu.
//
// # Retention
//
// DeleteExpired removes whole sealed segments, oldest first and
// contiguously: those whose file mtime is FileReservedTime older than
// Config.Clock(), or any while the disk is fuller than
// DiskMaxUsedSpaceRatio (statfs), or any when forced. It never removes the
// active segment, and it stops at a segment with outstanding references; a
// later call removes it once released. The directory is fsynced after each
// removal, so a crash never leaves a gap.
//
// # Limits
//
// Segments are at most 2 GiB - 1 (the marker's length is an int32). A
// sparse segment (the default, and always on a file system without
// fallocate) can run out of disk space on an append: the append fails with
// ErrWrite (a pwrite error, never a fault of the mapping, which appends do
// not write through). Modifying segment files behind an open Log is not
// supported.
package commitlog
