package dledger

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/ledgermq/ledgermq/internal/syncreport"
)

// TestRaftLogReportsItsFsyncs: with the durable-length report on, every
// StoreLogs leaves the segment recorded at the end of what it wrote (not
// at its preallocated size), so a power-loss cut keeps exactly what the
// fsync made durable.
func TestRaftLogReportsItsFsyncs(t *testing.T) {
	dir := t.TempDir()
	rep, err := syncreport.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	walDir := filepath.Join(dir, "raft", "wal")
	if err := os.MkdirAll(walDir, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := openRaftLog(walDir, hclog.NewNullLogger(), 1<<20, nil, rep)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	seg := func() syncreport.Entry {
		t.Helper()
		m, err := syncreport.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		for p, e := range m {
			if strings.HasPrefix(p, "raft/wal/") && strings.HasSuffix(p, ".wal") {
				return e
			}
		}
		t.Fatalf("no raft-wal segment in the report: %v", m)
		return syncreport.Entry{}
	}
	var last int64
	for i := uint64(1); i <= 3; i++ {
		if err := l.StoreLogs([]*raft.Log{{Index: i, Term: 1, Type: raft.LogCommand, Data: make([]byte, 1000)}}); err != nil {
			t.Fatal(err)
		}
		e := seg()
		if e.Size != 1<<20 || e.Len <= last || e.Len >= e.Size {
			t.Fatalf("after entry %d: %+v (before: %d)", i, e, last)
		}
		last = e.Len
	}
}
