package index

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

const base = int64(1_700_000_000_000) // a store time in ms

func TestPutQueryCollisions(t *testing.T) {
	// Four slots for twenty keys: every chain interleaves several keys.
	s := mustOpen(t, testConfig(t, 4, 1000))
	defer mustClose(t, s)

	want := map[string][]int64{}
	off := int64(0)
	for round := 0; round < 5; round++ {
		for k := 0; k < 20; k++ {
			key := fmt.Sprintf("Topic#k%d", k)
			mustPut(t, s, key, off, base+off)
			want[key] = append([]int64{off}, want[key]...) // newest first
			off += 100
		}
	}
	hashes := map[int32]bool{}
	for key := range want {
		hashes[keyHash(key)] = true
	}
	if len(hashes) != len(want) {
		t.Fatal("test keys must have distinct hashes")
	}
	for key, w := range want {
		wantOffsets(t, key, mustQuery(t, s, key, 0, math.MaxInt64, 100), w)
	}
	wantOffsets(t, "absent key", mustQuery(t, s, "Topic#none", 0, math.MaxInt64, 100), nil)
	if h := s.Files()[0].Header; h.HashSlotCount != 4 || h.IndexCount != 101 {
		t.Fatalf("header counts %+v", h)
	}
}

func TestQueryFilters(t *testing.T) {
	s := mustOpen(t, testConfig(t, 16, 1000))
	defer mustClose(t, s)
	// Key "K" at offsets 0,100,..,900 stored one second apart; "other"
	// shares nothing.
	for i := int64(0); i < 10; i++ {
		mustPut(t, s, "K", i*100, base+i*1000)
		mustPut(t, s, "other", i*100+1, base+i*1000)
	}
	mustPut(t, s, "K", 500, base+5000) // re-dispatched duplicate
	mustPut(t, s, "K", 300, base+3000)

	// Newest first means in reverse put order, so the re-put offsets come
	// first and are not repeated further down.
	cases := []struct {
		name       string
		begin, end int64
		max        int
		want       []int64
	}{
		{"all", 0, math.MaxInt64, 100, []int64{300, 500, 900, 800, 700, 600, 400, 200, 100, 0}},
		{"max counts distinct offsets", 0, math.MaxInt64, 3, []int64{300, 500, 900}},
		{"range", base + 3000, base + 5000, 100, []int64{300, 500, 400}},
		{"range without duplicates", base + 6000, base + 8000, 100, []int64{800, 700, 600}},
		{"inside one second", base + 3500, base + 3600, 100, []int64{300}},
		{"range end on second boundary", base + 1999, base + 2000, 100, []int64{200, 100}},
		{"before everything", 0, base - 1, 100, nil},
		{"after everything", base + 10_000, math.MaxInt64, 100, nil},
		{"inverted range", base + 5000, base, 100, nil},
		{"zero max", 0, math.MaxInt64, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantOffsets(t, tc.name, mustQuery(t, s, "K", tc.begin, tc.end, tc.max), tc.want)
		})
	}
}

func TestBadInput(t *testing.T) {
	s := mustOpen(t, testConfig(t, 4, 10))
	defer mustClose(t, s)
	long := strings.Repeat("x", MaxKeyLen+1)
	for _, key := range []string{"", long} {
		if err := s.Put(key, 1, base); !errors.Is(err, ErrBadKey) {
			t.Errorf("Put(len %d) = %v", len(key), err)
		}
		if _, err := s.Query(key, 0, 1, 1); !errors.Is(err, ErrBadKey) {
			t.Errorf("Query(len %d) = %v", len(key), err)
		}
	}
	mustPut(t, s, long[:MaxKeyLen], 1, base)
	if err := s.Put("k", -1, base); !errors.Is(err, ErrBadOffset) {
		t.Errorf("negative offset: %v", err)
	}
	// Extreme store times are accepted and do not break the header.
	mustPut(t, s, "k", 2, math.MinInt64)
	mustPut(t, s, "k", 3, math.MaxInt64)
	wantOffsets(t, "extremes", mustQuery(t, s, "k", math.MinInt64, math.MaxInt64, 10), []int64{3, 2})
}

func TestRollOverAndReopen(t *testing.T) {
	for _, maxFiles := range []int{64, 3} {
		t.Run(fmt.Sprintf("maxFiles=%d", maxFiles), func(t *testing.T) {
			cfg := testConfig(t, 8, 50)
			cfg.MaxFiles = maxFiles
			s := mustOpen(t, cfg)

			want := map[string][]int64{}
			for i := int64(0); i < 500; i++ {
				key := fmt.Sprintf("T#key-%d", i%20)
				off := i * 10
				mustPut(t, s, key, off, base+i*100)
				want[key] = append([]int64{off}, want[key]...)
			}
			files := s.Files()
			if len(files) != 11 { // 49 entries per file
				t.Fatalf("%d files", len(files))
			}
			for i, f := range files {
				if i > 0 && !(files[i-1].Path < f.Path) {
					t.Fatalf("files out of order: %s, %s", files[i-1].Path, f.Path)
				}
				if i < len(files)-1 && f.Header.IndexCount != 50 {
					t.Fatalf("file %d not full: %+v", i, f.Header)
				}
			}
			if got := s.MaxPhyOffset(); got != 4990 {
				t.Fatalf("MaxPhyOffset = %d", got)
			}
			check := func(s *Service) {
				t.Helper()
				for key, w := range want {
					wantOffsets(t, key, mustQuery(t, s, key, 0, math.MaxInt64, 1000), w)
					wantOffsets(t, key+" max 7", mustQuery(t, s, key, 0, math.MaxInt64, 7), w[:7])
				}
				// A time range that spans a file boundary.
				got := mustQuery(t, s, "T#key-3", base+5000, base+10_300, 100)
				wantOffsets(t, "range across files", got, []int64{1030, 830, 630})
			}
			check(s)
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			mustClose(t, s)

			cfg.MaxFiles = max(maxFiles-1, 1)
			s = mustOpen(t, cfg)
			defer mustClose(t, s)
			if got := len(s.Files()); got != 11 {
				t.Fatalf("reopened with %d files", got)
			}
			check(s)
			// Puts go on in the newest, not yet full file.
			mustPut(t, s, "T#key-0", 5000, base+50_000)
			if got := len(s.Files()); got != 11 {
				t.Fatalf("put after reopen rolled: %d files", got)
			}
			got := mustQuery(t, s, "T#key-0", 0, math.MaxInt64, 2)
			wantOffsets(t, "after reopen", got, []int64{5000, 4800})
		})
	}
}

func TestNamesNeverGoBackwards(t *testing.T) {
	cfg := testConfig(t, 4, 3) // two entries per file
	s := mustOpen(t, cfg)
	mustPut(t, s, "a", 0, base)
	mustPut(t, s, "a", 1, base)
	mustPut(t, s, "a", 2, base-60_000) // clock stepped back: new file
	mustPut(t, s, "a", 3, base-60_000)
	mustPut(t, s, "a", 4, base+1) // same stamp? no: a later millisecond
	files := s.Files()
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f.Path))
	}
	want := []string{stampOf(base), stampOf(base) + "_1", stampOf(base + 1)}
	if !slices.Equal(names, want) {
		t.Fatalf("names %v, want %v", names, want)
	}
	mustClose(t, s)
	s = mustOpen(t, cfg)
	defer mustClose(t, s)
	wantOffsets(t, "order after reopen", mustQuery(t, s, "a", math.MinInt64, math.MaxInt64, 10), []int64{4, 3, 2, 1, 0})
}

func TestDeleteBeforeTruncateAfterReset(t *testing.T) {
	cfg := testConfig(t, 4, 6) // five entries per file
	s := mustOpen(t, cfg)
	defer mustClose(t, s)
	for i := int64(0); i < 23; i++ { // files end at offsets 40, 90, 140, 190, 220
		mustPut(t, s, "k", i*10, base+i*1000)
	}
	ends := func() []int64 {
		var out []int64
		for _, f := range s.Files() {
			out = append(out, f.Header.EndPhyOffset)
		}
		return out
	}
	if got := ends(); !slices.Equal(got, []int64{40, 90, 140, 190, 220}) {
		t.Fatalf("ends %v", got)
	}
	if err := s.DeleteBefore(91); err != nil {
		t.Fatal(err)
	}
	if got := ends(); !slices.Equal(got, []int64{140, 190, 220}) {
		t.Fatalf("after DeleteBefore(91): %v", got)
	}
	if err := s.DeleteBefore(math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if got := ends(); !slices.Equal(got, []int64{220}) {
		t.Fatalf("newest file must stay: %v", got)
	}
	if got := mustQuery(t, s, "k", 0, math.MaxInt64, 100); !slices.Equal(got, []int64{220, 210, 200}) {
		t.Fatalf("query after delete: %v", got)
	}
	entries, _ := os.ReadDir(cfg.Dir)
	if len(entries) != 2 { // the file and LOCK
		t.Fatalf("dir holds %v", entries)
	}

	// TruncateAfter cuts the file that straddles the offset and drops the
	// newer ones; puts go on in the cut file.
	for i := int64(23); i < 30; i++ {
		mustPut(t, s, "k", i*10, base+i*1000)
	}
	if got := ends(); !slices.Equal(got, []int64{240, 290}) {
		t.Fatalf("ends %v", got)
	}
	if err := s.TruncateAfter(265); err != nil {
		t.Fatal(err)
	}
	if got := s.MaxPhyOffset(); got != 260 || !slices.Equal(ends(), []int64{240, 260}) {
		t.Fatalf("after TruncateAfter(265): MaxPhyOffset %d, ends %v", got, ends())
	}
	wantOffsets(t, "after TruncateAfter", mustQuery(t, s, "k", 0, math.MaxInt64, 5), []int64{260, 250, 240, 230, 220})
	mustPut(t, s, "k", 270, base+27_000)
	wantOffsets(t, "put after TruncateAfter", mustQuery(t, s, "k", 0, math.MaxInt64, 3), []int64{270, 260, 250})
	if err := s.TruncateAfter(235); err != nil {
		t.Fatal(err)
	}
	if got := ends(); !slices.Equal(got, []int64{230}) {
		t.Fatalf("after TruncateAfter(235): ends %v", got)
	}

	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
	if len(s.Files()) != 0 || s.MaxPhyOffset() != -1 {
		t.Fatalf("after Reset: %v, %d", s.Files(), s.MaxPhyOffset())
	}
	wantOffsets(t, "after Reset", mustQuery(t, s, "k", 0, math.MaxInt64, 100), nil)
	mustPut(t, s, "k", 1000, base+100_000)
	wantOffsets(t, "put after Reset", mustQuery(t, s, "k", 0, math.MaxInt64, 100), []int64{1000})
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestCloseAndLock(t *testing.T) {
	cfg := testConfig(t, 4, 10)
	s := mustOpen(t, cfg)
	mustPut(t, s, "k", 1, base)
	if _, err := Open(cfg); !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("second Open: %v", err)
	}
	mustClose(t, s)
	checks := map[string]error{
		"Put":           s.Put("k", 2, base),
		"Flush":         s.Flush(),
		"DeleteBefore":  s.DeleteBefore(1),
		"TruncateAfter": s.TruncateAfter(1),
		"Reset":         s.Reset(),
		"Close":         s.Close(),
	}
	_, checks["Query"] = s.Query("k", 0, 1, 1)
	for name, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
	if s.MaxPhyOffset() != -1 {
		t.Error("MaxPhyOffset after Close")
	}
	s = mustOpen(t, cfg) // the lock was released
	defer mustClose(t, s)
	wantOffsets(t, "reopened", mustQuery(t, s, "k", 0, math.MaxInt64, 10), []int64{1})
}

func TestOpenIgnoresForeignAndTempFiles(t *testing.T) {
	cfg := testConfig(t, 4, 10)
	tmp := filepath.Join(cfg.Dir, "20240101000000000"+tmpSuffix)
	other := filepath.Join(cfg.Dir, "notes.txt")
	for _, p := range []string{tmp, other} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(cfg.Dir, "20240101000000001"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, cfg)
	defer mustClose(t, s)
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temp file left: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("foreign file touched: %v", err)
	}
	if len(s.Files()) != 0 || len(s.Corrupt()) != 0 {
		t.Fatalf("files %v corrupt %v", s.Files(), s.Corrupt())
	}
}
