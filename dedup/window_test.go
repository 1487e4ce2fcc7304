package dedup

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

const t0 = 1_700_000_000_000 // a store time, Unix ms

func TestLookup(t *testing.T) {
	w := New(Config{Window: time.Minute})
	first := Result{QueueID: 3, Size: 250, QueueOffset: 41, PhysicalOffset: 8192}
	w.Add("orders", "AC110002", first, t0)
	w.Add("orders", "AC110003", Result{QueueID: 1}, t0+5_000)
	want := first
	want.StoreTime = t0

	tests := []struct {
		name         string
		topic, key   string
		now          int64
		window       time.Duration
		hit          bool
		wantQueueOff int64
	}{
		{"same instant", "orders", "AC110002", t0, time.Minute, true, 41},
		{"inside the window", "orders", "AC110002", t0 + 30_000, time.Minute, true, 41},
		{"at the window's edge", "orders", "AC110002", t0 + 60_000, time.Minute, true, 41},
		{"one ms after it", "orders", "AC110002", t0 + 60_001, time.Minute, false, 0},
		{"store time after now (clock behind)", "orders", "AC110002", t0 - 20_000, time.Minute, true, 41},
		{"another topic, same key", "payments", "AC110002", t0 + 1, time.Minute, false, 0},
		{"unknown key", "orders", "AC110004", t0 + 1, time.Minute, false, 0},
		{"window 0 is off", "orders", "AC110002", t0, 0, false, 0},
		{"negative window is off", "orders", "AC110002", t0, -time.Second, false, 0},
		{"sub-ms window is off", "orders", "AC110002", t0, time.Millisecond / 2, false, 0},
		{"shorter per-topic window: inside", "orders", "AC110002", t0 + 10_000, 10 * time.Second, true, 41},
		{"shorter per-topic window: after", "orders", "AC110002", t0 + 10_001, 10 * time.Second, false, 0},
		{"longer window is capped by the retention", "orders", "AC110002", t0 + 60_001, time.Hour, false, 0},
		{"empty key", "orders", "", t0, time.Minute, false, 0},
		{"empty topic", "", "AC110002", t0, time.Minute, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := w.Lookup(tc.topic, tc.key, tc.now, tc.window)
			if ok != tc.hit {
				t.Fatalf("hit = %v, want %v", ok, tc.hit)
			}
			if ok && r != want {
				t.Fatalf("result %+v, want %+v", r, want)
			}
			if !ok && r != (Result{}) {
				t.Fatalf("a miss returned %+v", r)
			}
		})
	}
}

func TestAddSetsStoreTime(t *testing.T) {
	w := New(Config{})
	w.Add("t", "k", Result{StoreTime: 99}, t0)
	if r, ok := w.Lookup("t", "k", t0, time.Second); !ok || r.StoreTime != t0 {
		t.Fatalf("Lookup = %+v, %v; want StoreTime %d", r, ok, t0)
	}
}

// Store times that go backwards (a new leader's clock) delay eviction but
// never reorder it: entries leave in insertion order.
func TestEvictByAgeInsertionOrder(t *testing.T) {
	w := New(Config{Window: 10 * time.Second})
	w.Add("t", "a", Result{}, t0)        // leader 1
	w.Add("t", "b", Result{}, t0-50_000) // leader 2, 50 s behind
	w.Add("t", "c", Result{}, t0+1_000)  // leader 2's clock is fixed

	// b is older than the retention, but a, before it, is not: b waits.
	if got := keysOf(w); got != "a b c" {
		t.Fatalf("entries %q", got)
	}
	// A Lookup still judges b by its own time: a miss at t0.
	if _, ok := w.Lookup("t", "b", t0, 10*time.Second); ok {
		t.Fatal("b hit 50 s after its store time")
	}
	// Or a hit for a message stored right after it by the same leader.
	if _, ok := w.Lookup("t", "b", t0-45_000, 10*time.Second); !ok {
		t.Fatal("b missed 5 s after its store time")
	}
	w.Expire(t0 + 10_000) // a is exactly the retention old: stays
	if got := keysOf(w); got != "a b c" {
		t.Fatalf("after Expire(t0+10s): %q", got)
	}
	w.Expire(t0 + 10_001) // a leaves, then b (older still); c stays
	if got := keysOf(w); got != "c" {
		t.Fatalf("after Expire(t0+10.001s): %q", got)
	}
	// A time going back does not lower the newest time.
	w.Expire(t0)
	if st := w.Stats(); st.Newest != t0+10_001 || st.Expired != 2 || st.EvictedByCount != 0 {
		t.Fatalf("stats %+v", st)
	}
	w.Add("t", "d", Result{}, t0+11_002)
	if got, st := keysOf(w), w.Stats(); got != "d" || st.Expired != 3 {
		t.Fatalf("after Add at t0+11.002s: %q, %+v", got, st)
	}
}

func TestEvictByCount(t *testing.T) {
	w := New(Config{Window: time.Hour, MaxEntries: 3})
	for i, k := range []string{"a", "b", "c", "d", "e"} {
		w.Add("t", k, Result{QueueOffset: int64(i)}, t0+int64(i))
	}
	if got := keysOf(w); got != "c d e" {
		t.Fatalf("entries %q", got)
	}
	for _, k := range []string{"a", "b"} {
		if _, ok := w.Lookup("t", k, t0+5, time.Hour); ok {
			t.Fatalf("evicted %q still hits", k)
		}
	}
	if r, ok := w.Lookup("t", "c", t0+5, time.Hour); !ok || r.QueueOffset != 2 {
		t.Fatalf("c: %+v, %v", r, ok)
	}
	if st := w.Stats(); st.Entries != 3 || st.EvictedByCount != 2 || st.Expired != 0 {
		t.Fatalf("stats %+v", st)
	}
	// A lower limit takes effect at once, oldest first.
	w.SetConfig(Config{Window: time.Hour, MaxEntries: 1})
	if got, st := keysOf(w), w.Stats(); got != "e" || st.EvictedByCount != 4 {
		t.Fatalf("after SetConfig: %q, %+v", got, st)
	}
	// So does a shorter retention.
	w.SetConfig(Config{Window: time.Millisecond})
	w.Expire(t0 + 6)
	if got, st := keysOf(w), w.Stats(); got != "" || st.Expired != 1 {
		t.Fatalf("after a shorter retention: %q, %+v", got, st)
	}
}

// A pair stored again after the caller's shorter window passed is moved to
// the back with its new result.
func TestAddAgain(t *testing.T) {
	w := New(Config{Window: time.Minute, MaxEntries: 3})
	w.Add("t", "k", Result{QueueOffset: 1}, t0)
	w.Add("t", "x", Result{}, t0+1)
	if _, ok := w.Lookup("t", "k", t0+10_001, 10*time.Second); ok {
		t.Fatal("hit after the per-topic window")
	}
	w.Add("t", "k", Result{QueueOffset: 2}, t0+10_001)
	if r, ok := w.Lookup("t", "k", t0+15_000, 10*time.Second); !ok || r.QueueOffset != 2 || r.StoreTime != t0+10_001 {
		t.Fatalf("Lookup = %+v, %v", r, ok)
	}
	if got, st := keysOf(w), w.Stats(); got != "x k" || st.Replaced != 1 || st.Entries != 2 {
		t.Fatalf("%q, %+v", got, st)
	}
	// The dead slot is not an entry: two more fit before the count evicts.
	w.Add("t", "y", Result{}, t0+10_002)
	if st := w.Stats(); st.EvictedByCount != 0 || st.Entries != 3 {
		t.Fatalf("stats %+v", st)
	}
}

// TestAddMissed: an AddMissed after a LookupMiss that found no entry
// appends without searching, and the result is the same as Add's; a Miss
// that found an older entry, or one from another window, is a plain Add
// (the older entry moves to the back, not kept twice).
func TestAddMissed(t *testing.T) {
	w := New(Config{Window: time.Minute, MaxEntries: 4})
	_, ok, miss := w.LookupMiss("t", "k", t0, 10*time.Second)
	if ok || !miss.absent || miss.w != w {
		t.Fatalf("LookupMiss of an empty window = %v, %+v", ok, miss)
	}
	w.Add("t", "x", Result{}, t0+1) // another pair in between
	w.AddMissed("t", "k", Result{QueueOffset: 1}, t0+2, miss)
	if r, ok := w.Lookup("t", "k", t0+3, 10*time.Second); !ok || r.QueueOffset != 1 || r.StoreTime != t0+2 {
		t.Fatalf("Lookup = %+v, %v", r, ok)
	}

	// Found, but older than the caller's window: not absent.
	_, ok, miss = w.LookupMiss("t", "k", t0+20_000, 10*time.Second)
	if ok || miss.absent {
		t.Fatalf("LookupMiss of an old entry = %v, %+v", ok, miss)
	}
	w.AddMissed("t", "k", Result{QueueOffset: 2}, t0+20_000, miss)
	if got, st := keysOf(w), w.Stats(); got != "x k" || st.Replaced != 1 || st.Entries != 2 {
		t.Fatalf("%q, %+v", got, st)
	}

	// A Miss of another window (a leader's window built afresh): a plain
	// Add, though that window did not hold the pair.
	other := New(Config{Window: time.Minute, MaxEntries: 4})
	_, _, miss = other.LookupMiss("t", "k", t0+20_001, 10*time.Second)
	if !miss.absent {
		t.Fatalf("other window's miss %+v", miss)
	}
	w.AddMissed("t", "k", Result{QueueOffset: 3}, t0+20_001, miss)
	if got, st := keysOf(w), w.Stats(); got != "x k" || st.Replaced != 2 || st.Entries != 2 {
		t.Fatalf("%q, %+v", got, st)
	}
	if r, ok := w.Lookup("t", "k", t0+20_002, 10*time.Second); !ok || r.QueueOffset != 3 {
		t.Fatalf("Lookup = %+v, %v", r, ok)
	}

	// A window of 0 looks nothing up: its Miss knows nothing.
	if _, _, miss = w.LookupMiss("t", "new", t0, 0); miss != (Miss{}) {
		t.Fatalf("LookupMiss with no window = %+v", miss)
	}
}

func TestBoundsIgnored(t *testing.T) {
	long := func(n int) string { return strings.Repeat("k", n) }
	tests := []struct {
		name       string
		topic, key string
		recorded   bool
	}{
		{"32 hex chars", "orders", "7F0000011F4418B4AAC28E7D3D8B0000", true},
		{"key of MaxKeyLen", "orders", long(MaxKeyLen), true},
		{"key over MaxKeyLen", "orders", long(MaxKeyLen + 1), false},
		{"huge key", "orders", long(1 << 16), false},
		{"topic of MaxTopicLen", long(MaxTopicLen), "k", true},
		{"topic over MaxTopicLen", long(MaxTopicLen + 1), "k", false},
		{"empty key", "orders", "", false},
		{"empty topic", "", "k", false},
		{"binary bytes", "t\x00", "\x00\xff", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := New(Config{})
			w.Add(tc.topic, tc.key, Result{}, t0)
			_, ok := w.Lookup(tc.topic, tc.key, t0, time.Minute)
			st := w.Stats()
			if ok != tc.recorded || (st.Entries == 1) != tc.recorded || (st.Ignored == 1) == tc.recorded {
				t.Fatalf("hit %v, stats %+v; recorded should be %v", ok, st, tc.recorded)
			}
			if st.Newest != t0 {
				t.Fatalf("an ignored Add must still advance the time: %+v", st)
			}
		})
	}
}

// Two pairs whose concatenations are equal stay apart: no false positive.
func TestNoFalsePositive(t *testing.T) {
	w := New(Config{})
	w.Add("a", "bc", Result{QueueOffset: 1}, t0)
	for _, p := range [][2]string{{"ab", "c"}, {"abc", "c"}, {"a", "b"}, {"a", "bcd"}, {"\x01a", "bc"}} {
		if r, ok := w.Lookup(p[0], p[1], t0, time.Minute); ok {
			t.Fatalf("%q/%q hit %+v", p[0], p[1], r)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	tests := []struct {
		in, want Config
	}{
		{Config{}, Config{Window: DefaultWindow, MaxEntries: DefaultMaxEntries}},
		{Config{Window: -1, MaxEntries: -1}, Config{Window: DefaultWindow, MaxEntries: DefaultMaxEntries}},
		{Config{Window: time.Microsecond, MaxEntries: 1}, Config{Window: time.Millisecond, MaxEntries: 1}},
		{Config{Window: 1500 * time.Microsecond, MaxEntries: math.MaxInt}, Config{Window: time.Millisecond, MaxEntries: MaxEntriesLimit}},
	}
	for _, tc := range tests {
		if got := New(tc.in).Config(); got != tc.want {
			t.Errorf("New(%+v).Config() = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// Times at the ends of int64 neither overflow nor wrap into a hit.
func TestExtremeTimes(t *testing.T) {
	w := New(Config{Window: time.Minute})
	w.Add("t", "old", Result{}, math.MinInt64)
	if _, ok := w.Lookup("t", "old", math.MaxInt64, time.Minute); ok {
		t.Fatal("hit across the whole int64 range")
	}
	w.Add("t", "new", Result{}, math.MaxInt64)
	if got := keysOf(w); got != "new" {
		t.Fatalf("entries %q", got)
	}
}

// The determinism rule: windows fed the same Adds and Expires, whatever
// Lookups and restores happen in between, hold the same snapshot, and
// every Lookup agrees with the reference model.
func TestDeterminism(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		data := make([]byte, 4*3000)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		runOps(t, Config{Window: 30 * time.Second, MaxEntries: 1 + int(seed)}, decodeOps(data))
		runOps(t, Config{Window: 30 * time.Second, MaxEntries: 100}, decodeOps(data))
	}
}

// The ring's array grows, compacts dead slots and shrinks.
func TestRingCapacity(t *testing.T) {
	w := New(Config{Window: time.Second, MaxEntries: 1 << 20})
	const n = 10_000
	for i := range n {
		w.Add("t", keyOf(i), Result{}, t0)
	}
	if c := len(w.g.slots); c < n || c > 2*n {
		t.Fatalf("%d slots for %d entries", c, n)
	}
	// An old entry at the front while two keys are added again and again:
	// their dead slots are compacted, the array does not grow.
	w = New(Config{Window: time.Hour, MaxEntries: 1 << 20})
	w.Add("t", "front", Result{}, t0)
	for i := range 100_000 {
		w.Add("t", keyOf(i%2), Result{}, t0+int64(i))
	}
	if c, st := len(w.g.slots), w.Stats(); c > 4*minRingCap || st.Entries != 3 {
		t.Fatalf("%d slots, %+v", c, st)
	}
	// Everything expires: the array shrinks back.
	w = New(Config{Window: time.Second, MaxEntries: 1 << 20})
	for i := range n {
		w.Add("t", keyOf(i), Result{}, t0)
	}
	full := w.Bytes()
	w.Expire(t0 + 1_001)
	if c, st := len(w.g.slots), w.Stats(); c > 4*minRingCap || st.Entries != 0 || st.Expired != n {
		t.Fatalf("%d slots after expiry, %+v", c, st)
	}
	// The table and the arena were replaced too: Bytes falls back with
	// them.
	if b := w.Bytes(); full < n*100 || b > 4096 || len(w.g.table) > 2*minRingCap {
		t.Fatalf("Bytes %d full, %d after expiry (table of %d)", full, b, len(w.g.table))
	}
	// At MaxEntries the array stops at its limit, however the entries
	// churn, and a lower MaxEntries shrinks it.
	w = New(Config{Window: time.Hour, MaxEntries: 1000})
	limit := 1000 + 1000/4 + minRingCap
	for i := range 5_000 {
		w.Add("t", keyOf(i), Result{}, t0)
	}
	for i := range 20_000 {
		w.Add("t", keyOf(4_000+(i*7)%1_000), Result{}, t0) // all held: moved to the back
	}
	if c, st := len(w.g.slots), w.Stats(); c > limit || st.Entries != 1000 || st.Replaced != 20_000 || st.EvictedByCount != 4_000 {
		t.Fatalf("%d slots (limit %d), %+v", c, limit, st)
	}
	w.SetConfig(Config{Window: time.Hour, MaxEntries: 100})
	if c, st := len(w.g.slots), w.Stats(); c > 100+25+minRingCap || st.Entries != 100 {
		t.Fatalf("%d slots after a lower MaxEntries, %+v", c, st)
	}
}

// Readers on other goroutines while the apply step adds (go test -race).
func TestConcurrentReaders(t *testing.T) {
	w := New(Config{Window: time.Second, MaxEntries: 500})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				w.Lookup("t", keyOf(i%1000), t0+int64(i), time.Second)
				if i%100 == g {
					_ = w.Stats()
					_ = w.AppendSnapshot(nil)
				}
			}
		}()
	}
	for i := range 5_000 {
		w.Add("t", keyOf(i%1000), Result{QueueOffset: int64(i)}, t0+int64(i))
	}
	close(stop)
	wg.Wait()
	if _, err := Restore(w.AppendSnapshot(nil)); err != nil {
		t.Fatal(err)
	}
}

// keysOf lists a window's keys in insertion order.
func keysOf(w *Window) string {
	var b bytes.Buffer
	w.g.each(func(s *slot) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		_, key := splitID(w.g.id(s))
		b.WriteString(key)
	})
	return b.String()
}

// keyOf returns a 32-hex-character key for i, like a client's UNIQ_KEY.
func keyOf(i int) string {
	const hex = "0123456789ABCDEF"
	b := []byte("7F0000011F4418B4AAC2000000000000")
	for p := len(b) - 1; i > 0; p-- {
		b[p] = hex[i%16]
		i /= 16
	}
	return string(b)
}

// splitID returns the topic and key of an id.
func splitID[S string | []byte](id S) (topic, key string) {
	return string(idTopic(id)), string(appendIDKey(nil, id))
}
