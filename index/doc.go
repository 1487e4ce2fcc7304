// Package index is the store's persistent hash index from a key string to
// commitlog offsets, in the layout of RocketMQ's IndexFile. The store puts
// "topic#KEY" for every business key of a message and "topic#UNIQ_KEY" for
// its client message id; QUERY_MESSAGE and VIEW_MESSAGE_BY_ID read it back.
//
// # Files
//
// The index is a sequence of fixed-size files in Config.Dir. Each is named
// by the store time of the first key put in it, yyyyMMddHHmmssSSS in UTC
// (years clamped to 1970..9999). If that name is taken, or is not after the
// newest existing name (the clock stepped back), the newest stamp is reused
// with a suffix "_1", "_2", ...; so names sort, stamp first and suffix
// numerically, in creation order. A file is created sparse (ftruncate, never
// fallocate) under a ".tmp" name, fsynced, renamed into place and the
// directory fsynced; Open deletes stray ".tmp" files. Files are mapped
// MAP_SHARED read/write. Only the newest Config.MaxFiles are mapped; older
// ones are read with pread when a query needs them. Only the newest file
// takes puts; when its IndexCount reaches MaxEntries the next Put rolls to a
// new file.
//
// # On-disk format (all integers big-endian, two's complement)
//
//	offset                      size              field
//	--------------------------  ----------------  ------------------------------------------
//	header (HeaderSize = 40)
//	0                           8   int64         beginTimestamp  store time (ms) of entry 1
//	8                           8   int64         endTimestamp    largest store time (ms)
//	16                          8   int64         beginPhyOffset  commitlog offset of entry 1
//	24                          8   int64         endPhyOffset    largest commitlog offset
//	32                          4   int32         hashSlotCount   slots in use (informational)
//	36                          4   int32         indexCount      next entry index; 0 or 1 = empty
//	slots (SlotNum of them, SlotSize = 4)
//	40 + 4*s                    4   int32         newest entry index for slot s, 0 = empty
//	entries (MaxEntries of them, EntrySize = 20; entry 0 is never used)
//	40 + 4*SlotNum + 20*i + 0   4   int32         keyHash    |JavaStringHash(key)|
//	40 + 4*SlotNum + 20*i + 4   8   int64         phyOffset  commitlog offset of the message
//	40 + 4*SlotNum + 20*i + 12  4   int32         timeDiff   (storeTime-beginTimestamp)/1000 s
//	40 + 4*SlotNum + 20*i + 16  4   int32         prevIndex  older entry of the same slot, 0 = end
//
// File size = 40 + 4*SlotNum + 20*MaxEntries (420 000 040 bytes with the
// defaults of 5 000 000 slots and 20 000 000 entries).
//
// keyHash is Java's String.hashCode over the key's UTF-16 code units, made
// non-negative (MinInt32 becomes 0); a key lives in slot keyHash % SlotNum.
// timeDiff is clamped to [0, MaxInt32]: a store time earlier than the file's
// beginTimestamp (possible only if store times go backwards) is recorded as
// the file's beginTimestamp.
//
// # Put
//
// Put writes entry indexCount (keyHash, offset, timeDiff, prevIndex = the
// slot's current head), points the slot at it, then increments indexCount,
// sets the begin fields on the first entry, raises the end fields to
// max(end, new value) and rewrites the header. PutKeys does the same for a
// batch of keys under one hold of the lock, rewriting each file's header
// once, after its last entry of the batch. Entries and the header are
// written in the mapping; the slot table of the file taking puts is kept in
// anonymous memory, its shadow, which Flush writes into the file page by
// changed page with pwrite (shadow.go): slot writes land on random pages,
// and through the mapping every page would take a write fault again after
// each write-back.
// Files are sparse, so the first write to a page makes the file system
// allocate it; through a mapping, a page it cannot allocate (a full disk)
// would fault with SIGBUS and crash the process. Before it writes, Put
// therefore has every page of the mapping it touches allocated with
// madvise(MADV_POPULATE_WRITE) (once per page: a bitmap per file
// remembers), and a page that cannot be fails the Put with ErrNoSpace,
// nothing written. A shadow page the disk has no room for fails its pwrite,
// and so the Flush, which keeps it for the next one.
//
// # The file system
//
// Every file and directory operation goes through Config.FS
// (internal/vfs; the operating system's by default): creating, sizing,
// syncing, mapping, populating and renaming a file, writing the shadow's
// pages, msync, listing, removing and the directory's fsync. A test fails
// any of them with vfs.Faulty (faults_test.go: a full disk that refuses a
// page's storage, a file that cannot be created, sized, synced or renamed
// when a put rolls, a Flush whose pwrite or msync fails) and needs no file
// system of its own. The directory lock is the operating system's flock.
//
// # Invariants
//
//   - Entries 1..indexCount-1 are the only entries ever read. Within a file a
//     chain only moves to smaller indexes: a slot value or prevIndex that is
//     ≤ 0, ≥ indexCount, or (for a link) not smaller than the entry it leaves
//     ends the chain. So a query reads at most MaxEntries entries per file
//     whatever the bytes on disk, and bytes beyond indexCount left by a crash
//     are ignored; Put treats such a slot as empty.
//   - Every header is validated by DecodeHeader and every file's size checked
//     against Config before the file is used. A file that fails is logged,
//     reported by Corrupt and never read or written; the others keep serving.
//     Reset deletes it along with the rest so the owner can rebuild.
//   - begin ≤ end holds for timestamps and offsets of every non-empty file.
//   - File names, and so the file order, never go backwards.
//   - Nothing read from disk can make this package panic: the mapping is
//     exactly the validated file size and every index is bounded by the
//     header's counts and the geometry. (Another process truncating a mapped
//     file under the directory lock's feet is outside this contract.)
//
// # Queries
//
// Query walks files newest to oldest, skipping files whose
// [beginTimestamp, endTimestamp] does not meet [begin, end], and in each the
// key's slot chain newest to oldest. An entry matches when its keyHash equals
// the key's and its store-time window, [begin + 1000*timeDiff,
// that + 999] ∩ [beginTimestamp, endTimestamp], meets [begin, end]. Results
// are de-duplicated (a re-dispatch after a crash may index an offset twice)
// and capped at maxResults. Matching by hash and to the second makes the
// result a superset: the store confirms each candidate by reading the
// message.
//
// # Durability and recovery
//
// Writes reach the disk when Flush writes the shadow's changed pages and
// msyncs the mapping (entries and header may also reach it earlier, when the
// kernel writes pages back). A crash may keep any subset of the pages written since the
// last Flush, so the newest file can hold slots and links that disagree with
// its header; queries and puts stay safe (above) but a chain may lose entries
// written before the crash. The owner therefore keeps a checkpoint of the
// commitlog offset it had dispatched when Flush last returned, and after an
// unclean shutdown calls TruncateAfter(checkpoint) — which cuts a file that
// straddles the checkpoint back to its entries at or below it, rebuilding
// its hash slots from those entries alone, and removes the files after it —
// then re-dispatches the commitlog from the record at MaxPhyOffset()
// (indexing a record twice is harmless: queries de-duplicate); or rebuilds
// everything with Reset. The
// index holds committed data only because the owner only dispatches committed
// records.
//
// # Goroutines and locking
//
// Service has one sync.RWMutex over the file list, each file's header copy
// and its mapping.
//
//	caller (goroutine)                  method                      lock
//	----------------------------------  --------------------------  ------------------------------
//	store dispatcher                    Put, PutKeys                write, held for the whole put
//	request handlers (many)             Query, Files, Corrupt,      read
//	                                    MaxPhyOffset
//	store flush loop                    Flush                       write while writing changed
//	                                                                shadow pages (pwrite) and
//	                                                                choosing dirty files, none
//	                                                                during fdatasync and msync
//	store retention / recovery          DeleteBefore, TruncateAfter, write while cutting or detaching
//	                                    Reset                       files, none while unmapping/deleting
//	store shutdown                      Close                       write, then waits for the above
//
// All methods are safe to call from any goroutine. Put and Query run
// concurrently; a query sees each put entirely or not at all. Flush and the
// removals work on mappings detached from (or pinned in) the file list, so
// Put and Query go on during an msync; a mapping is unmapped only after every
// Flush that pinned it has finished. The package starts no goroutines.
package index
