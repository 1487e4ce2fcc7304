package index

import (
	"os"
	"slices"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// testConfig returns a small-geometry config in a fresh directory.
func testConfig(t testing.TB, slots, entries int) Config {
	t.Helper()
	return Config{Dir: t.TempDir(), SlotNum: slots, MaxEntries: entries, Logger: hclog.NewNullLogger()}
}

func mustOpen(t testing.TB, cfg Config) *Service {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func mustClose(t testing.TB, s *Service) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func mustPut(t testing.TB, s *Service, key string, off, ts int64) {
	t.Helper()
	if err := s.Put(key, off, ts); err != nil {
		t.Fatalf("Put(%q, %d, %d): %v", key, off, ts, err)
	}
}

func mustQuery(t testing.TB, s *Service, key string, begin, end int64, n int) []int64 {
	t.Helper()
	got, err := s.Query(key, begin, end, n)
	if err != nil {
		t.Fatalf("Query(%q): %v", key, err)
	}
	return got
}

func wantOffsets(t testing.TB, what string, got, want []int64) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

// patchFile overwrites bytes of a closed index file at off.
func patchFile(t testing.TB, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func be32(v int32) []byte {
	return []byte{byte(uint32(v) >> 24), byte(uint32(v) >> 16), byte(uint32(v) >> 8), byte(v)}
}
