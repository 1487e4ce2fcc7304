package consumequeue

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// openStore opens a store in dir with upf units per file and maxOpen
// descriptors (0: default), closed when the test ends. Its queues write
// each Put at once (WriteBuffer -1): the tests that use it look at the
// files; tail_test.go covers the write buffers.
func openStore(tb testing.TB, dir string, upf, maxOpen int) *Store {
	tb.Helper()
	s, err := Open(Config{Dir: dir, UnitsPerFile: upf, MaxOpenFiles: maxOpen, WriteBuffer: -1, Logger: hclog.NewNullLogger()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func mustQueue(tb testing.TB, s *Store, topic string, id int32) *Queue {
	tb.Helper()
	q, err := s.Queue(topic, id)
	if err != nil {
		tb.Fatal(err)
	}
	return q
}

// unitAt is the unit the tests write at queue offset o: CommitLog offsets
// increase with o.
func unitAt(o int64) Unit {
	return Unit{Offset: 1000 + o*100, Size: 100 + int32(o%7), TagsCode: o*31 - 5}
}

// putRange writes unitAt(o) for o in [from, to).
func putRange(tb testing.TB, q *Queue, from, to int64) {
	tb.Helper()
	for o := from; o < to; o++ {
		if err := q.Put(o, unitAt(o)); err != nil {
			tb.Fatalf("put %d: %v", o, err)
		}
	}
}

// checkQueue asserts q's offsets and that Get returns unitAt for every
// offset in [min, max).
func checkQueue(tb testing.TB, q *Queue, min, max int64) {
	tb.Helper()
	if got := q.MinOffset(); got != min {
		tb.Errorf("MinOffset = %d, want %d", got, min)
	}
	if got := q.MaxOffset(); got != max {
		tb.Errorf("MaxOffset = %d, want %d", got, max)
	}
	units, err := q.Get(min, int(max-min)+5)
	if err != nil {
		tb.Fatalf("Get(%d): %v", min, err)
	}
	if int64(len(units)) != max-min {
		tb.Fatalf("Get(%d) returned %d units, want %d", min, len(units), max-min)
	}
	for i, u := range units {
		if want := unitAt(min + int64(i)); u != want {
			tb.Fatalf("unit %d = %+v, want %+v", min+int64(i), u, want)
		}
	}
}

// queueFiles lists the file names in a queue directory.
func queueFiles(tb testing.TB, dir, topic string, id int32) []string {
	tb.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, topic, itoa(id)))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func queueFilePath(dir, topic string, id int32, start int64) string {
	return filepath.Join(dir, topic, itoa(id), fileName(start))
}

func itoa(id int32) string { return strconv.Itoa(int(id)) }

func fileNames(starts ...int64) []string {
	var out []string
	for _, s := range starts {
		out = append(out, fileName(s))
	}
	return out
}

func equalFiles(tb testing.TB, got []string, want ...int64) {
	tb.Helper()
	if w := fileNames(want...); !slices.Equal(got, w) {
		tb.Fatalf("files = %v, want %v", got, w)
	}
}

func runtimeGosched() { runtime.Gosched() }

// scratchDir returns an empty directory for a test that creates tens of
// thousands of files and checks neither durability nor I/O errors: one on
// tmpfs (/dev/shm) when there is one, else t.TempDir(). On a disk mounted
// with online discard, merely removing 170 000 inodes after the test takes
// longer than the test itself.
func scratchDir(tb testing.TB) string {
	tb.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "consumequeue-test-"); err == nil {
			tb.Cleanup(func() {
				if err := os.RemoveAll(dir); err != nil {
					tb.Error(err)
				}
			})
			return dir
		}
	}
	return tb.TempDir()
}
