// Package dedup is the replicated duplicate window of a broker group: it
// remembers, for a while, which (topic, UNIQ_KEY) pairs were stored and
// where, so that a message sent again is answered with its first store
// instead of being stored twice.
//
// A producer whose send times out during a leader change does not know
// whether the old leader stored the message, and sends it again. Every
// RocketMQ client stamps a message with a producer-unique key (the
// UNIQ_KEY property, the client message id: 32 upper-case hex characters)
// and keeps it across retries. The apply step of the group's raft state
// machine asks the Window about each message it is about to store, and a
// message whose pair is inside the window is not stored again; the
// producer gets a SEND_OK carrying the first store's queue, queue offset
// and offset message id. The idea is NATS JetStream's duplicate window
// (Nats-Msg-Id, duplicate_window) and the purpose that of Kafka's
// idempotent producer; the window here is keyed by the client's own id and
// lives in the raft state, so it survives leader changes.
//
// # Use
//
// For each message of an applied entry, with the store time the leader
// stamped in the entry (never the local clock) and the topic's window:
//
//	if r, ok := w.Lookup(topic, key, storeTime, topicWindow); ok {
//		// answer with r: not stored again
//	} else {
//		// store the message, then
//		w.Add(topic, key, result, storeTime)
//	}
//
// Result holds what the answer needs: QueueID, QueueOffset, PhysicalOffset
// (the offset message id is the store host and this offset) and StoreTime;
// Size optionally locates the first store in the CommitLog. The
// transaction id of the answer is the key itself. A batch is recorded
// message by message, each under its own key.
//
// A caller that knows no other Add of the pair can come between its
// Lookup and its Add (the leader keeps a decided key pending until it is
// recorded) uses LookupMiss and AddMissed instead: the Miss carries the
// pair's hash and whether the window held it at all, and an absent pair
// is appended without a second search of the index. At the default size
// the index is larger than the processor's caches, and that search, which
// waits for memory, was the largest part of an Add (a leader's CPU
// profile under load: the Add's search took as long as the Lookup's).
//
// # Determinism
//
// Every replica applies the same entries in the same order, and must reach
// the same decisions and the same state. So:
//
//  1. Time is an argument. Add, Lookup and Expire take store times (Unix
//     ms) from the raft entry; nothing reads a clock.
//  2. Only Add, Expire and SetConfig change the state, and only in
//     apply order. Lookup changes nothing, so Lookups from any goroutine,
//     in any number, cannot make replicas diverge.
//  3. Eviction follows insertion order, which is apply order (below).
//  4. The configuration is part of the state: a snapshot carries it, and
//     a change is applied through SetConfig at an agreed log position.
//  5. The snapshot is canonical: replicas that applied the same entries
//     produce the same bytes, and a restored window encodes back to the
//     bytes it came from and behaves as the original from then on.
//
// Only Bytes depends on local history (a restored window is compacted);
// it is a gauge, never an input to a decision.
//
// # Windows and retention
//
// Config.Window is the retention: how long an entry is kept. Lookup's
// window is the one applied to a decision (a per-topic setting, say); it
// is capped at the retention, so it can shorten it, never lengthen it. The
// retention must therefore be at least the longest per-topic window in
// use; raising it (SetConfig) lengthens what is kept from then on. A
// Lookup window of 0 turns deduplication off for the call.
//
// A pair can be held but outside a shorter window: the caller then stores
// the message again and Adds it, which moves the pair to the back with its
// new result (counted as Replaced), so the window restarts from the new
// store, as JetStream's does.
//
// # Eviction
//
// Eviction happens inside Add (and Expire, for a group with nothing to
// add, and SetConfig): first the newest store time seen is raised to the
// argument, if later; then entries leave from the oldest while the newest
// time minus their store time exceeds the retention (counted as Expired);
// last, after the Add, the oldest leave while there are more than
// MaxEntries (counted as EvictedByCount). Eviction by age stops at the
// first entry young enough: it never skips ahead in the order.
//
// Store times can go backwards across leaders (a new leader's clock is
// behind). The newest time never decreases, so such a time only delays
// eviction: an entry stamped earlier but added later waits behind the
// entries before it and leaves right after them. Lookup judges each entry
// by its own store time against the message's, so the delay never widens
// a window; a store time after the message's (the old leader ahead) counts
// as inside it. At a rate above MaxEntries per retention, entries leave by
// count first and the effective window is shorter than the retention; the
// EvictedByCount counter shows it.
//
// # Bounds and exactness
//
// A pair is recorded only if the topic is 1 to MaxTopicLen (127, the
// longest RocketMQ topic) bytes and the key 1 to MaxKeyLen (128) bytes:
// Add ignores any other (counted as Ignored) and Lookup misses it, so such
// a message is always stored, never dropped. Entries are found by their
// full topic and key, never by a hash alone, so two different pairs never
// match. (A client that reuses a key for a different message within the
// window does lose the second one, as with any idempotence key; Size and
// PhysicalOffset let the caller read the first store back to compare.)
//
// # Memory
//
// Nothing is allocated per entry, and nothing the window holds has a
// pointer for the garbage collector to follow: three arrays hold it all. A
// ring of slots in insertion order, 48 bytes each (the Result, the id's
// place in the arena, its length and hash), doubles up to MaxEntries + 25%
// and no further. The ids (a length byte, the topic and the key, a 32-hex
// key packed into the 16 bytes it encodes: 26 bytes under a 9-byte topic)
// are copied in the same order into a byte arena used as a circle, which
// holds at least twice the live ids or 32 bytes a slot, and is compacted
// (copied anew) when the ring is rebuilt or when it is full. An
// open-addressing table of 8-byte entries (the hash and the slot's
// position, linear probing, at most half full) maps an id to its slot; a
// match on the hash is always confirmed by comparing the id's bytes. The
// ring shrinks, and the table and the arena with it, when at most an
// eighth of it is in use, and an arena above 64 bytes a slot shrinks when
// less than an eighth of it holds live ids, so a burst's memory goes when
// the burst expires. Measured at DefaultMaxEntries with 32-hex keys and a
// 9-byte topic: 121 bytes per entry (48 × 1.25 for the ring, 21 for the
// table, 40 for the arena), 24 MB in all; Bytes reports it exactly (it
// sums the three arrays). Lookup allocates nothing, and neither does Add
// but for the amortized growth and rebuilds. A node that builds a window
// from scratch (as it becomes leader) calls Reserve first with the number
// of Adds to come, so that the arrays are allocated once.
//
// # Concurrency
//
// A Window is safe for concurrent use. One RWMutex: Add, AddMissed,
// Expire, SetConfig and Reserve hold it exclusively, Lookup, LookupMiss,
// Len, Bytes, Stats, Config and AppendSnapshot share it. The apply step is the one writer; the answer
// paths may read from other goroutines. The package starts no goroutine.
//
// # Snapshot
//
// AppendSnapshot writes, and Restore reads, this little-endian format:
//
//	offset  size  field
//	------  ----  ---------------------------------------------------------
//	0       4     magic "LMDW"
//	4       2     version 1
//	6       2     flags, 0
//	8       8     retention, ms (Config.Window), 1 .. MaxInt64/1e6
//	16      4     MaxEntries, 1 .. MaxEntriesLimit
//	20      4     n, the number of entries that follow, ≤ MaxEntries
//	24      8     newest store time seen, Unix ms (MinInt64: none yet)
//	32      8     Expired counter
//	40      8     EvictedByCount counter
//	48      8     Replaced counter
//	56      8     Ignored counter
//	64      …     n entries, oldest first (insertion = eviction order)
//	end−4   4     CRC-32C (Castagnoli) of every byte before it
//
// Entry (34 + t + k bytes):
//
//	offset  size  field
//	------  ----  ---------------------------------------------------------
//	0       1     t, the topic's length, 1 .. MaxTopicLen
//	1       1     k, the key's length, 1 .. MaxKeyLen
//	2       4     QueueID (int32)
//	6       4     Size (int32)
//	10      8     QueueOffset (int64)
//	18      8     PhysicalOffset (int64)
//	26      8     StoreTime, Unix ms, ≤ the newest store time
//	34      t     topic
//	34+t    k     key, as the client sent it (never packed)
//
// Restore checks the length, magic, version and CRC first, then every
// field against the bounds above, the entry count against the bytes left
// (each entry takes at least 36) before allocating anything for it, that
// no pair appears twice and that the entries end exactly at the CRC. Any
// failure is an error wrapping ErrBadSnapshot; no input makes it panic
// (FuzzRestore), and what it accepts encodes back to the same bytes.
package dedup
