package dedup

// minRingCap is the smallest slot array a ring allocates.
const minRingCap = 16

// slot is one place of the ring: an entry, or a dead place left by an
// entry that was added again (id "").
type slot struct {
	id string // combined key (key.go); "" when dead
	r  Result
}

// ring holds the entries in insertion order in a circular array of slots,
// with a map from combined key to slot position. Entries leave from the
// front only. An entry added again leaves a dead slot behind, which is
// dropped when it reaches the front or when the array is rebuilt; dead
// slots are physical only: nothing a caller can observe, snapshots
// included, depends on them.
type ring struct {
	slots []slot
	head  int // position of the front slot
	used  int // slots in use from head, live and dead
	live  int // live slots (entries)
	limit int // the largest array makeRoom grows to (setLimit)
	// idBytes is the sum of the live ids' lengths.
	idBytes int
	index   map[string]uint32
	// indexPeak is the most entries index has held: a Go map keeps the
	// memory of its peak, so shrinking the array replaces the map too.
	indexPeak int
}

// newRing returns a ring sized for n entries.
func newRing(n int) ring {
	return ring{
		slots:     make([]slot, max(minRingCap, n)),
		index:     make(map[string]uint32, n),
		indexPeak: n,
	}
}

// at returns the slot i places after the front.
func (g *ring) at(i int) *slot {
	p := g.head + i
	if p >= len(g.slots) {
		p -= len(g.slots)
	}
	return &g.slots[p]
}

// find returns the live slot of id, or nil. string(id) in the map index
// does not allocate.
func (g *ring) find(id []byte) (*slot, bool) {
	p, ok := g.index[string(id)]
	if !ok {
		return nil, false
	}
	return &g.slots[p], true
}

// push appends an entry at the back; id must not be live already.
func (g *ring) push(id string, r Result) {
	if g.used == len(g.slots) {
		g.makeRoom()
	}
	p := g.head + g.used
	if p >= len(g.slots) {
		p -= len(g.slots)
	}
	g.slots[p] = slot{id: id, r: r}
	g.index[id] = uint32(p)
	g.used++
	g.live++
	g.idBytes += len(id)
	g.indexPeak = max(g.indexPeak, g.live)
}

// repush moves the live entry s to the back with result r, leaving a dead
// slot in its place; the id string is reused, so this does not allocate
// unless the array must be rebuilt.
func (g *ring) repush(s *slot, r Result) {
	id := s.id
	*s = slot{}
	g.live--
	g.idBytes -= len(id)
	g.push(id, r)
}

// front returns the front slot, or nil when the ring is empty.
func (g *ring) front() *slot {
	if g.used == 0 {
		return nil
	}
	return &g.slots[g.head]
}

// pop removes the front slot and reports whether it was live.
func (g *ring) pop() bool {
	s := &g.slots[g.head]
	live := s.id != ""
	if live {
		delete(g.index, s.id)
		g.live--
		g.idBytes -= len(s.id)
	}
	*s = slot{}
	g.head++
	if g.head == len(g.slots) {
		g.head = 0
	}
	g.used--
	if len(g.slots) > minRingCap && g.used <= len(g.slots)/8 {
		g.shrink(max(minRingCap, len(g.slots)/4))
	}
	return live
}

// makeRoom makes a full array take one more slot. It drops the dead slots
// when they are at least a quarter of it or when the array has reached its
// limit, and otherwise grows it, doubling up to the limit. At the limit
// (MaxEntries + 25%) a full array is at least a fifth dead, since live
// entries never exceed MaxEntries, so every rebuild frees a fixed share of
// it: the cost stays amortized O(1) per push. pop shrinks the array when
// at most an eighth is in use.
func (g *ring) makeRoom() {
	if dead := g.used - g.live; dead > 0 && (dead*4 >= g.used || len(g.slots) >= g.limit) {
		g.rebuild(len(g.slots))
		return
	}
	g.rebuild(max(g.used+1, min(2*len(g.slots), g.limit)))
}

// setLimit sets the array's size limit for at most maxEntries entries.
func (g *ring) setLimit(maxEntries int) {
	g.limit = maxEntries + maxEntries/4 + minRingCap
}

// fit shrinks an array above the limit, once the entries are within
// MaxEntries (after a lower one was set).
func (g *ring) fit() {
	if len(g.slots) > g.limit && g.live < g.limit {
		g.shrink(g.limit)
	}
}

// shrink rebuilds the array with n ≥ live slots and a new map: the old
// one would keep the memory of its peak.
func (g *ring) shrink(n int) {
	g.index = make(map[string]uint32, g.live)
	g.indexPeak = g.live
	g.rebuild(n)
}

// rebuild moves the live entries, in order, to the front of a new array of
// n ≥ live slots and repoints the map.
func (g *ring) rebuild(n int) {
	slots := make([]slot, n)
	k := 0
	for i := range g.used {
		s := g.at(i)
		if s.id == "" {
			continue
		}
		slots[k] = *s
		g.index[s.id] = uint32(k)
		k++
	}
	g.slots, g.head, g.used = slots, 0, k
}

// each calls fn with every live entry in insertion order.
func (g *ring) each(fn func(s *slot)) {
	for i := range g.used {
		if s := g.at(i); s.id != "" {
			fn(s)
		}
	}
}
