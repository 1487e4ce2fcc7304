package dedup

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// model is a plain reference implementation of the window's rules: a
// slice in insertion order, searched linearly. Its times must not
// overflow (tests use small ones).
type model struct {
	retention int64 // ms
	max       int
	newest    int64
	entries   []modelEntry
	n         counters
}

type modelEntry struct {
	topic, key string
	r          Result
}

func newModel(cfg Config) *model {
	cfg = cfg.normalized()
	return &model{retention: cfg.Window.Milliseconds(), max: cfg.MaxEntries, newest: -1 << 63}
}

func (m *model) advance(t int64) {
	m.newest = max(m.newest, t)
	for len(m.entries) > 0 && m.newest-m.entries[0].r.StoreTime > m.retention {
		m.entries = m.entries[1:]
		m.n.expired++
	}
}

func (m *model) find(topic, key string) int {
	for i, e := range m.entries {
		if e.topic == topic && e.key == key {
			return i
		}
	}
	return -1
}

func (m *model) add(topic, key string, r Result, t int64) {
	m.advance(t)
	if topic == "" || key == "" || len(topic) > MaxTopicLen || len(key) > MaxKeyLen {
		m.n.ignored++
		return
	}
	r.StoreTime = t
	if i := m.find(topic, key); i >= 0 {
		m.entries = append(m.entries[:i:i], m.entries[i+1:]...)
		m.n.replaced++
	}
	m.entries = append(m.entries, modelEntry{topic, key, r})
	for len(m.entries) > m.max {
		m.entries = m.entries[1:]
		m.n.evictedByCount++
	}
}

func (m *model) lookup(topic, key string, now int64, window time.Duration) (Result, bool) {
	limit := min(window.Milliseconds(), m.retention)
	i := m.find(topic, key)
	if limit <= 0 || i < 0 || now-m.entries[i].r.StoreTime > limit {
		return Result{}, false
	}
	return m.entries[i].r, true
}

// opKind is one step of a scripted run.
type opKind uint8

const (
	opAdd opKind = iota
	opLookup
	opExpire
	opRestore // the subject window is replaced by its restored snapshot
	opKinds
)

// op is one step of a scripted run.
type op struct {
	kind       opKind
	topic, key string
	t          int64
	window     time.Duration
	r          Result
}

// decodeOps turns arbitrary bytes into a script over a few topics and
// keys, with times that mostly advance and sometimes go back.
func decodeOps(data []byte) []op {
	topics := []string{"orders", "payments", "a", string(bytes.Repeat([]byte{'t'}, MaxTopicLen))}
	keys := []string{
		"7F0000011F4418B4AAC28E7D3D8B00FF", // packed
		"7f0000011f4418b4aac28e7d3d8b00ff",
		"\x7f\x00\x00\x01\x1f\x44\x18\xb4\xaa\xc2\x8e\x7d\x3d\x8b\x00\xff",
		"bc", "c", "long-" + string(bytes.Repeat([]byte{'k'}, MaxKeyLen-5)),
	}
	windows := []time.Duration{0, time.Second, 5 * time.Second, 10 * time.Second, time.Minute, time.Hour}
	var ops []op
	var t int64 = 1_700_000_000_000
	for len(data) >= 4 {
		b0, b1, b2, b3 := data[0], data[1], data[2], data[3]
		data = data[4:]
		switch d := int64(b2); {
		case d < 240:
			t += d * 10 // up to 2.4 s forward
		default:
			t -= (d - 239) * 1000 // up to 16 s back
		}
		o := op{
			kind:   opKind(b0 % uint8(opKinds)),
			topic:  topics[b1%4],
			key:    keys[(b1/4)%uint8(len(keys))],
			t:      t,
			window: windows[b3%uint8(len(windows))],
			r:      Result{QueueID: int32(b3 % 8), QueueOffset: int64(b1), PhysicalOffset: int64(len(ops)) * 100, Size: int32(b2)},
		}
		if b3 >= 250 {
			o.key = "" // ignored
		}
		ops = append(ops, o)
	}
	return ops
}

// runOps applies ops to a model, to a subject window (which opRestore
// replaces by its own snapshot) and to a plain window that sees only the
// Adds and Expires, and checks that every Lookup agrees with the model,
// that the stats agree, and that both windows end with the same snapshot.
func runOps(t testing.TB, cfg Config, ops []op) {
	t.Helper()
	m, subject, plain := newModel(cfg), New(cfg), New(cfg)
	for i, o := range ops {
		switch o.kind {
		case opAdd:
			m.add(o.topic, o.key, o.r, o.t)
			// The subject is added to as the leader does: after a
			// LookupMiss of the same pair, with its Miss (an absent
			// pair is appended without a second search).
			_, _, miss := subject.LookupMiss(o.topic, o.key, o.t, o.window)
			subject.AddMissed(o.topic, o.key, o.r, o.t, miss)
			plain.Add(o.topic, o.key, o.r, o.t)
		case opLookup:
			want, wantOK := m.lookup(o.topic, o.key, o.t, o.window)
			got, gotOK := subject.Lookup(o.topic, o.key, o.t, o.window)
			if got != want || gotOK != wantOK {
				t.Fatalf("op %d: Lookup(%q, %q, %d, %v) = %+v, %v; model %+v, %v",
					i, o.topic, o.key, o.t, o.window, got, gotOK, want, wantOK)
			}
		case opExpire:
			m.advance(o.t)
			subject.Expire(o.t)
			plain.Expire(o.t)
		case opRestore:
			var err error
			if subject, err = Restore(subject.AppendSnapshot(nil)); err != nil {
				t.Fatalf("op %d: %v", i, err)
			}
		}
		if err := checkAgainst(subject, m); err != nil {
			t.Fatalf("op %d (%+v): %v", i, o, err)
		}
	}
	if a, b := subject.AppendSnapshot(nil), plain.AppendSnapshot(nil); !bytes.Equal(a, b) {
		t.Fatalf("snapshots differ: %d and %d bytes", len(a), len(b))
	}
}

// checkAgainst compares a window's entries, newest time and counters with
// the model's.
func checkAgainst(w *Window, m *model) error {
	st := w.Stats()
	got := Stats{Entries: st.Entries, Newest: st.Newest, Expired: st.Expired,
		EvictedByCount: st.EvictedByCount, Replaced: st.Replaced, Ignored: st.Ignored}
	want := Stats{Entries: len(m.entries), Newest: m.newest, Expired: m.n.expired,
		EvictedByCount: m.n.evictedByCount, Replaced: m.n.replaced, Ignored: m.n.ignored}
	if got != want {
		return fmt.Errorf("stats %+v, model %+v", got, want)
	}
	i := 0
	var err error
	w.g.each(func(s *slot) {
		topic, key := splitID(w.g.id(s))
		if e := m.entries[i]; err == nil && (e.topic != topic || e.key != key || e.r != s.r) {
			err = fmt.Errorf("entry %d: %q/%q %+v, model %q/%q %+v", i, topic, key, s.r, e.topic, e.key, e.r)
		}
		i++
	})
	return err
}
