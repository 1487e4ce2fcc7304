package commitlog

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

func TestConfigValidate(t *testing.T) {
	page := int64(os.Getpagesize())
	tests := []struct {
		name string
		mut  func(*Config)
		ok   bool
	}{
		{"defaults", func(*Config) {}, true},
		{"zero values mean defaults", func(c *Config) { *c = Config{Dir: c.Dir} }, true},
		{"no dir", func(c *Config) { c.Dir = "" }, false},
		{"segment too small", func(c *Config) { c.SegmentSize = 2048 }, false},
		{"segment not page multiple", func(c *Config) { c.SegmentSize = 16*page + 1 }, false},
		{"segment too large", func(c *Config) { c.SegmentSize = 4 << 30 }, false},
		{"bad flush mode", func(c *Config) { c.FlushMode = 7 }, false},
		{"flush interval too small", func(c *Config) { c.FlushInterval = 1 }, false},
		{"negative reserved time", func(c *Config) { c.FileReservedTime = -1 }, false},
		{"ratio above one", func(c *Config) { c.DiskMaxUsedSpaceRatio = 1.5 }, false},
		{"negative ratio", func(c *Config) { c.DiskMaxUsedSpaceRatio = -0.1 }, false},
		{"ratio one", func(c *Config) { c.DiskMaxUsedSpaceRatio = 1 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig("/tmp/x")
			tt.mut(&c)
			if err := c.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
	if s := DefaultConfig("/d").String(); s == "" {
		t.Fatal("empty String()")
	}
}

func TestAppendReadAcrossSegments(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	l := openLog(t, cfg)
	rng := rand.New(rand.NewPCG(11, 12))
	want := appendRandom(t, l, rng, 2000, MinEntrySize, 3000)

	segs := l.Segments()
	if len(segs) < 10 {
		t.Fatalf("only %d segments; the test wants many", len(segs))
	}
	for i, s := range segs {
		if s.Start != int64(i)*cfg.SegmentSize+segs[0].Start || s.Sealed != (i < len(segs)-1) || s.Size != cfg.SegmentSize {
			t.Fatalf("segment %d: %+v", i, s)
		}
	}
	if got := len(l.SealedSegments()); got != len(segs)-1 {
		t.Fatalf("SealedSegments: %d, want %d", got, len(segs)-1)
	}
	for i, w := range want {
		ref, err := l.Read(w.off, len(w.payload))
		if err != nil {
			t.Fatalf("Read %d: %v", i, err)
		}
		if string(ref.Bytes()) != string(w.payload) {
			t.Fatalf("Read %d: wrong bytes", i)
		}
		ref.Release()
		ref.Release() // idempotent
		got, err := l.ReadAt([]byte("x"), w.off, len(w.payload))
		if err != nil || string(got[1:]) != string(w.payload) || got[0] != 'x' {
			t.Fatalf("ReadAt %d: %v", i, err)
		}
		// No entry straddles two segments.
		if l.SegmentStart(w.off) != l.SegmentStart(w.off+int64(len(w.payload))+TrailerSize-1) {
			t.Fatalf("entry %d at %d straddles a segment boundary", i, w.off)
		}
		if i > 0 {
			prev := want[i-1]
			next := prev.off + int64(len(prev.payload)) + TrailerSize
			if w.off != next && w.off != l.SegmentStart(w.off) {
				t.Fatalf("entry %d at %d, want %d or a segment start", i, w.off, next)
			}
			if w.off != next && cfg.SegmentSize-next%cfg.SegmentSize >= MinEntrySize {
				// The rest of the previous segment holds the marker.
				m := readFileAt(t, cfg, next, 8)
				if int64(binary.BigEndian.Uint32(m)) != cfg.SegmentSize-next%cfg.SegmentSize || binary.BigEndian.Uint32(m[4:]) != BlankMagic {
					t.Fatalf("no end-of-segment marker at %d: %x", next, m)
				}
			}
		}
	}
	last := want[len(want)-1]
	if got := l.MaxOffset(); got != last.off+int64(len(last.payload))+TrailerSize {
		t.Fatalf("MaxOffset = %d", got)
	}
}

func TestAppendBatch(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	l := openLog(t, cfg)
	rng := rand.New(rand.NewPCG(13, 14))
	seg := int(cfg.SegmentSize)

	payloads := func(sizes []int) [][]byte {
		out := make([][]byte, len(sizes))
		for i, n := range sizes {
			out[i] = makeEntry(rng, n)
		}
		return out
	}
	copyFill := func(ps [][]byte) func(int, int64, []byte) error {
		return func(i int, _ int64, dst []byte) error {
			if len(dst) != len(ps[i]) {
				t.Fatalf("dst of %d bytes, want %d", len(dst), len(ps[i]))
			}
			copy(dst, ps[i])
			return nil
		}
	}

	// Fill most of the first segment, then a batch that does not fit.
	first := []int{seg/2 - 4, seg/4 - 4}
	offs, err := l.AppendBatch(first, copyFill(payloads(first)))
	if err != nil || offs[0] != 0 || offs[1] != int64(seg/2) {
		t.Fatalf("AppendBatch = %v, %v", offs, err)
	}
	second := []int{seg/8 - 4, seg/8 - 4, 100}
	ps := payloads(second)
	offs, err = l.AppendBatch(second, copyFill(ps))
	if err != nil {
		t.Fatal(err)
	}
	if offs[0] != int64(seg) || offs[1] != int64(seg+seg/8) || offs[2] != int64(seg+seg/4) {
		t.Fatalf("batch that does not fit: offsets %v, want it at the next segment %d", offs, seg)
	}
	m := readFileAt(t, cfg, int64(3*seg/4), 8)
	if binary.BigEndian.Uint32(m) != uint32(seg/4) || binary.BigEndian.Uint32(m[4:]) != BlankMagic {
		t.Fatalf("marker %x", m)
	}
	for i, o := range offs {
		got, err := l.ReadAt(nil, o, second[i])
		if err != nil || string(got) != string(ps[i]) {
			t.Fatalf("ReadAt(%d): %v", o, err)
		}
	}

	tests := []struct {
		name  string
		sizes []int
		fill  func(int, int64, []byte) error
		want  error
	}{
		{"batch larger than a segment", []int{seg/2 - 4, seg/2 - 4}, copyFill(nil), ErrTooLarge},
		{"one entry larger than a segment", []int{seg + 1}, copyFill(nil), ErrTooLarge},
		{"exactly SegmentSize-8 is too large by the trailer rule", []int{seg - 8 - 4 + 1}, copyFill(nil), ErrTooLarge},
		{"size below minimum", []int{7}, copyFill(nil), ErrInvalidEntry},
		{"fill error", []int{16, 16}, func(i int, _ int64, dst []byte) error {
			copy(dst, makeEntry(rng, 16))
			if i == 1 {
				return errors.New("boom")
			}
			return nil
		}, nil},
		{"wrong length prefix", []int{16}, func(_ int, _ int64, dst []byte) error {
			copy(dst, makeEntry(rng, 16))
			dst[3] = 15
			return nil
		}, ErrInvalidEntry},
		{"blank magic", []int{16}, func(_ int, _ int64, dst []byte) error {
			copy(dst, makeEntry(rng, 16))
			binary.BigEndian.PutUint32(dst[4:], BlankMagic)
			return nil
		}, ErrInvalidEntry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := l.MaxOffset()
			_, err := l.AppendBatch(tt.sizes, tt.fill)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("AppendBatch error %v, want %v", err, tt.want)
			}
			if l.MaxOffset() != before {
				t.Fatalf("MaxOffset moved from %d to %d on error", before, l.MaxOffset())
			}
			// The reserved bytes were zeroed.
			if z := readFileAt(t, cfg, before, 40); lastNonZero(z) >= 0 {
				t.Fatalf("reserved bytes not zeroed: %x", z)
			}
		})
	}
	// A batch of exactly SegmentSize-8 bytes fits in an empty segment.
	exact := []int{seg - 8 - 4}
	offs, err = l.AppendBatch(exact, copyFill(payloads(exact)))
	if err != nil || offs[0]%int64(seg) != 0 {
		t.Fatalf("exact batch: %v %v", offs, err)
	}
	if got, err := l.AppendBatch(nil, nil); err != nil || len(got) != 0 {
		t.Fatalf("empty batch: %v %v", got, err)
	}
}

func TestReadErrors(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	l := openLog(t, cfg)
	rng := rand.New(rand.NewPCG(15, 16))
	ws := appendRandom(t, l, rng, 3, 20, 20)
	tests := []struct {
		name string
		off  int64
		size int
		want error
	}{
		{"past the write position", l.MaxOffset(), 20, ErrOutOfRange},
		{"runs past the write position", ws[2].off, 21, ErrOutOfRange},
		{"negative offset", -1, 20, ErrOutOfRange},
		{"size below minimum", ws[0].off, 4, ErrOutOfRange},
		{"wrong size", ws[0].off, 19, ErrCorrupt},
		{"not an entry boundary", ws[0].off + 4, 20, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := l.Read(tt.off, tt.size); !errors.Is(err, tt.want) {
				t.Fatalf("Read error %v, want %v", err, tt.want)
			}
			if _, err := l.ReadAt(nil, tt.off, tt.size); !errors.Is(err, tt.want) {
				t.Fatalf("ReadAt error %v, want %v", err, tt.want)
			}
		})
	}
}

func TestLifecycleErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := makeEntry(rand.New(rand.NewPCG(1, 1)), 32)
	if _, err := l.Append(p); !errors.Is(err, ErrNotRecovered) {
		t.Fatalf("Append before Recover: %v", err)
	}
	if err := l.Truncate(0); !errors.Is(err, ErrNotRecovered) {
		t.Fatalf("Truncate before Recover: %v", err)
	}
	if _, err := l.DeleteExpired(true, 1); !errors.Is(err, ErrNotRecovered) {
		t.Fatalf("DeleteExpired before Recover: %v", err)
	}
	if _, err := l.Recover(5, nil, nil); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("Recover from 5 of an empty log: %v", err)
	}
	if _, err := l.Recover(0, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Recover(0, nil, nil); !errors.Is(err, ErrRecovered) {
		t.Fatalf("second Recover: %v", err)
	}
	if _, err := l.Append(p); err != nil {
		t.Fatal(err)
	}

	// A second Open of the same directory fails while the first holds it.
	if _, err := Open(cfg); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	checks := map[string]error{}
	_, checks["Append"] = l.Append(p)
	_, checks["Read"] = l.Read(0, 32)
	_, checks["ReadAt"] = l.ReadAt(nil, 0, 32)
	checks["Scan"] = l.Scan(0, nil, nil)
	checks["Flush"] = l.Flush()
	checks["Truncate"] = l.Truncate(0)
	_, checks["DeleteExpired"] = l.DeleteExpired(true, 1)
	_, checks["DiskUsedRatio"] = l.DiskUsedRatio()
	_, checks["Recover"] = l.Recover(0, nil, nil)
	for name, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}

	// The lock is released: the directory opens again.
	l2, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	l2.Close()
}

func TestCloseWithOutstandingRef(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Recover(0, nil, nil); err != nil {
		t.Fatal(err)
	}
	p := makeEntry(rand.New(rand.NewPCG(1, 1)), 64)
	off, err := l.Append(p)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := l.Read(off, len(p))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); !errors.Is(err, ErrRefsOutstanding) {
		t.Fatalf("Close with a held Ref: %v, want ErrRefsOutstanding", err)
	}
	// The Ref's bytes stay readable until it is released.
	if string(ref.Bytes()) != string(p) {
		t.Fatal("Ref bytes changed after Close")
	}
	ref.Release()
}

func TestOpenValidatesSegments(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	build := func(t *testing.T) Config {
		cfg := testConfig(t, t.TempDir())
		l := openLog(t, cfg)
		appendRandom(t, l, rng, 60, 2000, 3000) // three segments
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	name := func(cfg Config, i int64) string { return filepath.Join(cfg.Dir, SegmentName(i*cfg.SegmentSize)) }
	tests := []struct {
		name string
		mut  func(t *testing.T, cfg Config)
		want error // nil: opens
	}{
		{"gap", func(t *testing.T, cfg Config) { os.Remove(name(cfg, 1)) }, ErrBadSegment},
		{"short middle segment", func(t *testing.T, cfg Config) { os.Truncate(name(cfg, 1), 100) }, ErrBadSegment},
		{"long segment", func(t *testing.T, cfg Config) { os.Truncate(name(cfg, 0), cfg.SegmentSize+1) }, ErrBadSegment},
		{"misaligned start", func(t *testing.T, cfg Config) {
			os.WriteFile(filepath.Join(cfg.Dir, SegmentName(cfg.SegmentSize*9+5)), make([]byte, cfg.SegmentSize), 0o644)
		}, ErrBadSegment},
		{"short last segment is extended", func(t *testing.T, cfg Config) {
			os.WriteFile(name(cfg, 3), make([]byte, 10), 0o644)
		}, nil},
		{"other files are ignored", func(t *testing.T, cfg Config) {
			os.WriteFile(filepath.Join(cfg.Dir, "notes.txt"), []byte("hi"), 0o644)
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := build(t)
			tt.mut(t, cfg)
			l, err := Open(cfg)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("Open: %v, want %v", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer l.Close()
			for _, s := range l.Segments() {
				fi, err := os.Stat(s.Path)
				if err != nil || fi.Size() != cfg.SegmentSize {
					t.Fatalf("segment %s: %v size %d", s.Path, err, fi.Size())
				}
			}
		})
	}
}

// TestAppendWriteError: when the batch cannot be written to its segment
// file (an I/O error), AppendBatch returns ErrWrite and publishes nothing,
// and the Log keeps serving what it had; the next append goes where the
// failed one would have, and a reopen recovers exactly the appends that
// succeeded.
func TestAppendWriteError(t *testing.T) {
	var failing atomic.Bool
	cfg := testConfig(t, t.TempDir())
	cfg.FS = &vfs.Faulty{Fail: func(op vfs.Op, path string, _ int64) error {
		if op == vfs.OpWrite && failing.Load() {
			return syscall.EIO
		}
		return nil
	}}
	l := openLog(t, cfg)
	rng := rand.New(rand.NewPCG(7, 7))
	ws := appendRandom(t, l, rng, 3, 16, 64)
	before := l.MaxOffset()

	failing.Store(true)
	_, err := l.Append(makeEntry(rng, 32))
	failing.Store(false)
	if !errors.Is(err, ErrWrite) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Append error %v, want ErrWrite wrapping EIO", err)
	}
	if l.MaxOffset() != before {
		t.Fatalf("MaxOffset moved from %d to %d on a failed write", before, l.MaxOffset())
	}
	for _, w := range ws {
		ref, err := l.Read(w.off, len(w.payload))
		if err != nil {
			t.Fatalf("read %d after a failed write: %v", w.off, err)
		}
		ref.Release()
	}
	p := makeEntry(rng, 32)
	off, err := l.Append(p)
	if err != nil || off != before {
		t.Fatalf("append after a failed write: offset %d (want %d), %v", off, before, err)
	}
	ws = append(ws, written{off, p})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	_, r, _ := reopen(t, cfg)
	sameEntries(t, r.entries, ws)
}
