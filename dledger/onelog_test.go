package dledger

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/store"
)

func TestSplitJoinRecords(t *testing.T) {
	var recs [][]byte
	for _, body := range []string{"one", "two"} {
		m := testMsg("T", 0, body)
		m.StoreHost = testBorn
		rec, err := message.AppendRecord(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	op := metadata.Op{Kind: metadata.OpDeleteGroup, Name: "G"}
	withOp, err := encodeMessagesOpEntry(recs, op)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := encodeMetadataEntry(metadata.Op{Kind: metadata.OpDeleteTopic, Name: "Gone"})
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range [][]byte{encodeMessagesEntry(recs), withOp} {
		h, got, ok := splitRecords(data)
		if !ok || len(got) != 2 {
			t.Fatalf("split %x: %v %d", data[:2], ok, len(got))
		}
		if !bytes.Equal(joinRecords(h, got), data) {
			t.Fatalf("join(split) of type %d differs", data[1])
		}
	}
	if _, _, ok := splitRecords(meta); ok {
		t.Fatal("a metadata entry split into records")
	}
	if deletesTopic(meta) != "Gone" || deletesTopic(withOp) != "" {
		t.Fatalf("deletesTopic: %q %q", deletesTopic(meta), deletesTopic(withOp))
	}
}

// FuzzSplitRecords: splitRecords reads raft entries from the network; it
// must not panic, and what it splits joins back to the same bytes.
func FuzzSplitRecords(f *testing.F) {
	f.Add(encodeMessagesEntry([][]byte{{1, 2, 3}}))
	f.Add([]byte{1, 3, 0, 0, 0, 2, '{', '}', 0, 0, 0, 0})
	f.Add([]byte{1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, recs, ok := splitRecords(b)
		if ok && !bytes.Equal(joinRecords(h, recs), b) {
			t.Fatalf("join(split(%x)) differs", b)
		}
		_ = deletesTopic(b)
	})
}

func TestFileStable(t *testing.T) {
	path := filepath.Join(t.TempDir(), stableFileName)
	s, err := openFileStable(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 0 {
		t.Fatalf("missing term: %d %v", v, err)
	}
	if _, err := s.Get([]byte("LastVoteCand")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing key: %v", err) // raft compares the text
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("LastVoteCand"), []byte("n1")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := s.SetUint64([]byte("CurrentTerm"), 8); err != nil {
		t.Fatal(err) // dropped after Close, not an error
	}
	s, err = openFileStable(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s.GetUint64([]byte("CurrentTerm")); v != 7 {
		t.Fatalf("term %d after reopen, want 7", v)
	}
	if v, _ := s.Get([]byte("LastVoteCand")); string(v) != "n1" {
		t.Fatalf("vote %q after reopen", v)
	}
	var _ raft.StableStore = s
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openFileStable(nil, path); err == nil {
		t.Fatal("a damaged state file opened")
	}
}

// FuzzFileStable: the state file is read from disk at every start.
func FuzzFileStable(f *testing.F) {
	f.Add([]byte(`{"CurrentTerm":"AAAAAAAAAAc="}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), stableFileName)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := openFileStable(nil, path)
		if err != nil {
			return
		}
		_, _ = s.GetUint64([]byte("CurrentTerm"))
		_, _ = s.Get([]byte("LastVoteCand"))
	})
}

// failingEntries is an entry store whose appends fail with err.
type failingEntries struct {
	entryStore
	err error
}

func (f failingEntries) AppendEntries([]store.Entry) error { return f.err }

// TestOneLogStopsOnFailedWrite: a write the store refuses (a full disk)
// stops the node, which its supervisor restarts once the disk has space;
// otherwise a follower would refuse every entry from then on.
func TestOneLogStopsOnFailedWrite(t *testing.T) {
	for _, tc := range []struct {
		err  error
		stop bool
	}{
		{fmt.Errorf("%w: no space left on device", store.ErrWriteFailed), true},
		{fmt.Errorf("%w: record 0", store.ErrBadMessage), true},
		{store.ErrClosed, false},
	} {
		var stopped error
		l := &commitLogRaftLog{st: failingEntries{err: tc.err}, fail: func(err error) { stopped = err }}
		if err := l.StoreLogs([]*raft.Log{{Index: 1, Term: 1, Type: raft.LogNoop}}); !errors.Is(err, tc.err) {
			t.Fatalf("%v: StoreLogs returned %v", tc.err, err)
		}
		if (stopped != nil) != tc.stop {
			t.Fatalf("%v: stopped=%v, want a stop: %v", tc.err, stopped, tc.stop)
		}
	}
}
