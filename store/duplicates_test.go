package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/message"
)

const dupWindow = 2 * time.Minute

// checkWindowHolds asserts that every acked message is in the window with
// where it was stored.
func checkWindowHolds(t *testing.T, s *Store, batches []acked) {
	t.Helper()
	for _, b := range batches {
		for i, m := range b.msgs {
			r, ok, _ := s.Duplicate(m.Topic, m.UniqKey(), m.StoreTimestamp, dupWindow)
			want := b.results[i]
			if !ok || !r.Duplicate || r.PhysicalOffset != want.PhysicalOffset || r.QueueOffset != want.QueueOffset ||
				r.Size != want.Size || r.QueueID != m.QueueID || r.MsgID != want.MsgID {
				t.Fatalf("%s: window has %+v (%v), want %+v in queue %d", m.UniqKey(), r, ok, want, m.QueueID)
			}
		}
	}
}

// TestDuplicateWindowFedByPut: every stored message enters the window
// with its store; other topics, a shorter window, and a store with the
// window off miss.
func TestDuplicateWindowFedByPut(t *testing.T) {
	s := mustOpen(t, testConfig(t.TempDir()))
	defer s.Close()
	n := 0
	batches := putBatches(t, s, "T", 3, 10, 4, 100, &n)
	checkWindowHolds(t, s, batches)
	m := batches[0].msgs[0]
	if _, ok, _ := s.Duplicate("U", m.UniqKey(), m.StoreTimestamp, dupWindow); ok {
		t.Fatal("another topic's key found")
	}
	if _, ok, _ := s.Duplicate(m.Topic, m.UniqKey(), m.StoreTimestamp+int64(time.Hour/time.Millisecond), dupWindow); ok {
		t.Fatal("a key found after its window")
	}
	if _, ok, _ := s.Duplicate(m.Topic, m.UniqKey(), m.StoreTimestamp, 0); ok {
		t.Fatal("a key found with the window off")
	}
	if st := s.DuplicateStats(); st.Entries != 40 {
		t.Fatalf("window holds %d entries, want 40", st.Entries)
	}

	cfg := testConfig(t.TempDir())
	cfg.Duplicates.Off = true
	off := mustOpen(t, cfg)
	defer off.Close()
	if _, err := off.Put(0, []*message.Ext{m}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := off.Duplicate(m.Topic, m.UniqKey(), m.StoreTimestamp, dupWindow); ok {
		t.Fatal("a store with the window off found a key")
	}
	if err := off.checkpoint(false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Dir, duplicatesName)); !os.IsNotExist(err) {
		t.Fatalf("a store with the window off wrote %s: %v", duplicatesName, err)
	}
}

// TestDuplicateWindowRebuiltOnOpen: after a clean close, after a crash
// (messages past the last checkpoint included), the reopened store's
// window holds what it held; a window file that is damaged or names an
// offset outside the log leaves it empty, and the store opens.
func TestDuplicateWindowRebuiltOnOpen(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	s := mustOpen(t, cfg)
	n := 0
	batches := putBatches(t, s, "T", 2, 20, 5, 300, &n)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, cfg)
	checkWindowHolds(t, s, batches)

	// More after the last checkpoint, then a crash.
	if err := s.checkpoint(false); err != nil {
		t.Fatal(err)
	}
	batches = append(batches, putBatches(t, s, "T", 2, 5, 5, 300, &n)...)
	s.crash()
	s = mustOpen(t, cfg)
	checkWindowHolds(t, s, batches)
	want := s.DuplicateStats().Entries
	if want != n {
		t.Fatalf("window holds %d entries, want %d", want, n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// A window that lost its oldest entries to MaxEntries starts where its
	// oldest is, and is rebuilt as it was.
	cfg.Duplicates.MaxEntries = 30
	s = mustOpen(t, cfg)
	if got := s.DuplicateStats().Entries; got != 30 {
		t.Fatalf("window of 30 holds %d", got)
	}
	if err := s.checkpoint(true); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, duplicatesName))
	if err != nil {
		t.Fatal(err)
	}
	from, err := decodeDuplicatesFile(b)
	if err != nil {
		t.Fatal(err)
	}
	last := batches[len(batches)-1]
	oldest := s.backlog.oldest(-1)
	if from != oldest || from <= batches[0].results[0].PhysicalOffset || from > last.results[0].PhysicalOffset {
		t.Fatalf("window file names %d, the oldest entry is at %d", from, oldest)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.Duplicates.MaxEntries = 0

	for _, bad := range [][]byte{
		[]byte("short"),
		func() []byte { b := encodeDuplicatesFile(from); b[9] ^= 1; return b }(),
		encodeDuplicatesFile(1 << 40),
	} {
		if err := os.WriteFile(filepath.Join(dir, duplicatesName), bad, 0o644); err != nil {
			t.Fatal(err)
		}
		s = mustOpen(t, cfg)
		if got := s.DuplicateStats().Entries; got != 0 {
			t.Fatalf("window rebuilt from a bad file: %d entries", got)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzDuplicatesFile: the window file's decoder never panics, and what it
// accepts encodes back to the same bytes.
func FuzzDuplicatesFile(f *testing.F) {
	f.Add(encodeDuplicatesFile(0))
	f.Add(encodeDuplicatesFile(1 << 33))
	f.Add([]byte("LMDF"))
	f.Fuzz(func(t *testing.T, b []byte) {
		from, err := decodeDuplicatesFile(b)
		if err != nil {
			return
		}
		if got := encodeDuplicatesFile(from); string(got) != string(b) {
			t.Fatalf("%x decoded to %d, which encodes to %x", b, from, got)
		}
	})
}

// TestDuplicateSpan: a window at its maximum count reaches back only as
// far as its oldest key.
func TestDuplicateSpan(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Duplicates.MaxEntries = 10
	s := mustOpen(t, cfg)
	defer s.Close()
	n := 0
	putBatches(t, s, "T", 1, 1, 5, 10, &n)
	if got := s.DuplicateSpan(dupWindow); got != dupWindow {
		t.Fatalf("span %v of a window not full, want %v", got, dupWindow)
	}
	putBatches(t, s, "T", 1, 4, 5, 10, &n) // 25 messages 1 ms apart
	if got := s.DuplicateSpan(dupWindow); got != 9*time.Millisecond {
		t.Fatalf("span %v of a full window of 10 keys 1 ms apart, want 9ms", got)
	}
	if got := s.DuplicateSpan(time.Millisecond); got != time.Millisecond {
		t.Fatalf("span above the asked window: %v", got)
	}
}

// retryCopy is m sent back for its reconsume-th attempt, as a broker
// stores it: in topic (a %RETRY% or %DLQ% topic, or parked in the
// schedule topic for realTopic), UNIQ_KEY kept.
func retryCopy(m *message.Ext, topic string, reconsume int32, realTopic string, n int) *message.Ext {
	c := testMsg(topic, 0, n, 10)
	c.SetProperty(message.PropertyUniqKey, m.UniqKey())
	c.ReconsumeTimes = reconsume
	if realTopic != "" {
		c.SetProperty(message.PropertyRealTopic, realTopic)
	}
	return c
}

// TestDuplicateKeysOfRetries: a consumer's retry is known by its UNIQ_KEY
// with its reconsume count and the topic it waits for, through Put,
// PutEncoded and the rebuild from the CommitLog: each attempt, and each
// consumer group's copy parked in the one schedule topic, is a key of its
// own, and none is the first attempt's.
func TestDuplicateKeysOfRetries(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := mustOpen(t, cfg)
	orig := testMsg("T", 0, 1, 10)
	copies := []*message.Ext{
		retryCopy(orig, "%RETRY%A", 1, "", 2),
		retryCopy(orig, "%RETRY%A", 2, "", 3),
		retryCopy(orig, "SCHEDULE_TOPIC_XXXX", 3, "%RETRY%A", 4),
		retryCopy(orig, "SCHEDULE_TOPIC_XXXX", 3, "%RETRY%B", 5),
		retryCopy(orig, "%DLQ%A", 4, "%RETRY%A", 6),
	}
	keys := map[string]bool{}
	for _, c := range copies {
		k := DuplicateKeyOf(c)
		if k == orig.UniqKey() || keys[c.Topic+"/"+k] {
			t.Fatalf("retry %d of %s in %s has key %q, not its own", c.ReconsumeTimes, orig.UniqKey(), c.Topic, k)
		}
		keys[c.Topic+"/"+k] = true
	}
	if _, err := s.Put(s.LastSeq()+1, []*message.Ext{orig, copies[0], copies[1]}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutEncoded(s.LastSeq()+1, encodeAll(t, copies[2:])); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		phys := map[int64]bool{}
		for _, m := range append([]*message.Ext{orig}, copies...) {
			r, ok, _ := s.Duplicate(m.Topic, DuplicateKeyOf(m), m.StoreTimestamp, dupWindow)
			if !ok || phys[r.PhysicalOffset] {
				t.Fatalf("%s: %s/%q: %+v %v", when, m.Topic, DuplicateKeyOf(m), r, ok)
			}
			phys[r.PhysicalOffset] = true
		}
		if _, ok, _ := s.Duplicate("%RETRY%A", orig.UniqKey(), orig.StoreTimestamp, dupWindow); ok {
			t.Fatalf("%s: a retry found by its bare UNIQ_KEY", when)
		}
	}
	check("stored")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, cfg)
	defer s.Close()
	check("rebuilt")
}

// TestIndexDuplicatesReplacesAStaleIndex: an index built while the node
// did not lead (a Duplicate asked by a proposal left over from its last
// term) is not fed by the dispatches that follow; IndexDuplicates, which
// a node calls when it becomes leader, builds it afresh, so a retry of a
// message another leader stored in between is found.
func TestIndexDuplicatesReplacesAStaleIndex(t *testing.T) {
	s := mustOpen(t, testConfig(t.TempDir()))
	defer s.Close()
	n := 0
	first := putBatches(t, s, "T", 2, 2, 5, 100, &n)
	m := first[0].msgs[0]
	if _, ok, _ := s.Duplicate(m.Topic, m.UniqKey(), m.StoreTimestamp, dupWindow); !ok {
		t.Fatal("a stored key missed")
	}
	// Stored while this node followed: dispatched, not sent by it.
	later := putBatches(t, s, "T", 2, 2, 5, 100, &n)
	s.IndexDuplicates()
	checkWindowHolds(t, s, append(first, later...))
}
