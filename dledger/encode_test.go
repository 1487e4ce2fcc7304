package dledger

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/store"
)

// encodeGroup is a Group with what the proposer's encoding uses: a store,
// the stamping settings and the id generator.
func encodeGroup(t *testing.T) *Group {
	t.Helper()
	sc := store.DefaultConfig(t.TempDir())
	sc.SegmentSize = 8 << 20
	s, err := store.Open(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	now := time.UnixMilli(1_700_000_000_123)
	g := &Group{store: s, checks: s, own: &ownEntries{}}
	g.cfg.StoreHost = testBorn
	g.cfg.Clock = func() time.Time { return now }
	g.cfg.MaxBatchBytes = 1 << 20
	g.ids = message.NewUniqIDGenerator(testBorn.Addr(), 1, g.cfg.Clock)
	return g
}

// TestEncodeMessagesEntryLayout: the entry the batcher encodes straight
// from the proposals' messages is byte for byte the entry of their
// records (entry.go's layout), and decodes the same with and without the
// check of records this node encoded.
func TestEncodeMessagesEntryLayout(t *testing.T) {
	g := encodeGroup(t)
	a, err := g.encodeProposal([]*message.Ext{testMsg("T", 0, "one"), testMsg("T", 1, "two")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := g.encodeProposal([]*message.Ext{testMsg("U", 0, "three")})
	if err != nil {
		t.Fatal(err)
	}
	prep := &store.PreparedRecords{}
	data, kept, count := g.encodeMessagesEntry([]*proposal{a, b}, a.size+b.size, prep)
	if len(kept) != 2 || count != 3 || prep.Len() != 3 {
		t.Fatalf("kept %d proposals, %d messages, %d read; want 2, 3, 3", len(kept), count, prep.Len())
	}
	var recs [][]byte
	for _, pr := range kept {
		for _, m := range pr.msgs {
			cp := *m
			rec, err := message.AppendRecord(nil, &cp)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, rec)
		}
	}
	if want := encodeMessagesEntry(recs); !bytes.Equal(data, want) {
		t.Fatalf("entry differs from its records' entry:\n%x\n%x", data, want)
	}
	if len(data) != entryHeaderSize+messagesHeaderSize+a.size+b.size {
		t.Fatalf("entry of %d bytes, sized for %d", len(data), entryHeaderSize+messagesHeaderSize+a.size+b.size)
	}
	checked, err := decodeEntryChecked(data, true)
	if err != nil {
		t.Fatal(err)
	}
	full, err := decodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(checked.recs) != 3 || len(full.recs) != 3 {
		t.Fatalf("decoded %d and %d records, want 3", len(checked.recs), len(full.recs))
	}
	for i := range recs {
		if !bytes.Equal(checked.recs[i], recs[i]) || !bytes.Equal(full.recs[i], recs[i]) {
			t.Fatalf("record %d decodes differently", i)
		}
	}
	// The store takes them as checked, and stores what PutEncoded would.
	res, err := g.store.PutChecked(1, checked.recs)
	if err != nil || len(res) != 3 {
		t.Fatalf("PutChecked: %v %v", res, err)
	}
}

// TestEncodeMessagesEntryRefusesOneProposal: a proposal with a message the
// store would refuse at apply is answered with the refusal and left out of
// the entry; the others ride in it.
func TestEncodeMessagesEntryRefusesOneProposal(t *testing.T) {
	g := encodeGroup(t)
	good1, err := g.encodeProposal([]*message.Ext{testMsg("T", 0, "one")})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := g.encodeProposal([]*message.Ext{testMsg("T", 0, "fine"), testMsg("T", -1, "no queue")})
	if err != nil {
		t.Fatal(err)
	}
	bad.done = make(chan proposalResult, 1) // as await makes it
	good2, err := g.encodeProposal([]*message.Ext{testMsg("T", 1, "two")})
	if err != nil {
		t.Fatal(err)
	}
	prep := &store.PreparedRecords{}
	data, kept, count := g.encodeMessagesEntry([]*proposal{good1, bad, good2}, good1.size+bad.size+good2.size, prep)
	if len(kept) != 2 || kept[0] != good1 || kept[1] != good2 || count != 2 {
		t.Fatalf("kept %d proposals with %d messages, want the two good ones", len(kept), count)
	}
	if prep.Len() != 2 {
		t.Fatalf("%d records read, want the good ones' 2", prep.Len())
	}
	select {
	case r := <-bad.done:
		if !errors.Is(r.err, store.ErrBadMessage) {
			t.Fatalf("refused proposal answered %v, want ErrBadMessage", r.err)
		}
	default:
		t.Fatal("the refused proposal was not answered")
	}
	e, err := decodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.recs) != 2 {
		t.Fatalf("entry holds %d records, want 2", len(e.recs))
	}
	for i, want := range []string{"one", "two"} {
		m, _, err := message.DecodeRecord(e.recs[i])
		if err != nil || string(m.Body) != want {
			t.Fatalf("record %d: %q %v, want %q", i, m.Body, err, want)
		}
	}
}

// TestOwnEntries: an entry is known as this node's by its bytes' address,
// once; another slice with the same contents is not.
func TestOwnEntries(t *testing.T) {
	var o ownEntries
	a := []byte{1, 2, 3}
	same := append([]byte(nil), a...)
	prep := &store.PreparedRecords{}
	o.add(a, prep)
	if _, ok := o.prepared(same); ok {
		t.Fatal("a copy was known for the proposed entry")
	}
	if got, ok := o.prepared(a); !ok || got != prep {
		t.Fatalf("prepared = %p %v, want the entry's %p", got, ok, prep)
	}
	if got, ok := o.prepared(a); !ok || got != nil {
		t.Fatalf("prepared again = %p %v: handed over twice, or the entry forgotten", got, ok)
	}
	if o.take(same) {
		t.Fatal("a copy was taken for the proposed entry")
	}
	if !o.take(a) {
		t.Fatal("the proposed entry was not known")
	}
	if o.take(a) {
		t.Fatal("the entry was known twice")
	}
	if o.take(nil) {
		t.Fatal("an empty entry was known")
	}
	// Older entries are forgotten (and then checked like any other).
	first := []byte{9}
	o.add(first, nil)
	for i := 0; i < len(o.ring); i++ {
		o.add([]byte{byte(i)}, nil)
	}
	if o.take(first) {
		t.Fatal("an entry older than the ring was still known")
	}
}

// TestApplySkipsStoredEntriesUndecoded: raft hands a restarted node the
// entries after its last snapshot again; a messages entry the store holds
// already is skipped without being decoded (a damaged copy of it does not
// stop the node), while an entry it does not hold is checked as ever.
func TestApplySkipsStoredEntriesUndecoded(t *testing.T) {
	g := encodeGroup(t)
	f := &fsm{store: g.store, meta: metadata.New()}
	pr, err := g.encodeProposal([]*message.Ext{testMsg("T", 0, "one")})
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ := g.encodeMessagesEntry([]*proposal{pr}, pr.size, nil)
	if res := f.applyOne(&raft.Log{Index: 1, Type: raft.LogCommand, Data: data}); res.err != nil {
		t.Fatal(res.err)
	}
	damaged := append([]byte(nil), data...)
	damaged[bytes.Index(damaged, []byte("one"))] ^= 0xff // the body: its CRC no longer matches
	if res := f.applyOne(&raft.Log{Index: 1, Type: raft.LogCommand, Data: damaged}); !errors.Is(res.err, errApplied) || f.failed.Load() {
		t.Fatalf("re-delivered stored entry: %v, failed=%v; want errApplied", res.err, f.failed.Load())
	}
	if res := f.applyOne(&raft.Log{Index: 2, Type: raft.LogCommand, Data: damaged}); res.err == nil || !f.failed.Load() {
		t.Fatalf("a damaged new entry was applied: %v", res.err)
	}
}
