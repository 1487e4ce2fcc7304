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
