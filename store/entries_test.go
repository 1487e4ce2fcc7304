package store

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ledgermq/ledgermq/message"
)

func oneLogConfig(dir string) Config {
	c := testConfig(dir)
	c.OneLog = true
	return c
}

// msgEntry is entry seq of term 1 carrying n messages to topic's queue q,
// numbered from *k.
func msgEntry(t testing.TB, seq uint64, topic string, q int32, n int, k *int) Entry {
	t.Helper()
	recs := make([][]byte, 0, n)
	for i := 0; i < n; i++ {
		recs = append(recs, encodeAll(t, []*message.Ext{testMsg(topic, q, *k, 100)})[0])
		*k++
	}
	return Entry{Seq: seq, Term: 1, Type: 0, Header: []byte{1, 1, 0, 0, 0, byte(n)}, Records: recs}
}

func TestEntriesAppendReadDispatch(t *testing.T) {
	s := mustOpen(t, oneLogConfig(t.TempDir()))
	defer s.Close()
	k := 0
	ents := []Entry{
		msgEntry(t, 1, "T", 0, 3, &k),
		{Seq: 2, Term: 1, Type: 2, Header: []byte("configuration")},
		msgEntry(t, 3, "T", 0, 2, &k),
	}
	if err := s.AppendEntries(ents); err != nil {
		t.Fatal(err)
	}
	if f, l := s.FirstEntry(), s.LastEntry(); f != 1 || l != 3 {
		t.Fatalf("entries [%d, %d], want [1, 3]", f, l)
	}
	// Nothing is visible before it is dispatched.
	if max, _ := s.MaxOffset("T", 0); max != 0 {
		t.Fatalf("max offset %d before dispatch", max)
	}
	e, err := s.Entry(3)
	if err != nil || e.Term != 1 || len(e.Records) != 2 || !bytes.Equal(e.Header, ents[2].Header) {
		t.Fatalf("entry 3: %+v %v", e, err)
	}
	if e2, err := s.Entry(2); err != nil || string(e2.Header) != "configuration" || e2.Type != 2 {
		t.Fatalf("entry 2: %+v %v", e2, err)
	}
	if _, err := s.Entry(4); !errors.Is(err, ErrNotFound) {
		t.Fatalf("entry 4: %v", err)
	}
	first, _ := s.Entry(1)
	phy := int64(0)
	if m, err := message.ParseView(first.Records[0]); err == nil {
		phy = m.PhysicalOffset()
	}
	if _, err := s.MessageAt(phy); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a record not dispatched is served: %v", err)
	}
	for seq := uint64(1); seq <= 3; seq++ {
		res, err := s.DispatchEntry(seq)
		if err != nil {
			t.Fatalf("dispatch %d: %v", seq, err)
		}
		if seq == 3 && (len(res) != 2 || res[0].QueueOffset != 3 || res[1].QueueOffset != 4) {
			t.Fatalf("dispatch 3: %+v", res)
		}
	}
	if _, err := s.DispatchEntry(3); !errors.Is(err, ErrSeqApplied) {
		t.Fatalf("second dispatch: %v", err)
	}
	if _, err := s.MessageAt(phy); err != nil {
		t.Fatalf("a dispatched record is not served: %v", err)
	}
	if max, _ := s.MaxOffset("T", 0); max != 5 {
		t.Fatalf("max offset %d, want 5", max)
	}
	if _, err := s.Put(4, nil); !errors.Is(err, ErrNotOneLog) {
		t.Fatalf("Put on a one-log store: %v", err)
	}
}

// A truncated suffix gives its queue offsets back, the CommitLog ends where
// the kept entries do, and the next entries get the same offsets a replica
// that never had the suffix gives them.
func TestEntriesTruncateRestoresHeads(t *testing.T) {
	a := mustOpen(t, oneLogConfig(t.TempDir()))
	defer a.Close()
	b := mustOpen(t, oneLogConfig(t.TempDir()))
	defer b.Close()
	k := 0
	common := []Entry{msgEntry(t, 1, "T", 0, 2, &k), msgEntry(t, 2, "T", 1, 2, &k)}
	for _, s := range []*Store{a, b} {
		if err := s.AppendEntries(common); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.DispatchEntry(1); err != nil {
		t.Fatal(err)
	}
	// a gets a suffix of another term (one that also deletes a topic),
	// then loses it.
	ka := 100
	stale := []Entry{msgEntry(t, 3, "T", 0, 5, &ka), {Seq: 4, Term: 1, Header: []byte{1, 2}, DeletesTopic: "T"}, msgEntry(t, 5, "T", 0, 1, &ka)}
	if err := a.AppendEntries(stale); err != nil {
		t.Fatal(err)
	}
	if err := a.TruncateEntries(1); err == nil {
		t.Fatal("truncating a dispatched entry succeeded")
	}
	if err := a.TruncateEntries(3); err != nil {
		t.Fatal(err)
	}
	if l := a.LastEntry(); l != 2 {
		t.Fatalf("last entry %d after truncation", l)
	}
	next := []Entry{msgEntry(t, 3, "T", 0, 2, &k), msgEntry(t, 4, "T", 1, 1, &k)}
	for _, s := range []*Store{a, b} {
		if err := s.AppendEntries(next); err != nil {
			t.Fatal(err)
		}
		for seq := s.LastSeq() + 1; seq <= 4; seq++ {
			if _, err := s.DispatchEntry(seq); err != nil {
				t.Fatalf("dispatch %d: %v", seq, err)
			}
		}
	}
	if !bytes.Equal(logBytesFrom(t, a, 0), logBytesFrom(t, b, 0)) {
		t.Fatal("the CommitLogs differ after the truncation")
	}
	if max, _ := a.MaxOffset("T", 0); max != 4 {
		t.Fatalf("T/0 max offset %d, want 4", max)
	}
}

// A crash loses nothing appended: recovery dispatches what the checkpoint
// vouches for and keeps the rest pending for raft, with its queue heads.
func TestEntriesRecoverPending(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, oneLogConfig(dir))
	k := 0
	if err := s.AppendEntries([]Entry{msgEntry(t, 1, "T", 0, 2, &k), msgEntry(t, 2, "T", 0, 2, &k)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DispatchEntry(1); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DispatchEntry(2); err != nil { // after the checkpoint
		t.Fatal(err)
	}
	if err := s.AppendEntries([]Entry{msgEntry(t, 3, "T", 0, 1, &k)}); err != nil {
		t.Fatal(err)
	}
	s.crash()

	s = mustOpen(t, oneLogConfig(dir))
	defer s.Close()
	if got := s.LastSeq(); got != 1 {
		t.Fatalf("LastSeq %d after recovery, want 1 (the checkpoint's)", got)
	}
	if f, l := s.FirstEntry(), s.LastEntry(); f != 1 || l != 3 {
		t.Fatalf("entries [%d, %d]", f, l)
	}
	if max, _ := s.MaxOffset("T", 0); max != 2 {
		t.Fatalf("max offset %d, want 2 (entry 1 only)", max)
	}
	for seq := uint64(2); seq <= 3; seq++ {
		if _, err := s.DispatchEntry(seq); err != nil {
			t.Fatalf("dispatch %d: %v", seq, err)
		}
	}
	if err := s.AppendEntries([]Entry{msgEntry(t, 4, "T", 0, 1, &k)}); err != nil {
		t.Fatal(err)
	}
	res, err := s.DispatchEntry(4)
	if err != nil || res[0].QueueOffset != 5 {
		t.Fatalf("dispatch 4: %+v %v", res, err)
	}
	verifyConsistent(t, s, nil)
}

// A store keeps the layout it was created with.
func TestEntriesLayoutIsKept(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, testConfig(dir))
	n := 0
	putBatches(t, s, "T", 1, 1, 1, 10, &n)
	s.Close()
	if _, err := Open(oneLogConfig(dir)); !errors.Is(err, ErrLayout) {
		t.Fatalf("one-log open of a two-log store: %v", err)
	}
	dir2 := t.TempDir()
	s = mustOpen(t, oneLogConfig(dir2))
	s.Close()
	if _, err := Open(testConfig(dir2)); !errors.Is(err, ErrLayout) {
		t.Fatalf("two-log open of a one-log store: %v", err)
	}
}
