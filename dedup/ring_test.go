package dedup

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// ringHarness drives a ring as Window does, with a hash function of the
// test's choice, and checks it against a plain model after every step.
type ringHarness struct {
	t     *testing.T
	g     ring
	hash  func(id []byte) uint32
	order []string          // the model: live ids, oldest first
	res   map[string]Result // and their results
	gone  map[string]bool   // ids that were held and are no longer
}

// newHarness returns a harness over an empty ring for at most limit
// entries, hashing ids with hash.
func newHarness(t *testing.T, limit int, hash func(g *ring, id []byte) uint32) *ringHarness {
	h := &ringHarness{t: t, g: newRing(0, 0), res: map[string]Result{}, gone: map[string]bool{}}
	h.g.setLimit(limit)
	h.hash = func(id []byte) uint32 { return hash(&h.g, id) }
	return h
}

// add adds id as Window.Add does, moving it to the back if held.
func (h *ringHarness) add(id []byte, r Result) {
	hv := h.hash(id)
	if p := h.g.find(id, hv); p >= 0 {
		if _, ok := h.res[string(id)]; !ok {
			h.t.Fatalf("found %q, not in the model", id)
		}
		h.g.repush(p, id, hv, r)
		h.order = slices.DeleteFunc(h.order, func(s string) bool { return s == string(id) })
	} else {
		if _, ok := h.res[string(id)]; ok {
			h.t.Fatalf("missed %q, in the model", id)
		}
		h.g.push(id, hv, r)
	}
	h.order = append(h.order, string(id))
	h.res[string(id)] = r
	delete(h.gone, string(id))
}

// pop removes the front slot, as eviction does.
func (h *ringHarness) pop() {
	s := h.g.front()
	if s == nil {
		if len(h.order) != 0 {
			h.t.Fatal("empty ring, model not")
		}
		return
	}
	var id string
	if s.n != 0 {
		id = string(h.g.id(s))
	}
	if live := h.g.pop(); live != (id != "") {
		h.t.Fatalf("pop returned %v", live)
	}
	if id != "" {
		if h.order[0] != id {
			h.t.Fatalf("popped %q, model's front %q", id, h.order[0])
		}
		h.order = h.order[1:]
		delete(h.res, id)
		h.gone[id] = true
	}
}

// check compares the ring with the model and checks the table and the
// arena.
func (h *ringHarness) check() {
	h.t.Helper()
	g := &h.g
	if g.live != len(h.order) {
		h.t.Fatalf("%d live, model %d", g.live, len(h.order))
	}
	i, idBytes := 0, 0
	g.each(func(s *slot) {
		if id := string(g.id(s)); id != h.order[i] || s.r != h.res[id] {
			h.t.Fatalf("entry %d: %q %+v, model %q %+v", i, id, s.r, h.order[i], h.res[h.order[i]])
		}
		idBytes += int(s.n)
		i++
	})
	if idBytes != g.idBytes {
		h.t.Fatalf("idBytes %d, ids take %d", g.idBytes, idBytes)
	}
	for id, r := range h.res {
		p := g.find([]byte(id), h.hash([]byte(id)))
		if p < 0 || string(g.id(&g.slots[p])) != id || g.slots[p].r != r {
			h.t.Fatalf("find %q: position %d", id, p)
		}
	}
	for id := range h.gone {
		if p := g.find([]byte(id), h.hash([]byte(id))); p >= 0 {
			h.t.Fatalf("found %q after it left", id)
		}
	}
	h.checkTable()
	h.checkArena()
}

// checkTable checks that the table indexes every live slot once, under
// its hash, reachable from its home without an empty place between.
func (h *ringHarness) checkTable() {
	g := &h.g
	table, mask := g.table, len(g.table)-1
	if len(table) < 2*len(g.slots) || len(table)&mask != 0 {
		h.t.Fatalf("table of %d for %d slots", len(table), len(g.slots))
	}
	n := 0
	for i, e := range table {
		if e == 0 {
			continue
		}
		n++
		p := int(uint32(e)) - 1
		if p < 0 || p >= len(g.slots) || g.slots[p].n == 0 || g.slots[p].hash != uint32(e>>32) {
			h.t.Fatalf("table[%d] = %#x: not a live slot's entry", i, e)
		}
		if d := (p - g.head + len(g.slots)) % len(g.slots); d >= g.used {
			h.t.Fatalf("table[%d] points outside the slots in use", i)
		}
		for j := int(e>>32) & mask; j != i; j = (j + 1) & mask {
			if table[j] == 0 {
				h.t.Fatalf("table[%d] unreachable: empty place %d after its home", i, j)
			}
		}
	}
	if n != g.live {
		h.t.Fatalf("%d table entries, %d live", n, g.live)
	}
}

// checkArena checks that the slots' ids follow each other in the arena,
// wrapping at most once, and end at tail.
func (h *ringHarness) checkArena() {
	g := &h.g
	if g.used == 0 {
		return
	}
	wraps, next := 0, g.front().off
	for i := range g.used {
		s := g.at(i)
		switch {
		case s.off == next:
		case s.off == 0 && next > 0 && wraps == 0:
			wraps++
		case s.off > next && i > 0 && g.at(i-1).n == 0:
			// after a dead slot, whose length is lost
		default:
			h.t.Fatalf("slot %d at %d, expected at %d (wraps %d)", i, s.off, next, wraps)
		}
		if s.off+int(s.n) > len(g.arena) {
			h.t.Fatalf("slot %d past the arena", i)
		}
		next = s.off + int(s.n)
	}
	if next != g.tail || g.at(g.used-1).n == 0 {
		h.t.Fatalf("last id ends at %d, tail %d", next, g.tail)
	}
	if wraps > 0 && g.tail > g.front().off {
		h.t.Fatalf("wrapped, tail %d after the front's %d", g.tail, g.front().off)
	}
	if u := g.arenaUsed(); u < g.idBytes || u > len(g.arena) {
		h.t.Fatalf("arena uses %d of %d, ids %d", u, len(g.arena), g.idBytes)
	}
	for i := g.used; i < len(g.slots); i++ {
		if *g.at(i) != (slot{}) {
			h.t.Fatalf("free slot %d not zero", i)
		}
	}
}

// Hash functions for the harness: the real one, and ones that collide.
var ringHashes = map[string]func(g *ring, id []byte) uint32{
	"maphash": (*ring).hash,
	// Every id under one hash: only the byte comparison tells them apart.
	"constant": func(*ring, []byte) uint32 { return 0x9E3779B9 },
	// Four homes at the table's end, so that runs wrap around it, with
	// distinct high bits, so tags mostly differ.
	"end": func(g *ring, id []byte) uint32 { return g.hash(id)&0xFFFF0003 | 0xFFFC },
	// Eight homes spread at the table's start, and only 16 tags.
	"fewTags": func(g *ring, id []byte) uint32 { return g.hash(id) & 0x000F0007 * 3 },
}

// ringIDs returns n distinct ids of varying lengths: packed 32-hex keys,
// raw keys up to MaxKeyLen, topics up to MaxTopicLen.
func ringIDs(rng *rand.Rand, n int) [][]byte {
	seen := map[string]bool{}
	var ids [][]byte
	for len(ids) < n {
		topic := strings.Repeat("t", 1+rng.IntN(MaxTopicLen))
		if rng.IntN(2) == 0 {
			topic = fmt.Sprintf("T%d", rng.IntN(4))
		}
		key := keyOf(rng.IntN(1 << 20))
		if rng.IntN(2) == 0 {
			key = strings.Repeat("k", 1+rng.IntN(MaxKeyLen-8)) + fmt.Sprintf("%08d", rng.IntN(1e8))[:min(8, 1+rng.IntN(8))]
		}
		var b idBuf
		id := bytes.Clone(makeID(&b, topic, key))
		if !seen[string(id)] {
			seen[string(id)] = true
			ids = append(ids, id)
		}
	}
	return ids
}

// The ring against a plain model, under colliding hashes: random adds
// (new or again), evictions by count and from the front, bursts and
// drains.
func TestRingModel(t *testing.T) {
	for name, hash := range ringHashes {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			ids := ringIDs(rng, 600)
			h := newHarness(t, 200, hash)
			for step := range 4000 {
				k := rng.IntN(100)
				switch {
				case k < 65: // an Add, bounded by count as Window does
					h.add(ids[rng.IntN(len(ids))], Result{QueueOffset: int64(step)})
					for h.g.live > 200 {
						h.pop()
					}
				case k < 90:
					h.pop()
				case k < 92: // a burst
					for range 150 {
						h.add(ids[rng.IntN(len(ids))], Result{QueueOffset: int64(step)})
					}
				case k < 94: // a drain
					for range h.g.used - rng.IntN(4) {
						h.pop()
					}
				case k < 95:
					h.g.reserve(rng.IntN(300), 200)
				default: // a few ids added again and again
					for i := range 40 {
						h.add(ids[i%3], Result{QueueID: int32(i)})
					}
				}
				if k >= 90 || step%8 == 0 { // the check is the costly part
					h.check()
				}
			}
			h.check()
		})
	}
}

// The cases the random model may not reach often: a re-add after
// eviction, a repush that fills the array, a shrink after a burst, and
// arena compaction with long ids.
func TestRingCases(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ids := ringIDs(rng, 3000)
	for name, hash := range ringHashes {
		t.Run(name+"/readd after eviction", func(t *testing.T) {
			h := newHarness(t, 1000, hash)
			for _, id := range ids[:50] {
				h.add(id, Result{QueueID: 1})
			}
			for range 20 {
				h.pop()
			}
			h.check()
			for _, id := range ids[:50] {
				h.add(id, Result{QueueID: 2})
			}
			h.check()
			if h.g.live != 50 {
				t.Fatalf("%d live", h.g.live)
			}
		})
		t.Run(name+"/repush across a rebuild", func(t *testing.T) {
			h := newHarness(t, 1000, hash)
			for h.g.used < len(h.g.slots) {
				h.add(ids[h.g.used], Result{})
			}
			slots := len(h.g.slots)
			// The front entry again: its slot dies, the push rebuilds.
			h.add(ids[0], Result{QueueID: 7})
			h.check()
			if len(h.g.slots) == slots || h.order[len(h.order)-1] != string(ids[0]) {
				t.Fatalf("%d slots, was %d", len(h.g.slots), slots)
			}
			// Many dead at the limit: rebuilt in place.
			h = newHarness(t, 40, hash)
			for _, id := range ids[:40] {
				h.add(id, Result{})
			}
			for i := range 500 {
				h.add(ids[i%40], Result{QueueOffset: int64(i)})
				h.check()
			}
			if len(h.g.slots) > 40+10+minRingCap {
				t.Fatalf("%d slots", len(h.g.slots))
			}
		})
		t.Run(name+"/shrink after a burst", func(t *testing.T) {
			if name == "constant" {
				t.Skip("quadratic")
			}
			h := newHarness(t, 1<<20, hash)
			for _, id := range ids {
				h.add(id, Result{})
			}
			h.check()
			peak := len(h.g.slots)
			for h.g.live > 5 {
				h.pop()
			}
			h.check()
			if len(h.g.slots) > peak/8 || len(h.g.table) > 2*tableSize(peak/8) || len(h.g.arena) > 32*peak/8 {
				t.Fatalf("after the burst: %d slots (peak %d), table %d, arena %d",
					len(h.g.slots), peak, len(h.g.table), len(h.g.arena))
			}
		})
		t.Run(name+"/arena compaction", func(t *testing.T) {
			// Long ids (a long topic and a raw key): 16 slots' arena of 512
			// bytes holds two; the arena fills long before the array.
			var long [][]byte
			for i := range 40 {
				var b idBuf
				topic := strings.Repeat("T", MaxTopicLen-i%3)
				key := fmt.Sprintf("%0*d", MaxKeyLen-i%5, i)
				long = append(long, bytes.Clone(makeID(&b, topic, key)))
			}
			h := newHarness(t, 1000, hash)
			compactions := 0 // rebuilds for a full arena, not a full array
			for i := range 400 {
				before, full := unsafe.SliceData(h.g.arena), h.g.used == len(h.g.slots)
				switch {
				case i%3 == 2:
					h.pop()
				case i%7 == 0:
					h.add(ids[i], Result{QueueOffset: int64(i)}) // a short one
				default:
					h.add(long[i%len(long)], Result{QueueOffset: int64(i)})
				}
				if i%3 != 2 && !full && unsafe.SliceData(h.g.arena) != before {
					compactions++
				}
				h.check()
			}
			if compactions == 0 {
				t.Fatal("the arena was never compacted")
			}
		})
	}
}
