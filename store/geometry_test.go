package store

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ledgermq/ledgermq/message"
)

// TestReconfigureEmptyStore: an empty store takes another geometry and
// writes with it; one that holds data refuses and keeps its own.
func TestReconfigureEmptyStore(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := mustOpen(t, cfg)
	defer s.Close()
	if !s.Empty() {
		t.Fatal("a new store is not empty")
	}
	g := Geometry{SegmentSize: 128 << 10, UnitsPerQueueFile: 20, IndexSlots: 32, IndexEntries: 100}
	if err := s.Reconfigure(g); err != nil {
		t.Fatal(err)
	}
	if s.Geometry() != g || s.SegmentSize() != g.SegmentSize {
		t.Fatalf("geometry %+v, want %+v", s.Geometry(), g)
	}
	n := 0
	putBatches(t, s, "T", 2, 30, 2, 4000, &n) // crosses a 128 KiB segment end
	verifyConsistent(t, s, nil)
	for _, seg := range s.SegmentPaths() {
		if seg.Size != g.SegmentSize {
			t.Fatalf("segment %+v has another size than %d", seg, g.SegmentSize)
		}
	}
	if err := s.Reconfigure(Geometry{SegmentSize: 64 << 10, UnitsPerQueueFile: 10, IndexSlots: 64, IndexEntries: 200}); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("reconfigure with data: %v", err)
	}
	if s.Geometry() != g {
		t.Fatalf("a refused reconfigure changed the geometry to %+v", s.Geometry())
	}
	verifyConsistent(t, s, nil)
}

// TestCheckEncoded: what PutEncoded refuses, CheckEncoded refuses first,
// with the current maximum message size.
func TestCheckEncoded(t *testing.T) {
	s := mustOpen(t, testConfig(t.TempDir()))
	defer s.Close()
	enc := func(m *message.Ext) []byte {
		rec, err := message.AppendRecord(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	ok := enc(testMsg("T", 0, 1, 100))
	if err := s.CheckEncoded(ok); err != nil {
		t.Fatal(err)
	}
	big := enc(testMsg("T", 0, 1, 17<<10))
	if err := s.CheckEncoded(big); !errors.Is(err, ErrBadMessage) {
		t.Fatalf("body over the maximum: %v", err)
	}
	if err := s.SetMaxMessageSize(32 << 10); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckEncoded(big); err != nil {
		t.Fatalf("after raising the maximum: %v", err)
	}
	if _, err := s.PutEncoded(0, [][]byte{big}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMaxMessageSize(1 << 20); err == nil {
		t.Fatal("a maximum larger than a segment was accepted")
	}
	bad := enc(testMsg("../x", 0, 1, 10))
	if err := s.CheckEncoded(bad); !errors.Is(err, ErrBadMessage) {
		t.Fatalf("topic ../x: %v", err)
	}
	if err := s.CheckEncoded(ok[:len(ok)-1]); !errors.Is(err, ErrBadMessage) {
		t.Fatalf("truncated record: %v", err)
	}
}

// TestCheckStampedAndPutChecked: the checks of a record checked once
// already on this node are CheckEncoded's and PutEncoded's without the
// body CRC pass; everything else is still refused.
func TestCheckStampedAndPutChecked(t *testing.T) {
	s := mustOpen(t, testConfig(t.TempDir()))
	defer s.Close()
	rec, err := message.AppendRecord(nil, testMsg("T", 0, 1, 100))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckStamped(rec); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckStamped(rec[:len(rec)-1]); !errors.Is(err, ErrBadMessage) {
		t.Fatalf("truncated record: %v", err)
	}
	big, err := message.AppendRecord(nil, testMsg("T", 0, 1, 17<<10))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckStamped(big); !errors.Is(err, ErrBadMessage) {
		t.Fatalf("body over the maximum: %v", err)
	}
	if _, err := s.PutChecked(0, [][]byte{big}); !errors.Is(err, ErrBadMessage) {
		t.Fatalf("PutChecked of a body over the maximum: %v", err)
	}
	// A damaged body is what only the CRC pass finds: CheckEncoded and
	// PutEncoded refuse it; the checked variants leave it to the check
	// that was made when the record was encoded or received.
	v, err := message.ParseView(rec)
	if err != nil {
		t.Fatal(err)
	}
	damaged := append([]byte(nil), rec...)
	damaged[bytes.Index(rec, v.Body())] ^= 0xff
	if err := s.CheckEncoded(damaged); !errors.Is(err, ErrBadMessage) {
		t.Fatalf("CheckEncoded of a damaged body: %v", err)
	}
	if _, err := s.PutEncoded(0, [][]byte{damaged}); !errors.Is(err, ErrBadMessage) {
		t.Fatalf("PutEncoded of a damaged body: %v", err)
	}
	if _, err := s.PutChecked(0, [][]byte{rec}); err != nil {
		t.Fatal(err)
	}
}
