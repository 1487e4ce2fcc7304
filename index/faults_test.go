package index

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// faultConfig is testConfig on a vfs.Faulty that asks fail.
func faultConfig(t *testing.T, slots, entries int, fail func(op vfs.Op, path string, n int64) error) Config {
	cfg := testConfig(t, slots, entries)
	cfg.FS = &vfs.Faulty{Fail: fail}
	return cfg
}

// indexNames lists the directory's index files and leftovers of their
// creation (".tmp"), sorted.
func indexNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if _, ok := parseFileName(strings.TrimSuffix(e.Name(), tmpSuffix)); ok {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

// TestPutDiskFull: the disk fills while keys are put. The put whose entry
// page cannot be given storage fails with ErrNoSpace (wrapping the file
// system's error) and indexes nothing; every later put fails the same way
// and Flush cannot write the slot pages, until space returns; then puts
// resume and Flush writes everything. A service reopened on a copy of the
// files finds every key that was put and none that failed.
func TestPutDiskFull(t *testing.T) {
	var full *vfs.FullAfter
	cfg := faultConfig(t, 1<<10, 10_000, func(op vfs.Op, path string, n int64) error { return full.Fail(op, path, n) })
	// Room for the header's page and a few pages of entries (204 a page).
	full = vfs.NewFullAfter(cfg.Dir, 5*4096)
	s := mustOpen(t, cfg)
	defer mustClose(t, s)
	var put []string
	var failed string
	for i := range 10_000 - 2 {
		key := fmt.Sprintf("t#k%d", i)
		err := s.Put(key, int64(i)*100, 1000)
		if err != nil {
			if !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("put %d on a full disk: %v, want ErrNoSpace wrapping ENOSPC", i, err)
			}
			failed = key
			break
		}
		put = append(put, key)
	}
	if failed == "" || len(put) < 204 {
		t.Fatalf("the disk never filled, or filled too early: %d keys put", len(put))
	}
	if err := s.Put("t#next", 1<<40, 1000); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("a put on a disk still full: %v", err)
	}
	if err := s.Flush(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Flush on a full disk: %v, want ENOSPC", err)
	}
	wantOffsets(t, "the key that failed", mustQuery(t, s, failed, 0, 2000, 10), nil)
	full.Reset(1 << 30)
	mustPut(t, s, "t#after", 1<<41, 1000)
	if err := s.Flush(); err != nil {
		t.Fatalf("Flush once space returned: %v", err)
	}
	c := mustOpen(t, Config{Dir: copyDir(t, cfg.Dir), SlotNum: cfg.SlotNum, MaxEntries: cfg.MaxEntries, Logger: cfg.Logger})
	defer mustClose(t, c)
	for i, key := range put {
		wantOffsets(t, key, mustQuery(t, c, key, 0, 2000, 10), []int64{int64(i) * 100})
	}
	wantOffsets(t, "the key that failed, reopened", mustQuery(t, c, failed, 0, 2000, 10), nil)
	wantOffsets(t, "the key after", mustQuery(t, c, "t#after", 0, 2000, 10), []int64{1 << 41})
}

// TestRollFailure: a put that needs a new file fails when the file cannot
// be created, sized, synced, renamed into place or its directory synced;
// no file or leftover stays behind and the full file keeps its keys. Once
// the fault is gone the same put rolls, and a reopened service finds
// every key.
func TestRollFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   vfs.Op
		tmp  bool // the fault hits the file under its temporary name
	}{
		{"create", vfs.OpCreate, true},
		{"size", vfs.OpTruncate, true},
		{"sync the file", vfs.OpSync, true},
		{"rename", vfs.OpRename, false},
		{"sync the directory", vfs.OpSync, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			on := false
			var dir string
			cfg := faultConfig(t, 16, 4, func(op vfs.Op, path string, _ int64) error {
				mu.Lock()
				defer mu.Unlock()
				if !on || op != tc.op {
					return nil
				}
				switch {
				case tc.tmp && strings.HasSuffix(path, tmpSuffix),
					tc.op == vfs.OpRename,
					tc.op == vfs.OpSync && !tc.tmp && path == dir:
					return syscall.EIO
				}
				return nil
			})
			dir = cfg.Dir
			s := mustOpen(t, cfg)
			// MaxEntries 4: entries 1..3, then the next put rolls.
			for i := range 3 {
				mustPut(t, s, fmt.Sprintf("t#k%d", i), int64(i), 1000)
			}
			before := indexNames(t, dir)
			mu.Lock()
			on = true
			mu.Unlock()
			if err := s.Put("t#k3", 3, 2000); !errors.Is(err, syscall.EIO) {
				t.Fatalf("a put that cannot roll: %v, want EIO", err)
			}
			if got := indexNames(t, dir); !slices.Equal(got, before) {
				t.Fatalf("a failed roll left files: %v, had %v", got, before)
			}
			wantOffsets(t, "the key that failed", mustQuery(t, s, "t#k3", 0, 3000, 10), nil)
			wantOffsets(t, "a key of the full file", mustQuery(t, s, "t#k1", 0, 3000, 10), []int64{1})
			mu.Lock()
			on = false
			mu.Unlock()
			mustPut(t, s, "t#k3", 3, 2000)
			if got := indexNames(t, dir); len(got) != 2 {
				t.Fatalf("after the roll: files %v, want 2", got)
			}
			mustClose(t, s)
			r := mustOpen(t, Config{Dir: dir, SlotNum: cfg.SlotNum, MaxEntries: cfg.MaxEntries, Logger: cfg.Logger})
			defer mustClose(t, r)
			for i := range 4 {
				wantOffsets(t, fmt.Sprint("key ", i), mustQuery(t, r, fmt.Sprintf("t#k%d", i), 0, 3000, 10), []int64{int64(i)})
			}
		})
	}
}

// TestFlushFailures: a Flush whose slot pages cannot be written, or whose
// msync fails, reports the error and keeps the work: the next Flush
// writes the pages (a copy of the files finds the keys only then) and
// msyncs the file again.
func TestFlushFailures(t *testing.T) {
	var mu sync.Mutex
	var fail vfs.Op
	syncs := 0 // syncs of an index file
	cfg := faultConfig(t, 64, 1000, func(op vfs.Op, path string, _ int64) error {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := parseFileName(filepath.Base(path)); ok && op == vfs.OpSync {
			syncs++
		}
		if op == fail {
			return syscall.EIO
		}
		return nil
	})
	set := func(op vfs.Op) {
		mu.Lock()
		fail, syncs = op, 0
		mu.Unlock()
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return syncs
	}
	s := mustOpen(t, cfg)
	defer mustClose(t, s)
	mustPut(t, s, "t#a", 10, 1000)

	set(vfs.OpWrite)
	if err := s.Flush(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Flush whose slot pages cannot be written: %v, want EIO", err)
	}
	lost := mustOpen(t, Config{Dir: copyDir(t, cfg.Dir), SlotNum: cfg.SlotNum, MaxEntries: cfg.MaxEntries, Logger: cfg.Logger})
	wantOffsets(t, "a key whose slot page was not written", mustQuery(t, lost, "t#a", 0, 2000, 10), nil)
	mustClose(t, lost)
	set(0)
	if err := s.Flush(); err != nil {
		t.Fatalf("the next Flush: %v", err)
	}
	kept := mustOpen(t, Config{Dir: copyDir(t, cfg.Dir), SlotNum: cfg.SlotNum, MaxEntries: cfg.MaxEntries, Logger: cfg.Logger})
	wantOffsets(t, "the key once its slot page is written", mustQuery(t, kept, "t#a", 0, 2000, 10), []int64{10})
	mustClose(t, kept)

	mustPut(t, s, "t#b", 20, 1000)
	set(vfs.OpSync)
	if err := s.Flush(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Flush whose msync fails: %v, want EIO", err)
	}
	set(0)
	if err := s.Flush(); err != nil {
		t.Fatalf("the Flush after a failed msync: %v", err)
	}
	if count() == 0 {
		t.Fatal("the Flush after a failed msync did not sync the file again")
	}
	set(0)
	if err := s.Flush(); err != nil || count() != 0 {
		t.Fatalf("a Flush with nothing changed: %v, %d syncs", err, count())
	}
}

// TestOpenRemovesLeftoverWhenDirSyncFails: Open removes a file left under
// its temporary name; when the directory cannot be synced afterwards Open
// fails rather than serve an index whose removal may not last.
func TestOpenRemovesLeftoverWhenDirSyncFails(t *testing.T) {
	cfg := testConfig(t, 16, 4)
	s := mustOpen(t, cfg)
	mustPut(t, s, "t#a", 1, 1000)
	mustClose(t, s)
	tmp := filepath.Join(cfg.Dir, "20200101000000000"+tmpSuffix)
	if err := os.WriteFile(tmp, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	failSync := &vfs.FailSync{Dir: cfg.Dir}
	failSync.Set(true)
	cfg.FS = &vfs.Faulty{Fail: failSync.Fail}
	if _, err := Open(cfg); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Open whose directory cannot be synced: %v, want EIO", err)
	}
	cfg.FS = nil
	r := mustOpen(t, cfg)
	defer mustClose(t, r)
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the leftover is still there: %v", err)
	}
	wantOffsets(t, "a key", mustQuery(t, r, "t#a", 0, 2000, 10), []int64{1})
}
