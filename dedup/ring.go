package dedup

import (
	"hash/maphash"
	"math/bits"
)

const (
	// minRingCap is the smallest slot array a ring allocates.
	minRingCap = 16
	// avgIDLen is the id length an arena is sized for per slot: a 32-hex
	// key packed (16 bytes) under a topic of up to 15 bytes, plus the
	// length byte. Longer ids are sized for by their actual bytes.
	avgIDLen = 32
)

// slot is one place of the ring: an entry, or a dead place left by an
// entry that was added again (n == 0). It holds no pointer: the id's bytes
// are in the ring's arena, so the garbage collector never scans a slot.
type slot struct {
	// off is the position of the id's bytes in the arena. A dead slot
	// keeps the position its bytes had until it leaves the front: the
	// arena in use starts at the front slot's off.
	off int
	// hash is the id's hash (ring.hash), its key in the table.
	hash uint32
	// n is the id's length (at least 3), or 0 when the slot is dead.
	n uint16
	r Result
}

// ring holds the entries in insertion order in a circular array of slots,
// their ids in a circular byte arena in the same order, and an
// open-addressing hash table from id to slot position. Entries leave from
// the front only. An entry added again leaves a dead slot behind, which is
// dropped when it reaches the front or when the array is rebuilt; dead
// slots are physical only: nothing a caller can observe, snapshots
// included, depends on them, nor on the hash seed or the table's layout.
//
// The arena: each push writes its id at tail, or at 0 when it does not
// fit before the end (the bytes skipped are reclaimed when the front
// passes them). The bytes in use run from the front slot's off to tail,
// circularly; the back slot is always live (a dead slot only ever has a
// live one behind it), so a non-empty ring uses at least one byte and
// tail == front's off means full, not empty. A rebuild copies the live
// ids, in order, from 0 into a new arena.
//
// The table: len(table) is a power of two at least twice len(slots), so
// its load is at most a half; an entry is hash<<32 | (position + 1), 0 is
// empty; linear probing from hash & mask; deletion shifts the following
// entries back (no tombstones). A match on the hash is always confirmed
// by comparing the id's bytes.
type ring struct {
	slots []slot
	head  int // position of the front slot
	used  int // slots in use from head, live and dead
	live  int // live slots (entries)
	limit int // the largest array makeRoom grows to (setLimit)
	// idBytes is the sum of the live ids' lengths.
	idBytes int
	arena   []byte
	tail    int // where the next id goes in the arena
	table   []uint64
	seed    maphash.Seed // never changes: hash needs no lock
}

// newRing returns a ring sized for n entries whose ids take idBytes.
func newRing(n, idBytes int) ring {
	g := ring{seed: maphash.MakeSeed()}
	g.rebuild(max(minRingCap, n), idBytes)
	return g
}

// hash returns the hash of id under the ring's seed, folded to 32 bits.
func (g *ring) hash(id []byte) uint32 {
	h := maphash.Bytes(g.seed, id)
	return uint32(h ^ h>>32)
}

// at returns the slot i places after the front.
func (g *ring) at(i int) *slot {
	p := g.head + i
	if p >= len(g.slots) {
		p -= len(g.slots)
	}
	return &g.slots[p]
}

// id returns the bytes of a live slot's id, in the arena: valid until the
// next push or pop.
func (g *ring) id(s *slot) []byte {
	return g.arena[s.off : s.off+int(s.n)]
}

// find returns the position of the live slot of id, whose hash is h, or
// -1.
func (g *ring) find(id []byte, h uint32) int {
	mask := len(g.table) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		e := g.table[i]
		if e == 0 {
			return -1
		}
		if uint32(e>>32) != h {
			continue
		}
		p := int(uint32(e)) - 1
		if s := &g.slots[p]; int(s.n) == len(id) && string(g.id(s)) == string(id) {
			return p
		}
	}
}

// push appends an entry at the back; id (hash h) must not be live
// already, nor be in the arena (the caller's copy: a rebuild replaces the
// arena).
func (g *ring) push(id []byte, h uint32, r Result) {
	if g.used == len(g.slots) {
		g.makeRoom(len(id))
	}
	off := g.place(len(id))
	if off < 0 {
		// The arena is full: a rebuild compacts it, and sizes it for
		// twice the live ids and this one.
		g.rebuild(len(g.slots), 2*(g.idBytes+len(id)))
		off = g.place(len(id))
	}
	g.tail = off + copy(g.arena[off:], id)
	p := g.head + g.used
	if p >= len(g.slots) {
		p -= len(g.slots)
	}
	g.slots[p] = slot{off: off, hash: h, n: uint16(len(id)), r: r}
	insert(g.table, h, p)
	g.used++
	g.live++
	g.idBytes += len(id)
}

// place returns where in the arena an id of n bytes goes, or -1 if it
// does not fit.
func (g *ring) place(n int) int {
	if g.used == 0 {
		if n <= len(g.arena) {
			return 0
		}
		return -1
	}
	start := g.slots[g.head].off
	if g.tail > start { // in use: [start, tail); free: after tail, before start
		if g.tail+n <= len(g.arena) {
			return g.tail
		}
		if n <= start {
			return 0
		}
	} else if g.tail+n <= start { // wrapped; free: [tail, start)
		return g.tail
	}
	return -1
}

// repush moves the live entry at position p to the back with result r,
// leaving a dead slot in its place; id is its id (the caller's copy) and
// h its hash.
func (g *ring) repush(p int, id []byte, h uint32, r Result) {
	s := &g.slots[p]
	g.unindex(s.hash, p)
	g.live--
	g.idBytes -= int(s.n)
	s.n, s.r = 0, Result{} // dead; off stays: the arena in use starts there
	g.push(id, h, r)
}

// front returns the front slot, or nil when the ring is empty.
func (g *ring) front() *slot {
	if g.used == 0 {
		return nil
	}
	return &g.slots[g.head]
}

// pop removes the front slot and reports whether it was live. It shrinks
// the slot array when at most an eighth of it is in use, and an arena
// above twice its floor (avgIDLen bytes a slot) when less than an eighth
// of it holds live ids (a rebuild sizes it at least twice the live ids,
// so this does not follow one at once).
func (g *ring) pop() bool {
	s := &g.slots[g.head]
	live := s.n != 0
	if live {
		g.unindex(s.hash, g.head)
		g.live--
		g.idBytes -= int(s.n)
	}
	*s = slot{}
	g.head++
	if g.head == len(g.slots) {
		g.head = 0
	}
	g.used--
	switch {
	case len(g.slots) > minRingCap && g.used <= len(g.slots)/8:
		g.rebuild(max(minRingCap, len(g.slots)/4), 0)
	case len(g.arena) > 2*avgIDLen*len(g.slots) && g.idBytes < len(g.arena)/8:
		g.rebuild(len(g.slots), 0)
	}
	return live
}

// makeRoom makes a full array take one more slot, whose id has extra
// bytes. It drops the dead slots when they are at least a quarter of it
// or when the array has reached its limit, and otherwise grows it,
// doubling up to the limit. At the limit (MaxEntries + 25%) a full array
// is at least a fifth dead, since live entries never exceed MaxEntries,
// so every rebuild frees a fixed share of it: the cost stays amortized
// O(1) per push. pop shrinks the array when at most an eighth is in use.
func (g *ring) makeRoom(extra int) {
	arena := 2 * (g.idBytes + extra)
	if dead := g.used - g.live; dead > 0 && (dead*4 >= g.used || len(g.slots) >= g.limit) {
		g.rebuild(len(g.slots), arena)
		return
	}
	g.rebuild(max(g.used+1, min(2*len(g.slots), g.limit)), arena)
}

// setLimit sets the array's size limit for at most maxEntries entries.
func (g *ring) setLimit(maxEntries int) {
	g.limit = maxEntries + maxEntries/4 + minRingCap
}

// fit shrinks an array above the limit, once the entries are within
// MaxEntries (after a lower one was set).
func (g *ring) fit() {
	if len(g.slots) > g.limit && g.live < g.limit {
		g.rebuild(g.limit, 0)
	}
}

// reserve makes room for n more pairs, in a window of at most
// maxEntries, without a rebuild: slots for as many entries as the window
// will hold and one more (a push comes before the eviction by count), and
// arena for ids of avgIDLen bytes on average.
func (g *ring) reserve(n, maxEntries int) {
	if n <= 0 {
		return
	}
	more := min(n, max(maxEntries-g.live, 0)) // entries the window gains
	want := min(g.live+more+1, g.limit)
	if want > len(g.slots) || len(g.arena)-g.arenaUsed() < avgIDLen*more+maxIDLen {
		g.rebuild(max(want, len(g.slots)), g.idBytes+avgIDLen*more+maxIDLen)
	}
}

// arenaUsed returns the bytes of the arena in use: from the front slot's
// id to tail, circularly, the ids of dead slots and a skipped end
// included.
func (g *ring) arenaUsed() int {
	if g.used == 0 {
		return 0
	}
	start := g.slots[g.head].off
	if g.tail > start {
		return g.tail - start
	}
	return len(g.arena) - start + g.tail // wrapped
}

// rebuild moves the live entries, in order, to the front of a new array
// of n ≥ live slots, their ids to the front of a new arena, and indexes
// them in a new table. The arena takes at least arena bytes (push asks
// for twice the live ids and the next one), twice the live ids, and
// avgIDLen bytes a slot: a rebuild for a full arena then comes after at
// least as many bytes were pushed as it copies, which keeps it amortized
// O(1) per byte. A new arena, never one compacted in place, so that
// slices of the old one stay valid.
func (g *ring) rebuild(n, arena int) {
	slots := make([]slot, n)
	ids := make([]byte, max(arena, 2*g.idBytes, avgIDLen*n))
	table := make([]uint64, tableSize(n))
	k, off := 0, 0
	for i := range g.used {
		s := g.at(i)
		if s.n == 0 {
			continue
		}
		copy(ids[off:], g.id(s))
		slots[k] = *s
		slots[k].off = off
		insert(table, s.hash, k)
		off += int(s.n)
		k++
	}
	g.slots, g.head, g.used = slots, 0, k
	g.arena, g.tail, g.table = ids, off, table
}

// each calls fn with every live entry in insertion order.
func (g *ring) each(fn func(s *slot)) {
	for i := range g.used {
		if s := g.at(i); s.n != 0 {
			fn(s)
		}
	}
}

// tableSize returns the table length for a slot array of n: the power of
// two at least 2n.
func tableSize(n int) int {
	return 1 << bits.Len(uint(2*n-1))
}

// insert adds the entry of position p, hash h, to table, which has a free
// place (its load is at most a half).
func insert(table []uint64, h uint32, p int) {
	mask := len(table) - 1
	i := int(h) & mask
	for table[i] != 0 {
		i = (i + 1) & mask
	}
	table[i] = uint64(h)<<32 | uint64(p+1)
}

// unindex deletes the table entry of position p, hash h, which must be
// present, shifting back the entries after it that probed past it, so that
// every entry stays reachable from its hash without crossing an empty
// place.
func (g *ring) unindex(h uint32, p int) {
	table, mask := g.table, len(g.table)-1
	e := uint64(h)<<32 | uint64(p+1)
	i := int(h) & mask
	for table[i] != e {
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; table[j] != 0; j = (j + 1) & mask {
		// The entry at j moves into the hole at i unless its home is
		// cyclically within (i, j]: unless it is nearer its home than i.
		if home := int(table[j]>>32) & mask; (j-home)&mask >= (j-i)&mask {
			table[i] = table[j]
			i = j
		}
	}
	table[i] = 0
}
