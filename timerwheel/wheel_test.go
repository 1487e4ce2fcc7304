package timerwheel

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

func open(t *testing.T, dir string, seg int64) *Wheel {
	t.Helper()
	w, err := Open(Config{Dir: dir, SegmentRecords: seg})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// timers builds n timers from q0 with due times from due(q).
func timers(q0 int64, n int, due func(q int64) int64) []Timer {
	out := make([]Timer, n)
	for i := range out {
		q := q0 + int64(i)
		out[i] = Timer{Q: q, Due: due(q), Phy: 100 * q, Size: 50}
	}
	return out
}

func keys(ts []Timer) []Key {
	out := make([]Key, len(ts))
	for i, t := range ts {
		out[i] = t.Key()
	}
	return out
}

// want is the reference answer of Scan over ts.
func want(ts []Timer, from Key, until, maxQ int64, limit int) []Key {
	var out []Key
	for _, t := range ts {
		if !t.Gone && t.Q < maxQ && !t.Key().Less(from) && t.Due <= until {
			out = append(out, t.Key())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

func sameKeys(t *testing.T, what string, got []Timer, exp []Key) {
	t.Helper()
	g := keys(got)
	if len(g) != len(exp) {
		t.Fatalf("%s: %d timers, want %d (%v vs %v)", what, len(g), len(exp), g, exp)
	}
	for i := range g {
		if g[i] != exp[i] {
			t.Fatalf("%s: timer %d is %v, want %v", what, i, g[i], exp[i])
		}
	}
}

func TestScanOrdersByDueThenOffset(t *testing.T) {
	w := open(t, t.TempDir(), 64)
	defer w.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	base := int64(1_700_000_000_000)
	ts := timers(0, 1000, func(int64) int64 { return base + rng.Int64N(5_000) })
	ts[7].Gone, ts[7].Due = true, 0
	if err := w.Append(ts); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		from  Key
		until int64
		maxQ  int64
		limit int
	}{
		{Key{}, base + 10_000, 1000, 2000},
		{Key{}, base + 10_000, 1000, 10},
		{Key{Due: base + 1500, Q: 300}, base + 3700, 800, 50},
		{Key{Due: base + 999}, base + 1000, 1000, 1000},
		{Key{}, base - 1, 1000, 5},
	} {
		got, err := w.Scan(c.from, c.until, c.maxQ, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		sameKeys(t, "scan", got, want(ts, c.from, c.until, c.maxQ, c.limit))
	}
	// Consuming in batches visits every timer once, in order.
	var all []Timer
	from := Key{}
	for {
		got, err := w.Scan(from, base+10_000, 1000, 37)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		all = append(all, got...)
		from = got[len(got)-1].Next()
	}
	sameKeys(t, "batches", all, want(ts, Key{}, base+10_000, 1000, 2000))
}

func TestReopenRebuildsAndCutsAtDamage(t *testing.T) {
	dir := t.TempDir()
	w := open(t, dir, 16)
	base := int64(1_700_000_000_000)
	ts := timers(0, 100, func(q int64) int64 { return base + (q%7)*1000 })
	if err := w.Append(ts[:60]); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	// Appended after the checkpoint: not vouched for, dropped on reopen.
	if err := w.Append(ts[60:]); err != nil {
		t.Fatal(err)
	}
	w.closeFiles()
	_ = w.lock.Release()

	w = open(t, dir, 16)
	if w.Len() != 60 || w.LastPhy() != ts[59].Phy {
		t.Fatalf("reopened at %d (last phy %d), want 60", w.Len(), w.LastPhy())
	}
	if err := w.Append(ts[60:]); err != nil {
		t.Fatal(err)
	}
	got, err := w.Scan(Key{}, base+1e6, 100, 1000)
	if err != nil {
		t.Fatal(err)
	}
	sameKeys(t, "after reopen", got, want(ts, Key{}, base+1e6, 100, 1000))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// Damage record 40: the held range ends before it.
	path := filepath.Join(dir, segmentName(32))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[(40-32)*RecordSize+17] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	w = open(t, dir, 16)
	defer w.Close()
	if w.Len() != 40 {
		t.Fatalf("after damage at 40: length %d", w.Len())
	}
	if err := w.Append(ts[40:]); err != nil {
		t.Fatal(err)
	}
	got, err = w.Scan(Key{}, base+1e6, 100, 1000)
	if err != nil {
		t.Fatal(err)
	}
	sameKeys(t, "after damage", got, want(ts, Key{}, base+1e6, 100, 1000))
}

func TestReleaseAndReset(t *testing.T) {
	dir := t.TempDir()
	w := open(t, dir, 16)
	base := int64(1_700_000_000_000)
	ts := timers(0, 64, func(q int64) int64 { return base + q*1000 })
	if err := w.Append(ts); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(timers(5, 1, func(int64) int64 { return base })); err == nil {
		t.Fatal("out-of-order append accepted")
	}
	// Delivered: q < 40 and key < (base+35 s): the segments [0,16) and
	// [16,32) go (their latest due is below), [32,48) stays.
	n, err := w.Release(40, Key{Due: base + 35_000})
	if err != nil || n != 32 || w.First() != 32 {
		t.Fatalf("release: %d %v, first %d", n, err, w.First())
	}
	if _, err := w.Get(3); err == nil {
		t.Fatal("a released record read")
	}
	got, err := w.Scan(Key{Due: base + 35_000}, base+1e6, 64, 100)
	if err != nil {
		t.Fatal(err)
	}
	sameKeys(t, "after release", got, want(ts, Key{Due: base + 35_000}, base+1e6, 64, 100))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = open(t, dir, 16)
	if w.First() != 32 || w.Len() != 64 {
		t.Fatalf("reopened [%d,%d)", w.First(), w.Len())
	}
	if err := w.Reset(10); err != nil {
		t.Fatal(err)
	}
	if w.First() != 10 || w.Len() != 10 {
		t.Fatalf("reset [%d,%d)", w.First(), w.Len())
	}
	if err := w.Append(timers(10, 3, func(int64) int64 { return base })); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// Another geometry re-indexes from the checkpoint's first offset.
	w = open(t, dir, 32)
	defer w.Close()
	if w.First() != 10 || w.Len() != 10 {
		t.Fatalf("new geometry [%d,%d)", w.First(), w.Len())
	}
}

func TestSecondBoundaries(t *testing.T) {
	w := open(t, t.TempDir(), 16)
	defer w.Close()
	// Around a page boundary and with several timers in one second.
	day := int64(PageSeconds * 1000)
	dues := []int64{day - 1, day, day + 999, day - 1000, day, 2 * day, 2*day + 1}
	ts := timers(0, len(dues), func(q int64) int64 { return dues[q] })
	if err := w.Append(ts); err != nil {
		t.Fatal(err)
	}
	got, err := w.Scan(Key{}, 3*day, 100, 100)
	if err != nil {
		t.Fatal(err)
	}
	sameKeys(t, "boundaries", got, want(ts, Key{}, 3*day, 100, 100))
	got, err = w.Scan(Key{Due: day, Q: 2}, day+999, 100, 100)
	if err != nil {
		t.Fatal(err)
	}
	sameKeys(t, "within a second", got, want(ts, Key{Due: day, Q: 2}, day+999, 100, 100))
}
