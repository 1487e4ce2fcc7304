package consumequeue

import (
	"errors"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// The write buffers (tail.go): a queue's newest units wait in memory until
// they make WriteBuffer bytes or fill their file, or a Flush, Close or a
// truncation comes.

// openBuffered opens a store in dir with upf units per file whose queues
// buffer bufUnits units; fsys may be nil.
func openBuffered(t *testing.T, dir string, upf, bufUnits, maxBuffered int, fsys vfs.FS) *Store {
	t.Helper()
	s, err := Open(Config{Dir: dir, UnitsPerFile: upf, WriteBuffer: bufUnits * UnitSize, MaxBuffered: maxBuffered,
		Logger: hclog.NewNullLogger(), FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fileUnits is the number of whole units in the queue file starting at
// start (-1: no such file).
func fileUnits(t *testing.T, dir, topic string, id int32, start int64) int64 {
	t.Helper()
	fi, err := os.Stat(queueFilePath(dir, topic, id, start))
	if errors.Is(err, os.ErrNotExist) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size() / UnitSize
}

// TestTailWritesWhenFullOrFileEnds: with 3 units buffered and 7 units a
// file, the units reach the file three at a time and when their file is
// full; every unit reads back from the moment its Put returns, from
// memory or from the file.
func TestTailWritesWhenFullOrFileEnds(t *testing.T) {
	dir := t.TempDir()
	s := openBuffered(t, dir, 7, 3, 0, nil)
	q := mustQueue(t, s, "T", 0)
	// After the Put of unit o: how many units the files 0 and 7 hold (-1:
	// not created yet).
	want := map[int64][2]int64{
		0: {-1, -1}, 1: {-1, -1}, 2: {3, -1}, 3: {3, -1}, 4: {3, -1}, 5: {6, -1},
		6: {7, -1}, // the file is full: written at once
		7: {7, -1}, 8: {7, -1}, 9: {7, 3}, 10: {7, 3},
	}
	for o := int64(0); o <= 10; o++ {
		putRange(t, q, o, o+1)
		checkQueue(t, q, 0, o+1)
		if u, ok, err := q.LastUnit(); err != nil || !ok || u != unitAt(o) {
			t.Fatalf("LastUnit after %d: %+v %v %v", o, u, ok, err)
		}
		for i := int64(0); i <= o; i++ {
			if u, err := q.GetUnit(i); err != nil || u != unitAt(i) {
				t.Fatalf("GetUnit(%d) after %d: %+v %v", i, o, u, err)
			}
		}
		w := want[o]
		if got := [2]int64{fileUnits(t, dir, "T", 0, 0), fileUnits(t, dir, "T", 0, 7)}; got != w {
			t.Fatalf("after the Put of %d the files hold %v units, want %v", o, got, w)
		}
	}
	// A batch longer than the buffer is written with the tail at once.
	if err := q.PutUnits(11, []Unit{unitAt(11), unitAt(12), unitAt(13)}); err != nil {
		t.Fatal(err)
	}
	if got := fileUnits(t, dir, "T", 0, 7); got != 7 {
		t.Fatalf("file 7 holds %d units after a batch that fills it, want 7", got)
	}
	checkQueue(t, q, 0, 14)
}

// TestTailFlushAndClose: Flush writes and syncs every tail and gives the
// buffers back; Close writes the tails; the reopened store reads every
// unit.
func TestTailFlushAndClose(t *testing.T) {
	dir := t.TempDir()
	s := openBuffered(t, dir, 100, 50, 0, nil)
	qa, qb := mustQueue(t, s, "A", 0), mustQueue(t, s, "B", 3)
	putRange(t, qa, 0, 10)
	putRange(t, qb, 0, 4)
	if got := s.buf.reserved.Load(); got != 2*50*UnitSize {
		t.Fatalf("reserved %d bytes for two buffering queues, want %d", got, 2*50*UnitSize)
	}
	if fileUnits(t, dir, "A", 0, 0) != -1 {
		t.Fatal("a tail below the buffer size was written before a Flush")
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if a, b := fileUnits(t, dir, "A", 0, 0), fileUnits(t, dir, "B", 3, 0); a != 10 || b != 4 {
		t.Fatalf("after Flush the files hold %d and %d units, want 10 and 4", a, b)
	}
	if got := s.buf.reserved.Load(); got != 0 {
		t.Fatalf("%d bytes still reserved after a Flush", got)
	}
	putRange(t, qa, 10, 13)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openBuffered(t, dir, 100, 50, 0, nil)
	checkQueue(t, mustQueue(t, s2, "A", 0), 0, 13)
	checkQueue(t, mustQueue(t, s2, "B", 3), 0, 4)
}

// TestTailLostByCloseUnclean: a process killed loses the units its queues
// held in memory; the ones a Flush wrote, and the ones written because
// their buffer filled, are in the files.
func TestTailLostByCloseUnclean(t *testing.T) {
	dir := t.TempDir()
	s := openBuffered(t, dir, 100, 4, 0, nil)
	q := mustQueue(t, s, "T", 0)
	putRange(t, q, 0, 2)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	putRange(t, q, 2, 9) // 2..5 written (the buffer filled), 6..8 in memory
	if err := s.CloseUnclean(); err != nil {
		t.Fatal(err)
	}
	s2 := openBuffered(t, dir, 100, 4, 0, nil)
	q2 := mustQueue(t, s2, "T", 0)
	checkQueue(t, q2, 0, 6)
	putRange(t, q2, 6, 9) // dispatched again, as recovery does
	checkQueue(t, q2, 0, 9)
}

// TestTailWriteFailures: the write of a tail fails (EIO, a full disk, a
// new file that cannot be created). A Put that needed it fails, leaves
// MaxOffset where it was and every unit before it readable, and succeeds
// once the file system works; a Flush that cannot write a tail fails and
// writes it at the next one.
func TestTailWriteFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   vfs.Op
		err  error
		// at: the Put that writes the tail (4 units buffered, 8 a file:
		// 3 fills the buffer, 8 starts the second file, 11 fills it).
		at int64
	}{
		{"write fails", vfs.OpWrite, syscall.EIO, 3},
		{"disk full", vfs.OpWrite, syscall.ENOSPC, 11},
		{"file cannot be created", vfs.OpCreate, syscall.ENOSPC, 11},
		{"queue directory cannot be made", vfs.OpMkdir, syscall.ENOSPC, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fail, failing := switchedFault(tc.op, tc.err)
			s := openBuffered(t, dir, 8, 4, 0, &vfs.Faulty{Fail: fail})
			q := mustQueue(t, s, "T", 1)
			putRange(t, q, 0, tc.at)
			failing.Store(true)
			err := q.Put(tc.at, unitAt(tc.at))
			if !errors.Is(err, tc.err) {
				t.Fatalf("Put %d while %s: %v, want %v", tc.at, tc.name, err, tc.err)
			}
			checkQueue(t, q, 0, tc.at) // the units in memory still read
			if err := s.Flush(); !errors.Is(err, tc.err) {
				t.Fatalf("Flush while %s: %v, want %v", tc.name, err, tc.err)
			}
			checkQueue(t, q, 0, tc.at)
			failing.Store(false)
			putRange(t, q, tc.at, tc.at+6)
			checkQueue(t, q, 0, tc.at+6)
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			checkQueue(t, mustQueue(t, openStore(t, dir, 8, 0), "T", 1), 0, tc.at+6)
		})
	}
}

// TestTailFlushRetriesAfterFailure: a Flush that cannot write a queue's
// tail keeps it for the next Flush, which writes it.
func TestTailFlushRetriesAfterFailure(t *testing.T) {
	dir := t.TempDir()
	fail, failing := switchedFault(vfs.OpWrite, syscall.EIO)
	s := openBuffered(t, dir, 100, 10, 0, &vfs.Faulty{Fail: fail})
	q := mustQueue(t, s, "T", 0)
	putRange(t, q, 0, 5)
	failing.Store(true)
	if err := s.Flush(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Flush with failing writes: %v", err)
	}
	failing.Store(false)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := fileUnits(t, dir, "T", 0, 0); got != 5 {
		t.Fatalf("file holds %d units after the retried Flush, want 5", got)
	}
	if got := s.buf.reserved.Load(); got != 0 {
		t.Fatalf("%d bytes reserved after the tail was written", got)
	}
}

// TestTailBudget: queues beyond Config.MaxBuffered write each Put at once;
// a Flush gives the buffers back, and a deleted topic its queues'.
func TestTailBudget(t *testing.T) {
	dir := t.TempDir()
	s := openBuffered(t, dir, 100, 10, 2*10*UnitSize, nil)
	qs := []*Queue{mustQueue(t, s, "T", 0), mustQueue(t, s, "T", 1), mustQueue(t, s, "U", 0)}
	for _, q := range qs {
		putRange(t, q, 0, 2)
	}
	got := []int64{fileUnits(t, dir, "T", 0, 0), fileUnits(t, dir, "T", 1, 0), fileUnits(t, dir, "U", 0, 0)}
	if got[0] != -1 || got[1] != -1 || got[2] != 2 {
		t.Fatalf("files hold %v units: want the first two queues buffered, the third written", got)
	}
	if err := s.DeleteTopic("T"); err != nil {
		t.Fatal(err)
	}
	if r := s.buf.reserved.Load(); r != 0 {
		t.Fatalf("%d bytes reserved after the buffering topic was deleted", r)
	}
	q := mustQueue(t, s, "U", 0)
	putRange(t, q, 2, 3) // now buffered
	if got := fileUnits(t, dir, "U", 0, 0); got != 2 {
		t.Fatalf("file holds %d units, want 2 (the third buffered)", got)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if r := s.buf.reserved.Load(); r != 0 {
		t.Fatalf("%d bytes reserved after a Flush", r)
	}
	checkQueue(t, q, 0, 3)
}

// TestTailMatchesWriteThrough runs the same random operations on a store
// whose queues buffer and one whose queues write at once: appends and
// batches, overwrites below MaxOffset, Truncate, TruncateByPhysical,
// DeleteBefore, Flush, and Close and reopen. Both must read the same
// after every step.
func TestTailMatchesWriteThrough(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		dirA, dirB := t.TempDir(), t.TempDir()
		open := func() (*Store, *Store) {
			a, err := Open(Config{Dir: dirA, UnitsPerFile: 7, WriteBuffer: 3 * UnitSize, Logger: hclog.NewNullLogger()})
			if err != nil {
				t.Fatal(err)
			}
			b, err := Open(Config{Dir: dirB, UnitsPerFile: 7, WriteBuffer: -1, Logger: hclog.NewNullLogger()})
			if err != nil {
				t.Fatal(err)
			}
			return a, b
		}
		a, b := open()
		for step := 0; step < 150; step++ {
			qa, qb := mustQueue(t, a, "T", 0), mustQueue(t, b, "T", 0)
			max := qb.MaxOffset()
			var op string
			var errA, errB error
			switch r := rng.IntN(20); {
			case r < 11:
				n := 1 + rng.IntN(5)
				units := make([]Unit, n)
				for i := range units {
					units[i] = unitAt(max + int64(i))
				}
				op = "append"
				errA, errB = qa.PutUnits(max, units), qb.PutUnits(max, units)
			case r < 12 && max > qb.MinOffset():
				o := qb.MinOffset() + rng.Int64N(max-qb.MinOffset())
				op = "overwrite"
				errA, errB = qa.Put(o, unitAt(o)), qb.Put(o, unitAt(o))
			case r < 13:
				o := rng.Int64N(max + 2)
				op = "truncate"
				errA, errB = qa.Truncate(o), qb.Truncate(o)
			case r < 14:
				phy := unitAt(rng.Int64N(max + 2)).Offset
				op = "truncate by physical"
				errA, errB = qa.TruncateByPhysical(phy), qb.TruncateByPhysical(phy)
			case r < 16:
				phy := unitAt(rng.Int64N(max + 2)).Offset
				op = "delete before"
				errA, errB = qa.DeleteBefore(phy), qb.DeleteBefore(phy)
			case r < 18:
				op = "flush"
				errA, errB = a.Flush(), b.Flush()
			default:
				op = "reopen"
				errA, errB = a.Close(), b.Close()
				a, b = open()
			}
			if errA != nil || errB != nil {
				t.Fatalf("seed %d step %d %s: %v / %v", seed, step, op, errA, errB)
			}
			qa, qb = mustQueue(t, a, "T", 0), mustQueue(t, b, "T", 0)
			sameQueue(t, qa, qb, seed, step, op)
		}
		_ = a.Close()
		_ = b.Close()
	}
}

// sameQueue fails unless a and b report the same offsets and units.
func sameQueue(t *testing.T, a, b *Queue, seed uint64, step int, op string) {
	t.Helper()
	minA, maxA, minB, maxB := a.MinOffset(), a.MaxOffset(), b.MinOffset(), b.MaxOffset()
	// After a reopen MinOffset is the first file's start for both.
	if minA != minB || maxA != maxB {
		t.Fatalf("seed %d step %d (%s): buffered [%d, %d), written at once [%d, %d)", seed, step, op, minA, maxA, minB, maxB)
	}
	ua, errA := a.Get(minA, int(maxA-minA)+1)
	ub, errB := b.Get(minB, int(maxB-minB)+1)
	if errA != nil || errB != nil || len(ua) != len(ub) {
		t.Fatalf("seed %d step %d (%s): Get: %d units %v / %d units %v", seed, step, op, len(ua), errA, len(ub), errB)
	}
	for i := range ua {
		if ua[i] != ub[i] || ua[i] != unitAt(minA+int64(i)) {
			t.Fatalf("seed %d step %d (%s): unit %d: %+v / %+v", seed, step, op, minA+int64(i), ua[i], ub[i])
		}
	}
	la, okA, errA := a.LastUnit()
	lb, okB, errB := b.LastUnit()
	if la != lb || okA != okB || errA != nil || errB != nil {
		t.Fatalf("seed %d step %d (%s): LastUnit %+v %v %v / %+v %v %v", seed, step, op, la, okA, errA, lb, okB, errB)
	}
}

// TestTailConcurrentReaders: readers and a flusher run beside the writer
// (under -race): every unit read is the one put there, whether it came
// from memory or from its file.
func TestTailConcurrentReaders(t *testing.T) {
	s := openBuffered(t, t.TempDir(), 50, 8, 0, nil)
	q := mustQueue(t, s, "T", 0)
	const total = 3000
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			for !done.Load() {
				max := q.MaxOffset()
				if max == 0 {
					continue
				}
				from := rng.Int64N(max)
				units, err := q.Get(from, 40)
				if err != nil {
					errs <- err
					return
				}
				for i, u := range units {
					if u != unitAt(from+int64(i)) {
						errs <- errors.New("a reader got another unit than the one put")
						return
					}
				}
			}
		}(uint64(r))
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			if err := s.Flush(); err != nil {
				errs <- err
				return
			}
		}
	}()
	for o := int64(0); o < total; o += 3 {
		if err := q.PutUnits(o, []Unit{unitAt(o), unitAt(o + 1), unitAt(o + 2)}); err != nil {
			t.Fatal(err)
		}
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkQueue(t, q, 0, total)
}
