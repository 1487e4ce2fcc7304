package index

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// TestPutOnFullDisk: a put whose page the file system cannot allocate
// (the disk is full) fails with ErrNoSpace; it used to write through the
// mapping into a hole and die of SIGBUS. It needs a small file system of
// its own, a tmpfs, so it runs only where mounting is permitted (root).
func TestPutOnFullDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	// A file of 8 MiB, sparse, on a file system of 1 MiB.
	cfg := Config{Dir: dir, SlotNum: 1 << 16, MaxEntries: 400_000, Logger: hclog.NewNullLogger()}
	s := mustOpen(t, cfg)
	defer s.Close()
	mustPut(t, s, "t#first", 0, 1000)
	fill, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := fill.Write(buf); err != nil {
			break
		}
	}
	fill.Close()
	var putErr error
	for i := range 400_000 - 2 {
		if putErr = s.Put(fmt.Sprintf("t#k%d", i), int64(i+1)*100, 1000); putErr != nil {
			break
		}
	}
	if !errors.Is(putErr, ErrNoSpace) {
		t.Fatalf("puts on a full disk: %v, want ErrNoSpace", putErr)
	}
	// The slot table's pages reach the file at Flush, which fails while
	// the disk is full and keeps them for the next one.
	if err := s.Flush(); err == nil {
		t.Fatal("Flush on a full disk succeeded")
	}
	// Space returns: puts go on, and what was put is found, in the
	// service and, once flushed, in the files.
	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, "t#after", 1<<40, 1000)
	wantOffsets(t, "first", mustQuery(t, s, "t#first", 0, 2000, 10), []int64{0})
	wantOffsets(t, "after", mustQuery(t, s, "t#after", 0, 2000, 10), []int64{1 << 40})
	if err := s.Flush(); err != nil {
		t.Fatalf("Flush once space returned: %v", err)
	}
	copied := mustOpen(t, Config{Dir: copyDir(t, dir), SlotNum: cfg.SlotNum, MaxEntries: cfg.MaxEntries, Logger: cfg.Logger})
	defer mustClose(t, copied)
	wantOffsets(t, "first in the files", mustQuery(t, copied, "t#first", 0, 2000, 10), []int64{0})
	wantOffsets(t, "after in the files", mustQuery(t, copied, "t#after", 0, 2000, 10), []int64{1 << 40})
}
