package dedup

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
	"time"
	"unsafe"
)

// Reserve sizes everything ahead: the Adds that follow do not rebuild,
// and the window behaves as one without it.
func TestReserve(t *testing.T) {
	const n = 20_000
	w, plain := New(Config{MaxEntries: n}), New(Config{MaxEntries: n})
	w.Add("TopicTest", "held", Result{}, t0)
	plain.Add("TopicTest", "held", Result{}, t0)
	w.Reserve(n)
	slots, arena, table := unsafe.SliceData(w.g.slots), unsafe.SliceData(w.g.arena), unsafe.SliceData(w.g.table)
	for i := range n + 100 { // the last ones evict by count
		w.Add("TopicTest", keyOf(i), Result{QueueOffset: int64(i)}, t0+int64(i))
		plain.Add("TopicTest", keyOf(i), Result{QueueOffset: int64(i)}, t0+int64(i))
	}
	if unsafe.SliceData(w.g.slots) != slots || unsafe.SliceData(w.g.arena) != arena || unsafe.SliceData(w.g.table) != table {
		t.Fatal("rebuilt after Reserve")
	}
	if !bytes.Equal(w.AppendSnapshot(nil), plain.AppendSnapshot(nil)) {
		t.Fatal("snapshots differ")
	}
	// Capped at MaxEntries (and one slot more: a push comes before the
	// eviction by count); n ≤ 0 does nothing.
	w = New(Config{MaxEntries: 100})
	w.Reserve(1 << 40)
	if len(w.g.slots) != 101 || len(w.g.arena) > 32*101+maxIDLen {
		t.Fatalf("%d slots, %d arena bytes", len(w.g.slots), len(w.g.arena))
	}
	before := w.Bytes()
	w.Reserve(0)
	w.Reserve(-5)
	if w.Bytes() != before {
		t.Fatal("Reserve(≤ 0) changed the window")
	}
}

// At steady state (entries leaving by count, or by age, as fast as they
// come) the arena wraps around: nothing is rebuilt, however many Adds.
func TestSteadyStateNoRebuild(t *testing.T) {
	for _, cfg := range []Config{{Window: time.Hour, MaxEntries: 1000}, {Window: time.Second}} {
		w := New(cfg)
		add := func(i int) {
			w.Add(fmt.Sprintf("Topic-%d", i%7), keyOf(i), Result{}, t0+int64(i))
		}
		for i := range 5000 {
			add(i)
		}
		slots, arena := unsafe.SliceData(w.g.slots), unsafe.SliceData(w.g.arena)
		for i := range 50_000 {
			add(5000 + i)
		}
		if unsafe.SliceData(w.g.slots) != slots || unsafe.SliceData(w.g.arena) != arena {
			t.Fatalf("%+v: rebuilt at steady state", cfg)
		}
	}
}

// Lookup allocates nothing; neither does Add at steady state, nor a
// pair added again.
func TestAllocs(t *testing.T) {
	w := New(Config{Window: time.Hour, MaxEntries: 1000})
	i := 0
	add := func() {
		w.Add("TopicTest", keyOf(i), Result{}, t0+int64(i))
		i++
	}
	for range 5000 {
		add()
	}
	if a := testing.AllocsPerRun(2000, add); a != 0 {
		t.Errorf("Add: %v allocations", a)
	}
	if a := testing.AllocsPerRun(2000, func() { w.Add("TopicTest", keyOf(i-1), Result{}, t0+int64(i)) }); a != 0 {
		t.Errorf("Add again: %v allocations", a)
	}
	if a := testing.AllocsPerRun(2000, func() { w.Lookup("TopicTest", keyOf(i-1), t0+int64(i), time.Minute) }); a != 0 {
		t.Errorf("Lookup: %v allocations", a)
	}
}

// The figure of doc.go (Memory): a full default window of 32-hex keys
// under a 9-byte topic takes about 121 bytes an entry, counted by Bytes.
func TestBytesPerEntry(t *testing.T) {
	w := New(Config{})
	for i, k := range keyPool(DefaultMaxEntries) {
		w.Add("TopicTest", k, Result{QueueOffset: int64(i)}, t0+int64(i/10))
	}
	if per := w.Bytes() / int64(w.Len()); w.Len() != DefaultMaxEntries || per < 110 || per > 125 {
		t.Fatalf("%d entries, %d bytes each", w.Len(), per)
	}
}

// A slot holds no pointer: the garbage collector never scans the ring,
// whatever its size (nor the table and the arena, of integers).
func TestSlotHasNoPointer(t *testing.T) {
	var walk func(t reflect.Type) bool
	walk = func(t reflect.Type) bool {
		switch t.Kind() {
		case reflect.Struct:
			for i := range t.NumField() {
				if !walk(t.Field(i).Type) {
					return false
				}
			}
			return true
		case reflect.Array:
			return walk(t.Elem())
		default:
			return t.Kind() >= reflect.Bool && t.Kind() <= reflect.Complex128
		}
	}
	if !walk(reflect.TypeFor[slot]()) {
		t.Fatal("slot has a pointer")
	}
	if size := unsafe.Sizeof(slot{}); size > 48 {
		t.Fatalf("slot of %d bytes", size)
	}
}
