package consumequeue

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/internal/syncreport"
)

// TestFlushReportsItsSyncs: with a durable-length report, a new queue
// file is recorded empty when created and at its size once a Flush synced
// it, the files evicted from the cache before the Flush included; a store
// without a report records nothing.
func TestFlushReportsItsSyncs(t *testing.T) {
	// Written at once, each file is created (empty, nothing durable) by
	// its first Put; buffered, by the Flush that writes its units.
	for _, tc := range []struct {
		name        string
		writeBuffer int
		created     int
	}{{"written at once", -1, 3}, {"buffered", 0, 0}} {
		t.Run(tc.name, func(t *testing.T) { testFlushReportsItsSyncs(t, tc.writeBuffer, tc.created) })
	}
}

func testFlushReportsItsSyncs(t *testing.T, writeBuffer, created int) {
	dir := t.TempDir()
	rep, err := syncreport.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	s, err := Open(Config{Dir: filepath.Join(dir, "cq"), UnitsPerFile: 10, MaxOpenFiles: 2,
		WriteBuffer: writeBuffer, Logger: hclog.NewNullLogger(), SyncReport: rep})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	qs := []*Queue{mustQueue(t, s, "t", 0), mustQueue(t, s, "t", 1), mustQueue(t, s, "t", 2)}
	for _, q := range qs {
		putRange(t, q, 0, 3)
	}
	read := func() map[string]syncreport.Entry {
		t.Helper()
		m, err := syncreport.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]syncreport.Entry{}
		for p, e := range m {
			if strings.HasPrefix(p, "cq/") {
				out[p] = e
			}
		}
		return out
	}
	before := read()
	if len(before) != created {
		t.Fatalf("created files recorded: %v, want %d", before, created)
	}
	for p, e := range before {
		if e.Len != 0 {
			t.Fatalf("%s durable before any sync: %+v", p, e)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	after := read()
	if len(after) != 3 {
		t.Fatalf("after Flush: %v", after)
	}
	for p, e := range after {
		if e.Len != 3*UnitSize || e.Size != 3*UnitSize {
			t.Fatalf("%s after Flush: %+v, want %d bytes durable", p, e, 3*UnitSize)
		}
	}

	// Without a report nothing is recorded anywhere.
	plain := t.TempDir()
	s2 := openStore(t, plain, 10, 2)
	putRange(t, mustQueue(t, s2, "t", 0), 0, 3)
	if err := s2.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := syncreport.Read(plain); err == nil {
		t.Fatal("a store without a report wrote one")
	}
}
