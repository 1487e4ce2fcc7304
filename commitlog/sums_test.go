package commitlog

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

func TestCRCAlgebra(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		a := make([]byte, rng.IntN(3000))
		b := make([]byte, rng.IntN(3000))
		for i := range a {
			a[i] = byte(rng.Uint32())
		}
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		ab := append(append([]byte(nil), a...), b...)
		if got, want := crcBetween(EntryCRC(a), EntryCRC(ab), int64(len(b))), EntryCRC(b); got != want {
			t.Fatalf("crcBetween over %d+%d bytes = %08x, want %08x", len(a), len(b), got, want)
		}
		n := rng.IntN(5000)
		if got, want := appendZerosCRC(EntryCRC(a), int64(n)), EntryCRC(append(append([]byte(nil), a...), make([]byte, n)...)); got != want {
			t.Fatalf("appendZerosCRC(%d bytes, %d) = %08x, want %08x", len(a), n, got, want)
		}
	}
	// Past shiftCRC's 32-bit lengths: x^(8n) composes.
	const step = 1 << 30
	if got, want := shiftCRCLong(0x12345678, 3*step+7), shiftCRC(shiftCRC(shiftCRC(shiftCRC(0x12345678, step), step), step), 7); got != want {
		t.Fatalf("shiftCRCLong = %08x, want %08x", got, want)
	}
}

// TestChecksumMatchesFiles: over random batches that roll across many
// small segments, truncations, a reopen and retention, Checksum of any
// range equals the CRC of the bytes the files hold (ChecksumFiles and a
// plain read), and a range inside the running sums reads at most the bytes
// between each end and the write before it.
func TestChecksumMatchesFiles(t *testing.T) {
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 7))
		cfg := testConfig(t, t.TempDir())
		l := openLog(t, cfg)
		maxBatch := int64(0)
		chainFrom := l.MaxOffset()
		var ends []int64 // the write position after each write: batch boundaries
		check := func(step string) {
			t.Helper()
			lo, hi := l.MinOffset(), l.MaxOffset()
			for range 40 {
				from := lo + rng.Int64N(hi-lo+1)
				to := from + rng.Int64N(hi-from+1)
				if rng.IntN(3) == 0 && len(ends) > 0 { // a batch boundary, as checkpoints are
					from = max(lo, ends[rng.IntN(len(ends))])
					to = max(from, ends[rng.IntN(len(ends))])
				}
				want, err := l.ChecksumFiles(from, to)
				if err != nil {
					t.Fatal(err)
				}
				if plain := EntryCRC(readLogRange(t, cfg, from, to)); plain != want {
					t.Fatalf("%s: ChecksumFiles(%d, %d) = %08x, the bytes %08x", step, from, to, want, plain)
				}
				read := l.checksumRead.Load()
				got, err := l.Checksum(from, to)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("seed %d, %s: Checksum(%d, %d) = %08x, files %08x", seed, step, from, to, got, want)
				}
				if n := l.checksumRead.Load() - read; from >= chainFrom && n > 2*maxBatch {
					t.Fatalf("%s: Checksum(%d, %d) inside the sums read %d bytes (batches up to %d)", step, from, to, n, maxBatch)
				}
			}
		}
		appendBatches := func(n int) {
			for range n {
				sizes := make([]int, 1+rng.IntN(12))
				total := int64(0)
				for i := range sizes {
					sizes[i] = MinEntrySize + rng.IntN(3000)
					total += int64(sizes[i]) + TrailerSize
				}
				entries := make([][]byte, len(sizes))
				for i, n := range sizes {
					entries[i] = makeEntry(rng, n)
				}
				if _, err := l.AppendBatch(sizes, func(i int, _ int64, dst []byte) error {
					copy(dst, entries[i])
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				maxBatch = max(maxBatch, total)
				ends = append(ends, l.MaxOffset())
			}
		}
		appendBatches(60)
		check("appends")
		// A truncation to a batch boundary and one inside a batch: the
		// sums go on through them.
		for _, inside := range []bool{false, true} {
			at := ends[len(ends)-1-rng.IntN(10)]
			if inside {
				at -= int64(1 + rng.IntN(MinEntrySize))
			}
			if err := l.Truncate(at); err != nil {
				t.Fatal(err)
			}
			for len(ends) > 0 && ends[len(ends)-1] > at {
				ends = ends[:len(ends)-1]
			}
			appendBatches(30)
			check("truncate")
		}
		// Reopened: nothing of the sums survives; the files answer.
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = openLog(t, cfg)
		chainFrom = l.MaxOffset()
		check("reopened")
		appendBatches(40)
		check("appends after reopen")
		// Retention drops the oldest segments.
		if _, err := l.DeleteExpired(true, 2); err != nil {
			t.Fatal(err)
		}
		check("retention")
	}
}

// TestChecksumSeesOnlyWrites: a byte changed in a file after the Log wrote
// it is seen by ChecksumFiles, not by Checksum (which sums what was
// written); both see a different write.
func TestChecksumSeesOnlyWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cfg := testConfig(t, t.TempDir())
	l := openLog(t, cfg)
	from := l.MaxOffset()
	w := appendRandom(t, l, rng, 20, MinEntrySize, 2000)
	to := l.MaxOffset()
	before, err := l.Checksum(from, to)
	if err != nil {
		t.Fatal(err)
	}
	off := w[10].off + 9
	b := readFileAt(t, cfg, off, 1)
	patchFile(t, cfg, off, []byte{b[0] ^ 0x5a})
	if got, _ := l.Checksum(from, to); got != before {
		t.Fatalf("Checksum changed with the file: %08x, was %08x", got, before)
	}
	if got, _ := l.ChecksumFiles(from, to); got == before {
		t.Fatal("ChecksumFiles did not see the changed byte")
	}
	if got := EntryCRC(readLogRange(t, cfg, from, to)); got == before {
		t.Fatal("the file's bytes did not change")
	}
}

func TestChecksumOutOfRange(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	l := openLog(t, cfg)
	appendRandom(t, l, rand.New(rand.NewPCG(5, 6)), 5, MinEntrySize, 100)
	for _, r := range [][2]int64{{-1, 10}, {10, 5}, {0, l.MaxOffset() + 1}} {
		if _, err := l.Checksum(r[0], r[1]); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("Checksum(%d, %d): %v, want ErrOutOfRange", r[0], r[1], err)
		}
		if _, err := l.ChecksumFiles(r[0], r[1]); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("ChecksumFiles(%d, %d): %v, want ErrOutOfRange", r[0], r[1], err)
		}
	}
	if sum, err := l.Checksum(7, 7); err != nil || sum != 0 {
		t.Errorf("empty range: %08x, %v", sum, err)
	}
}

// TestSumChainForgetsOldestHalf: the chain keeps at most maxSumMarks marks;
// ranges in the half it forgot are outside it, the rest still sums.
func TestSumChainForgetsOldestHalf(t *testing.T) {
	var c sumChain
	c.reset(100)
	data := make([]byte, maxSumMarks+10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for i := range data {
		c.extend(100+int64(i), data[i:i+1])
	}
	if len(c.marks) > maxSumMarks {
		t.Fatalf("%d marks kept", len(c.marks))
	}
	if _, ok := c.markAt(100); ok {
		t.Fatal("the forgotten start is still in the chain")
	}
	first := c.marks[0].end
	a, okA := c.markAt(first + 5)
	b, okB := c.markAt(100 + int64(len(data)))
	if !okA || !okB || a.end != first+5 {
		t.Fatalf("marks %v %v %v", a, okA, okB)
	}
	if got, want := crcBetween(a.prefix, b.prefix, b.end-a.end), EntryCRC(data[a.end-100:]); got != want {
		t.Fatalf("range CRC %08x, want %08x", got, want)
	}
	// A write that does not continue the chain starts a new one.
	c.extend(1<<20, []byte{1, 2, 3})
	if _, ok := c.markAt(first + 5); ok || len(c.marks) != 2 {
		t.Fatalf("chain not restarted: %d marks", len(c.marks))
	}
}

// readLogRange reads [from, to) of the log's files, across segments.
func readLogRange(t testing.TB, cfg Config, from, to int64) []byte {
	t.Helper()
	var out bytes.Buffer
	for off := from; off < to; {
		n := min(to-off, cfg.SegmentSize-off%cfg.SegmentSize)
		out.Write(readFileAt(t, cfg, off, int(n)))
		off += n
	}
	return out.Bytes()
}
