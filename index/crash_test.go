package index

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// twoKeys returns two keys that fall into different slots of g.
func twoKeys(t *testing.T, g geometry) (string, string) {
	t.Helper()
	a := "T#a"
	for i := 0; i < 100; i++ {
		b := fmt.Sprintf("T#b%d", i)
		if g.slotOf(keyHash(b)) != g.slotOf(keyHash(a)) {
			return a, b
		}
	}
	t.Fatal("no keys in distinct slots")
	return "", ""
}

func TestCrashLeftoversBeyondIndexCount(t *testing.T) {
	cfg := testConfig(t, 8, 20)
	g := cfg.geometry()
	a, b := twoKeys(t, g)
	s := mustOpen(t, cfg)
	for i := int64(1); i <= 5; i++ {
		mustPut(t, s, a, i, base) // entries 1..5
	}
	for i := int64(6); i <= 10; i++ {
		mustPut(t, s, b, i, base) // entries 6..10
	}
	path := s.Files()[0].Path
	mustClose(t, s)

	// The header reached the disk before the last five puts did.
	patchFile(t, path, 36, be32(6))
	s = mustOpen(t, cfg)
	defer mustClose(t, s)
	wantOffsets(t, "a", mustQuery(t, s, a, 0, math.MaxInt64, 100), []int64{5, 4, 3, 2, 1})
	wantOffsets(t, "b (slot past indexCount)", mustQuery(t, s, b, 0, math.MaxInt64, 100), nil)

	// New puts overwrite the leftovers and start a fresh chain for b.
	mustPut(t, s, b, 99, base)
	mustPut(t, s, a, 100, base)
	wantOffsets(t, "b after put", mustQuery(t, s, b, 0, math.MaxInt64, 100), []int64{99})
	wantOffsets(t, "a after put", mustQuery(t, s, a, 0, math.MaxInt64, 100), []int64{100, 5, 4, 3, 2, 1})
	if h := s.Files()[0].Header; h.IndexCount != 8 || h.HashSlotCount > int32(g.slotNum) {
		t.Fatalf("header %+v", h)
	}
}

func TestCrashBrokenChains(t *testing.T) {
	cfg := testConfig(t, 8, 20)
	g := cfg.geometry()
	a, b := twoKeys(t, g)
	slotA := g.slotOff(g.slotOf(keyHash(a)))
	prev := func(idx int64) int64 { return g.entryOff(idx) + 16 }
	type patch struct {
		off int64
		v   int32
	}
	cases := []struct {
		name    string
		patches []patch
		want    []int64
	}{
		{"intact", nil, []int64{5, 4, 3, 2, 1}},
		{"slot past indexCount", []patch{{slotA, 6}}, nil},
		{"slot past the file", []patch{{slotA, math.MaxInt32}}, nil},
		{"negative slot", []patch{{slotA, -3}}, nil},
		{"self link", []patch{{prev(3), 3}}, []int64{5, 4, 3}},
		{"forward link past count", []patch{{prev(5), 7}}, []int64{5}},
		{"two-entry cycle", []patch{{prev(4), 5}}, []int64{5, 4}},
		{"negative link", []patch{{prev(2), -1}}, []int64{5, 4, 3, 2}},
		{"link to entry 0", []patch{{prev(4), 0}}, []int64{5, 4}},
		{"link skips back", []patch{{prev(5), 2}}, []int64{5, 2, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cfg
			cfg.Dir = t.TempDir()
			s := mustOpen(t, cfg)
			for i := int64(1); i <= 5; i++ {
				mustPut(t, s, a, i, base+i*1000)
			}
			path := s.Files()[0].Path
			mustClose(t, s)
			for _, p := range tc.patches {
				patchFile(t, path, p.off, be32(p.v))
			}
			s = mustOpen(t, cfg)
			defer mustClose(t, s)
			wantOffsets(t, tc.name, mustQuery(t, s, a, 0, math.MaxInt64, 100), tc.want)
			// Puts stay possible whatever the chain looks like.
			mustPut(t, s, a, 50, base+10_000)
			mustPut(t, s, b, 51, base+10_000)
			got := mustQuery(t, s, a, 0, math.MaxInt64, 100)
			if len(got) == 0 || got[0] != 50 {
				t.Fatalf("after put: %v", got)
			}
		})
	}
}

func TestCorruptFileIsSkipped(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"index count too large", func(t *testing.T, path string) { patchFile(t, path, 36, be32(1000)) }},
		{"negative slot count", func(t *testing.T, path string) { patchFile(t, path, 32, be32(-1)) }},
		{"inverted timestamps", func(t *testing.T, path string) { patchFile(t, path, 0, be32(math.MaxInt32)) }},
		{"truncated", func(t *testing.T, path string) {
			if err := os.Truncate(path, 100); err != nil {
				t.Fatal(err)
			}
		}},
		{"grown", func(t *testing.T, path string) { patchFile(t, path, 1<<20, []byte{1}) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, 4, 6) // five entries per file
			s := mustOpen(t, cfg)
			for i := int64(0); i < 15; i++ {
				mustPut(t, s, "k", i, base+i*1000)
			}
			files := s.Files()
			mustClose(t, s)
			if len(files) != 3 {
				t.Fatalf("%d files", len(files))
			}
			bad := files[1].Path
			tc.damage(t, bad)

			s = mustOpen(t, cfg)
			defer mustClose(t, s)
			if got := s.Corrupt(); !slices.Equal(got, []string{bad}) {
				t.Fatalf("Corrupt() = %v, want [%s]", got, bad)
			}
			if got := len(s.Files()); got != 2 {
				t.Fatalf("%d usable files", got)
			}
			wantOffsets(t, "others answer", mustQuery(t, s, "k", 0, math.MaxInt64, 100),
				[]int64{14, 13, 12, 11, 10, 4, 3, 2, 1, 0})
			mustPut(t, s, "k", 15, base+15_000)
			if err := s.Reset(); err != nil {
				t.Fatal(err)
			}
			ents, err := os.ReadDir(cfg.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(ents) != 1 || ents[0].Name() != "LOCK" {
				t.Fatalf("after Reset the dir holds %v", ents)
			}
			if len(s.Corrupt()) != 0 {
				t.Fatal("Corrupt() after Reset")
			}
		})
	}
}

func TestCorruptNewestFile(t *testing.T) {
	cfg := testConfig(t, 4, 6)
	s := mustOpen(t, cfg)
	for i := int64(0); i < 7; i++ {
		mustPut(t, s, "k", i, base+i*1000)
	}
	files := s.Files()
	mustClose(t, s)
	patchFile(t, files[1].Path, 36, be32(-5))
	s = mustOpen(t, cfg)
	defer mustClose(t, s)
	mustPut(t, s, "k", 7, base)
	got := s.Files()
	if len(got) != 2 || filepath.Base(got[1].Path) <= filepath.Base(files[1].Path) {
		t.Fatalf("new file must sort after the corrupt one: %v", got)
	}
	wantOffsets(t, "query", mustQuery(t, s, "k", 0, math.MaxInt64, 100), []int64{7, 4, 3, 2, 1, 0})
}

func TestZeroHeaderFileIsEmpty(t *testing.T) {
	// A crash right after creation leaves a file whose header never reached
	// the disk: it is empty, usable and takes the next puts.
	cfg := testConfig(t, 4, 10)
	s := mustOpen(t, cfg)
	mustPut(t, s, "k", 7, base)
	path := s.Files()[0].Path
	mustClose(t, s)
	patchFile(t, path, 0, make([]byte, HeaderSize))
	s = mustOpen(t, cfg)
	defer mustClose(t, s)
	if s.MaxPhyOffset() != -1 || len(s.Corrupt()) != 0 {
		t.Fatalf("MaxPhyOffset %d corrupt %v", s.MaxPhyOffset(), s.Corrupt())
	}
	wantOffsets(t, "empty", mustQuery(t, s, "k", 0, math.MaxInt64, 10), nil)
	mustPut(t, s, "k", 8, base+5000)
	wantOffsets(t, "reused", mustQuery(t, s, "k", 0, math.MaxInt64, 10), []int64{8})
	if h := s.Files()[0].Header; h.BeginTimestamp != base+5000 || h.IndexCount != 2 {
		t.Fatalf("header %+v", h)
	}
}

func TestConcurrentPutQueryFlush(t *testing.T) {
	cfg := testConfig(t, 16, 64)
	cfg.MaxFiles = 2 // exercise detaching mappings while flushing
	s := mustOpen(t, cfg)
	defer mustClose(t, s)

	const keys, puts = 10, 1000
	done := make(chan struct{})
	var wg sync.WaitGroup
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-done:
					return
				default:
				}
				k := (n + r) % keys
				got, err := s.Query(fmt.Sprintf("T#%d", k), 0, math.MaxInt64, 50)
				if err != nil {
					t.Error(err)
					return
				}
				for i, off := range got {
					if off%keys != int64(k) || (i > 0 && got[i-1] <= off) {
						t.Errorf("key %d: bad result %v", k, got)
						return
					}
				}
			}
		}(r)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := s.Flush(); err != nil {
				t.Error(err)
				return
			}
			_ = s.Files()
			_ = s.MaxPhyOffset()
		}
	}()
	for i := int64(0); i < puts; i++ {
		if err := s.Put(fmt.Sprintf("T#%d", i%keys), i, base+i); err != nil {
			t.Error(err)
			break
		}
	}
	close(done)
	wg.Wait()
	for k := 0; k < keys; k++ {
		got := mustQuery(t, s, fmt.Sprintf("T#%d", k), 0, math.MaxInt64, puts)
		if len(got) != puts/keys {
			t.Fatalf("key %d: %d offsets", k, len(got))
		}
	}
}
