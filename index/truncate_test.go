package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTruncateAfterMatchesModel puts keys that share few slots across
// several files, cuts the index at random offsets (twice, with puts in
// between and a reopen at the end), and checks every key's query against a
// model of what is left: exactly the entries at or below each cut.
func TestTruncateAfterMatchesModel(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed))
			cfg := testConfig(t, 7, 40) // 39 entries a file, 7 slots: long chains
			s := mustOpen(t, cfg)
			model := map[string][]int64{} // newest first
			keys := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"}
			off := int64(0)
			put := func(n int) {
				for range n {
					// One to three keys a record, as KEYS and UNIQ_KEY give.
					for range 1 + rng.IntN(3) {
						k := keys[rng.IntN(len(keys))]
						if len(model[k]) > 0 && model[k][0] == off {
							continue
						}
						mustPut(t, s, k, off, base+off)
						model[k] = append([]int64{off}, model[k]...)
					}
					off += 10
				}
			}
			cut := func(at int64) {
				if err := s.TruncateAfter(at); err != nil {
					t.Fatal(err)
				}
				for k, offs := range model {
					model[k] = slices.DeleteFunc(offs, func(o int64) bool { return o > at })
				}
				off = at + 10 - at%10
			}
			check := func(what string) {
				t.Helper()
				for _, k := range keys {
					wantOffsets(t, what+" "+k, mustQuery(t, s, k, 0, math.MaxInt64, 1000), model[k])
				}
			}
			put(60)
			cut(rng.Int64N(off))
			check("after the first cut")
			put(40)
			check("after puts")
			cut(rng.Int64N(off))
			check("after the second cut")
			mustClose(t, s)
			s = mustOpen(t, cfg)
			defer mustClose(t, s)
			check("after reopen")
		})
	}
}

// TestTruncateAfterSlotPastEntries: a slot that points past the file's
// entries (its page reached the disk before the entries did) cannot be
// followed back, so the cut rebuilds the slots from every kept entry and
// no kept entry of that key is hidden.
func TestTruncateAfterSlotPastEntries(t *testing.T) {
	cfg := testConfig(t, 7, 400)
	s := mustOpen(t, cfg)
	defer mustClose(t, s)
	for i := int64(0); i < 30; i++ {
		mustPut(t, s, "a", i*10, base+i*10)
		mustPut(t, s, "b", i*10, base+i*10)
	}
	s.mu.Lock()
	f := s.files[len(s.files)-1]
	n := f.limit(s.g)
	so := s.g.slotOff(s.g.slotOf(keyHash("a")))
	if err := f.pointSlot(so, uint32(n+3)); err != nil {
		s.mu.Unlock()
		t.Fatal(err)
	}
	s.mu.Unlock()
	if err := s.TruncateAfter(195); err != nil {
		t.Fatal(err)
	}
	var want []int64
	for i := int64(19); i >= 0; i-- {
		want = append(want, i*10)
	}
	wantOffsets(t, "a", mustQuery(t, s, "a", 0, math.MaxInt64, 1000), want)
	wantOffsets(t, "b", mustQuery(t, s, "b", 0, math.MaxInt64, 1000), want)
	if got := s.MaxPhyOffset(); got != 190 {
		t.Fatalf("max offset after the cut: %d, want 190", got)
	}
}
