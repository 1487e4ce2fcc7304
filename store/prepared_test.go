package store

import (
	"bytes"
	"fmt"
	"testing"
)

// An entry appended with what its leader read of its records
// (PrepareStamped) is stored, dispatched and found exactly as the same
// entry appended without: the same bytes, queue offsets, tags and keys. A
// description that does not match the entry's records is not used.
func TestAppendPreparedEntries(t *testing.T) {
	plain := mustOpen(t, oneLogConfig(t.TempDir()))
	defer plain.Close()
	prepared := mustOpen(t, oneLogConfig(t.TempDir()))
	defer prepared.Close()

	k := 0
	var ents []Entry
	for seq := uint64(1); seq <= 4; seq++ {
		ents = append(ents, msgEntry(t, seq, fmt.Sprintf("T%d", seq%2), int32(seq%3), 5, &k))
	}
	if err := plain.AppendEntries(ents); err != nil {
		t.Fatal(err)
	}
	withPrep := make([]Entry, len(ents))
	for i, e := range ents {
		p := &PreparedRecords{}
		p.Grow(len(e.Records))
		recs := make([][]byte, len(e.Records))
		for j, rec := range e.Records {
			// Read from a buffer the proposer grew past: the entry's own
			// bytes are what is stored.
			if err := prepared.PrepareStamped(p, bytes.Clone(rec)); err != nil {
				t.Fatal(err)
			}
			recs[j] = bytes.Clone(rec)
		}
		if i == 2 {
			p.Truncate(p.Len() - 1) // describes another entry: not used
		}
		withPrep[i] = Entry{Seq: e.Seq, Term: e.Term, Header: e.Header, Records: recs, Checked: true, Prepared: p}
	}
	if err := prepared.AppendEntries(withPrep); err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 4; seq++ {
		a, err := plain.DispatchEntry(seq)
		if err != nil {
			t.Fatal(err)
		}
		b, err := prepared.DispatchEntry(seq)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("entry %d dispatched as %v, with its records read by the leader as %v", seq, a, b)
		}
		ea, _ := plain.Entry(seq)
		eb, _ := prepared.Entry(seq)
		for i := range ea.Records {
			if !bytes.Equal(ea.Records[i], eb.Records[i]) {
				t.Fatalf("entry %d record %d stored differently", seq, i)
			}
		}
	}
	if a, b := plain.cl.MaxOffset(), prepared.cl.MaxOffset(); a != b {
		t.Fatalf("commit logs end at %d and %d", a, b)
	}
	found := 0
	for _, key := range []string{"key-3", "k5", "UNIQ0000000000000000000000000017"} {
		for _, topic := range []string{"T0", "T1"} {
			a, err := plain.QueryByKey(topic, key, 32, 0, 1<<62)
			if err != nil {
				t.Fatal(err)
			}
			b, err := prepared.QueryByKey(topic, key, 32, 0, 1<<62)
			if err != nil {
				t.Fatal(err)
			}
			found += len(a)
			if len(a) != len(b) {
				t.Fatalf("%s/%s: %d and %d found", topic, key, len(a), len(b))
			}
			for i := range a {
				if a[i].QueueOffset != b[i].QueueOffset || a[i].Tags() != b[i].Tags() || !bytes.Equal(a[i].Body, b[i].Body) {
					t.Fatalf("%s/%s: found %+v and %+v", topic, key, a[i], b[i])
				}
			}
		}
	}
	if found < 3 {
		t.Fatalf("%d messages found by key, want each key's", found)
	}
}
