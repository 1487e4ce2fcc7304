package index

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// copyDir copies the index files of an open service, as a crash would leave
// them: what the page cache holds, nothing of the service's memory.
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if _, ok := parseFileName(e.Name()); !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// The slots of the file taking puts reach the file at Flush, not before:
// a crash keeps what the last Flush wrote.
func TestShadowSlotsReachFileAtFlush(t *testing.T) {
	cfg := testConfig(t, 64, 1000)
	s := mustOpen(t, cfg)
	defer mustClose(t, s)
	for i := int64(0); i < 100; i++ {
		mustPut(t, s, fmt.Sprintf("T#k%d", i), i*100, base+i)
	}
	// Before Flush the file's slots are still empty: a copy finds nothing,
	// while the service answers from its shadow.
	crashed := mustOpen(t, Config{Dir: copyDir(t, cfg.Dir), SlotNum: 64, MaxEntries: 1000, Logger: cfg.Logger})
	if got := mustQuery(t, crashed, "T#k7", 0, math.MaxInt64, 10); len(got) != 0 {
		t.Fatalf("slots reached the file before Flush: %v", got)
	}
	mustClose(t, crashed)
	wantOffsets(t, "live", mustQuery(t, s, "T#k7", 0, math.MaxInt64, 10), []int64{700})

	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	crashed = mustOpen(t, Config{Dir: copyDir(t, cfg.Dir), SlotNum: 64, MaxEntries: 1000, Logger: cfg.Logger})
	defer mustClose(t, crashed)
	for i := int64(0); i < 100; i++ {
		key := fmt.Sprintf("T#k%d", i)
		wantOffsets(t, key, mustQuery(t, crashed, key, 0, math.MaxInt64, 10), []int64{i * 100})
	}
	// Puts after the Flush go to the shadow again, and a second Flush
	// writes only them.
	mustPut(t, s, "T#k7", 99_999, base+200)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	again := mustOpen(t, Config{Dir: copyDir(t, cfg.Dir), SlotNum: 64, MaxEntries: 1000, Logger: cfg.Logger})
	defer mustClose(t, again)
	wantOffsets(t, "after second flush", mustQuery(t, again, "T#k7", 0, math.MaxInt64, 10), []int64{99_999, 700})
}

// A file that stops taking puts keeps its shadow until a Flush has written
// it, answering queries from it meanwhile, mapped or cold; Close writes
// what no Flush did.
func TestShadowAcrossRollsAndClose(t *testing.T) {
	for _, maxFiles := range []int{64, 1} {
		t.Run(fmt.Sprintf("maxFiles=%d", maxFiles), func(t *testing.T) {
			cfg := testConfig(t, 8, 20)
			cfg.MaxFiles = maxFiles
			s := mustOpen(t, cfg)
			want := map[string][]int64{}
			put := func(from, to int64) {
				for i := from; i < to; i++ {
					key := fmt.Sprintf("T#key-%d", i%13)
					mustPut(t, s, key, i*10, base+i*100)
					want[key] = append([]int64{i * 10}, want[key]...)
				}
			}
			check := func(s *Service) {
				t.Helper()
				for key, w := range want {
					wantOffsets(t, key, mustQuery(t, s, key, 0, math.MaxInt64, 1000), w)
				}
			}
			put(0, 100) // 19 entries per file: 6 files
			check(s)
			shadows := func() (n int) {
				s.mu.RLock()
				defer s.mu.RUnlock()
				for _, f := range s.files {
					if f.slots != nil {
						n++
					}
				}
				return n
			}
			if n := shadows(); n < 2 {
				t.Fatalf("%d files with a shadow before Flush, want every file rolled since", n)
			}
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			if n := shadows(); n != 1 {
				t.Fatalf("%d files with a shadow after Flush, want the one taking puts", n)
			}
			check(s)
			put(100, 150)
			mustClose(t, s)

			s = mustOpen(t, cfg)
			defer mustClose(t, s)
			check(s)
		})
	}
}

// TruncateAfter on the file taking puts rebuilds its shadow; Flush writes
// the rebuilt table whole.
func TestShadowTruncateAfter(t *testing.T) {
	cfg := testConfig(t, 16, 1000)
	s := mustOpen(t, cfg)
	for i := int64(0); i < 60; i++ {
		mustPut(t, s, fmt.Sprintf("T#k%d", i%7), i*10, base+i)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.TruncateAfter(295); err != nil {
		t.Fatal(err)
	}
	wantOffsets(t, "k3 after truncate", mustQuery(t, s, "T#k3", 0, math.MaxInt64, 100), []int64{240, 170, 100, 30})
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	crashed := mustOpen(t, Config{Dir: copyDir(t, cfg.Dir), SlotNum: 16, MaxEntries: 1000, Logger: cfg.Logger})
	defer mustClose(t, crashed)
	wantOffsets(t, "k3 in the file", mustQuery(t, crashed, "T#k3", 0, math.MaxInt64, 100), []int64{240, 170, 100, 30})
	mustClose(t, s)
}
