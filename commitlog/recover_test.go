package commitlog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// buildLog writes n random entries to a fresh log, closes it and returns
// the configuration and what was written.
func buildLog(t *testing.T, seed uint64, n, minSize, maxSize int) (Config, []written) {
	t.Helper()
	cfg := testConfig(t, t.TempDir())
	l := openLog(t, cfg)
	ws := appendRandom(t, l, rand.New(rand.NewPCG(seed, seed)), n, minSize, maxSize)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return cfg, ws
}

func endOf(w written) int64 { return w.off + int64(len(w.payload)) + TrailerSize }

func TestRecoverAfterReopen(t *testing.T) {
	cfg, ws := buildLog(t, 21, 500, MinEntrySize, 2000)
	l, r, end := reopen(t, cfg)
	sameEntries(t, r.entries, ws)
	if len(r.corrupt) != 0 {
		t.Fatalf("corruption reported: %+v", r.corrupt)
	}
	if want := endOf(ws[len(ws)-1]); end != want || l.MaxOffset() != want || l.FlushedOffset() != want {
		t.Fatalf("end %d MaxOffset %d FlushedOffset %d, want %d", end, l.MaxOffset(), l.FlushedOffset(), want)
	}
	// Appends continue where the data ended.
	p := makeEntry(rand.New(rand.NewPCG(1, 1)), 40)
	off, err := l.Append(p)
	if err != nil || off != end && off != l.SegmentStart(end)+cfg.SegmentSize {
		t.Fatalf("Append after recovery at %d: %v (end %d)", off, err, end)
	}
	l.Close()

	// Recover from a known boundary visits only the suffix.
	l2, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	var r2 recovered
	k := len(ws) / 2
	if _, err := l2.Recover(ws[k].off, r2.visit, r2.report); err != nil {
		t.Fatal(err)
	}
	sameEntries(t, r2.entries, append(append([]written(nil), ws[k:]...), written{off, p}))
}

func TestRecoverVisitError(t *testing.T) {
	cfg, ws := buildLog(t, 22, 50, MinEntrySize, 500)
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	boom := errors.New("boom")
	n := 0
	_, err = l.Recover(0, func(int64, []byte) error {
		if n++; n == 10 {
			return boom
		}
		return nil
	}, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("Recover = %v, want boom", err)
	}
	// Nothing changed; Recover can run again.
	var r recovered
	if _, err := l.Recover(0, r.visit, r.report); err != nil {
		t.Fatal(err)
	}
	sameEntries(t, r.entries, ws)
}

// TestRecoverCrashCases edits segment files between Close and Open the way
// a crash (or a bad disk) would, then checks what Recover visits, what it
// reports as corrupt and where it puts the write position.
func TestRecoverCrashCases(t *testing.T) {
	type result struct {
		visited []int // indexes into the written entries
		corrupt []CorruptRange
		end     int64
	}
	all := func(ws []written) []int {
		out := make([]int, len(ws))
		for i := range out {
			out[i] = i
		}
		return out
	}
	except := func(ws []written, skip ...int) []int {
		var out []int
	next:
		for i := range ws {
			for _, s := range skip {
				if i == s {
					continue next
				}
			}
			out = append(out, i)
		}
		return out
	}
	// lastInSegment returns the index of the last entry of the first
	// segment (the one followed by a roll).
	lastInSegment := func(ws []written, cfg Config) int {
		for i := range ws {
			if ws[i].off >= cfg.SegmentSize {
				return i - 1
			}
		}
		t.Fatal("log has one segment")
		return 0
	}

	tests := []struct {
		name string
		// crash edits the files and returns what Recover must find.
		crash func(t *testing.T, cfg Config, ws []written) result
	}{
		{"torn last entry, cut mid-payload", func(t *testing.T, cfg Config, ws []written) result {
			w := ws[len(ws)-1]
			patchFile(t, cfg, w.off+10, make([]byte, len(w.payload)-10+TrailerSize))
			return result{visited: all(ws)[:len(ws)-1], end: w.off}
		}},
		{"torn last entry, trailer missing", func(t *testing.T, cfg Config, ws []written) result {
			w := ws[len(ws)-1]
			patchFile(t, cfg, endOf(w)-TrailerSize, make([]byte, TrailerSize))
			return result{visited: all(ws)[:len(ws)-1], end: w.off}
		}},
		{"torn last entry, garbage after the cut", func(t *testing.T, cfg Config, ws []written) result {
			w := ws[len(ws)-1]
			patchFile(t, cfg, w.off+20, []byte(strings.Repeat("\xa5", 300)))
			return result{visited: all(ws)[:len(ws)-1], end: w.off}
		}},
		{"zeroed tail of several entries", func(t *testing.T, cfg Config, ws []written) result {
			k := len(ws) - 5
			patchFile(t, cfg, ws[k].off, make([]byte, endOf(ws[len(ws)-1])-ws[k].off))
			return result{visited: all(ws)[:k], end: ws[k].off}
		}},
		{"flipped byte inside an old entry", func(t *testing.T, cfg Config, ws []written) result {
			k := len(ws) - 40
			w := ws[k]
			b := readFileAt(t, cfg, w.off+9, 1)
			patchFile(t, cfg, w.off+9, []byte{b[0] ^ 0x80})
			return result{
				visited: except(ws, k),
				corrupt: []CorruptRange{{Offset: w.off, Length: endOf(w) - w.off}},
				end:     endOf(ws[len(ws)-1]),
			}
		}},
		{"flipped byte in a middle entry's length", func(t *testing.T, cfg Config, ws []written) result {
			k := len(ws) - 30
			w := ws[k]
			b := readFileAt(t, cfg, w.off+2, 1)
			patchFile(t, cfg, w.off+2, []byte{b[0] ^ 0x04})
			return result{
				visited: except(ws, k),
				corrupt: []CorruptRange{{Offset: w.off, Length: endOf(w) - w.off}},
				end:     endOf(ws[len(ws)-1]),
			}
		}},
		{"zeroed middle page", func(t *testing.T, cfg Config, ws []written) result {
			// A page lost in the middle (pages written back out of order).
			k := len(ws) - 30
			w := ws[k]
			patchFile(t, cfg, w.off, make([]byte, len(w.payload)+TrailerSize))
			return result{
				visited: except(ws, k),
				corrupt: []CorruptRange{{Offset: w.off, Length: endOf(w) - w.off}},
				end:     endOf(ws[len(ws)-1]),
			}
		}},
		{"last entry of a full segment torn, next segment has data", func(t *testing.T, cfg Config, ws []written) result {
			k := lastInSegment(ws, cfg)
			w := ws[k]
			patchFile(t, cfg, w.off+12, make([]byte, 8))
			// The damaged range ends at the marker, or at the segment
			// end when the entry left no room for one.
			n := endOf(w) - w.off
			if cfg.SegmentSize-endOf(w) < MinEntrySize {
				n = cfg.SegmentSize - w.off
			}
			return result{
				visited: except(ws, k),
				corrupt: []CorruptRange{{Offset: w.off, Length: n}},
				end:     endOf(ws[len(ws)-1]),
			}
		}},
		{"last entry of a full segment torn, next segment empty", func(t *testing.T, cfg Config, ws []written) result {
			k := lastInSegment(ws, cfg)
			w := ws[k]
			patchFile(t, cfg, w.off+12, make([]byte, 8))
			// Nothing of the next segment(s) reached the disk.
			for s := cfg.SegmentSize; s < endOf(ws[len(ws)-1]); s += cfg.SegmentSize {
				patchFile(t, cfg, s, make([]byte, cfg.SegmentSize))
			}
			return result{visited: all(ws)[:k], end: w.off}
		}},
		{"end-of-segment marker lost, next segment has data", func(t *testing.T, cfg Config, ws []written) result {
			k := lastInSegment(ws, cfg)
			e := endOf(ws[k])
			if cfg.SegmentSize-e < MinEntrySize {
				t.Skip("no marker in this layout")
			}
			patchFile(t, cfg, e, make([]byte, 8))
			return result{
				visited: all(ws),
				corrupt: []CorruptRange{{Offset: e, Length: cfg.SegmentSize - e}},
				end:     endOf(ws[len(ws)-1]),
			}
		}},
		{"forged end-of-segment marker in the middle", func(t *testing.T, cfg Config, ws []written) result {
			k := 3
			w := ws[k]
			m := make([]byte, 8)
			putBlank(append(m, make([]byte, int(cfg.SegmentSize-w.off)-8)...)[:cfg.SegmentSize-w.off])
			patchFile(t, cfg, w.off, m)
			return result{
				visited: except(ws, k),
				corrupt: []CorruptRange{{Offset: w.off, Length: endOf(w) - w.off}},
				end:     endOf(ws[len(ws)-1]),
			}
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, ws := buildLog(t, uint64(100+i), 300, MinEntrySize, 1500)
			want := tt.crash(t, cfg, ws)
			l, r, end := reopen(t, cfg)

			var wantEntries []written
			for _, k := range want.visited {
				wantEntries = append(wantEntries, ws[k])
			}
			sameEntries(t, r.entries, wantEntries)
			if len(r.corrupt) != len(want.corrupt) {
				t.Fatalf("corrupt ranges %+v, want %+v", r.corrupt, want.corrupt)
			}
			for j, c := range want.corrupt {
				got := r.corrupt[j]
				if got.Offset != c.Offset || got.Length != c.Length || !errors.Is(got.Err, ErrCorrupt) {
					t.Fatalf("corrupt range %d = %+v, want offset %d length %d", j, got, c.Offset, c.Length)
				}
				// Read of the damaged entry names its offset.
				for _, w := range ws {
					if w.off == c.Offset {
						_, err := l.Read(w.off, len(w.payload))
						if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprint(w.off)) {
							t.Fatalf("Read of damaged entry: %v", err)
						}
					}
				}
			}
			if end != want.end || l.MaxOffset() != want.end {
				t.Fatalf("end %d (MaxOffset %d), want %d", end, l.MaxOffset(), want.end)
			}
			// Past the end every byte of the end's segment is zero, and no
			// later segment is left.
			segs := l.Segments()
			if lastSeg := segs[len(segs)-1]; lastSeg.Start != l.SegmentStart(end) && !(end == lastSeg.Start+cfg.SegmentSize) {
				t.Fatalf("last segment starts at %d, end %d", lastSeg.Start, end)
			}
			if rest := cfg.SegmentSize - end%cfg.SegmentSize; rest < cfg.SegmentSize {
				if lastNonZero(readFileAt(t, cfg, end, int(rest))) >= 0 {
					t.Fatal("tail after the end is not zero")
				}
			}
			if _, err := os.Stat(segPath(cfg, l.SegmentStart(end)+cfg.SegmentSize)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("segment after the end still exists: %v", err)
			}

			// Scan (read-only) sees the same entries and reports the same
			// damage.
			var s recovered
			if err := l.Scan(l.MinOffset(), s.visit, s.report); err != nil {
				t.Fatal(err)
			}
			sameEntries(t, s.entries, wantEntries)
			if len(s.corrupt) != len(want.corrupt) {
				t.Fatalf("Scan corrupt ranges %+v, want %+v", s.corrupt, want.corrupt)
			}

			// The log keeps working, and a second reopen finds the same.
			p := makeEntry(rand.New(rand.NewPCG(1, 1)), 64)
			off, err := l.Append(p)
			if err != nil {
				t.Fatal(err)
			}
			l.Close()
			_, r2, end2 := reopen(t, cfg)
			sameEntries(t, r2.entries, append(wantEntries, written{off, p}))
			if end2 != off+int64(len(p))+TrailerSize {
				t.Fatalf("end after second reopen %d", end2)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	l := openLog(t, cfg)
	rng := rand.New(rand.NewPCG(31, 32))
	ws := appendRandom(t, l, rng, 300, MinEntrySize, 1500)
	nsegs := len(l.Segments())

	// Truncate into an earlier segment: later segment files go away.
	k := 40
	if err := l.Truncate(ws[k].off); err != nil {
		t.Fatal(err)
	}
	if l.MaxOffset() != ws[k].off || l.FlushedOffset() > ws[k].off {
		t.Fatalf("MaxOffset %d FlushedOffset %d after Truncate(%d)", l.MaxOffset(), l.FlushedOffset(), ws[k].off)
	}
	if got := len(l.Segments()); got >= nsegs || got != int(l.SegmentStart(ws[k].off)/cfg.SegmentSize)+1 {
		t.Fatalf("%d segments after truncate, had %d", got, nsegs)
	}
	if _, err := l.Read(ws[k].off, len(ws[k].payload)); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("Read of a truncated entry: %v", err)
	}
	for _, bad := range []int64{-1, l.MaxOffset() + 1} {
		if err := l.Truncate(bad); !errors.Is(err, ErrOutOfRange) {
			t.Fatalf("Truncate(%d) = %v", bad, err)
		}
	}
	if err := l.Truncate(l.MaxOffset()); err != nil {
		t.Fatalf("Truncate at the write position: %v", err)
	}
	// Appends continue at the truncation point.
	more := appendRandom(t, l, rng, 100, MinEntrySize, 1500)
	if more[0].off != ws[k].off {
		t.Fatalf("first append after Truncate at %d, want %d", more[0].off, ws[k].off)
	}
	want := append(append([]written(nil), ws[:k]...), more...)
	l.Close()
	_, r, end := reopen(t, cfg)
	sameEntries(t, r.entries, want)
	if len(r.corrupt) != 0 || end != endOf(more[len(more)-1]) {
		t.Fatalf("corrupt %+v end %d", r.corrupt, end)
	}
}

func TestTruncateThenReopen(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	l := openLog(t, cfg)
	rng := rand.New(rand.NewPCG(33, 34))
	ws := appendRandom(t, l, rng, 200, MinEntrySize, 1500)
	// Truncate to a segment start: that segment stays, empty.
	var k int
	for k = range ws {
		if ws[k].off%cfg.SegmentSize == 0 && ws[k].off > 0 {
			break
		}
	}
	if err := l.Truncate(ws[k].off); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l2, r, end := reopen(t, cfg)
	sameEntries(t, r.entries, ws[:k])
	if end != ws[k].off || l2.MaxOffset() != ws[k].off {
		t.Fatalf("recovered to %d, want %d", end, ws[k].off)
	}
}

func TestRecoverEmptyLogAndFromEnd(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	l, r, end := reopen(t, cfg)
	if end != 0 || len(r.entries) != 0 || l.MinOffset() != 0 {
		t.Fatalf("empty log: end %d entries %d", end, len(r.entries))
	}
	// Exactly fill a segment: the write position is the segment end.
	size := int(cfg.SegmentSize) - TrailerSize
	half := size/2 - TrailerSize/2
	p1 := makeEntry(rand.New(rand.NewPCG(1, 1)), half)
	p2 := makeEntry(rand.New(rand.NewPCG(1, 2)), int(cfg.SegmentSize)-2*TrailerSize-half)
	if _, err := l.Append(p1); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(p2); err != nil {
		t.Fatal(err)
	}
	if l.MaxOffset() != cfg.SegmentSize {
		t.Fatalf("MaxOffset %d, want %d", l.MaxOffset(), cfg.SegmentSize)
	}
	l.Close()
	l2, r2, end2 := reopen(t, cfg)
	if end2 != cfg.SegmentSize || len(r2.entries) != 2 {
		t.Fatalf("end %d entries %d", end2, len(r2.entries))
	}
	off, err := l2.Append(p1)
	if err != nil || off != cfg.SegmentSize {
		t.Fatalf("Append after a full segment at %d: %v", off, err)
	}
	l2.Close()

	// Recover from exactly the end of the last segment.
	l3, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l3.Close()
	end3, err := l3.Recover(2*cfg.SegmentSize, nil, nil)
	if err != nil || end3 != 2*cfg.SegmentSize {
		t.Fatalf("Recover from the end: %d %v", end3, err)
	}
	if _, err := l3.Recover(0, nil, nil); !errors.Is(err, ErrRecovered) {
		t.Fatal(err)
	}
}
