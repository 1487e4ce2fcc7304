package store

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/internal/syncreport"
	"github.com/ledgermq/ledgermq/message"
)

// TestSyncReportReachesEveryPart: the report in Config.SyncReport is the
// one the CommitLog and the ConsumeQueues record their syncs in (the
// store opens none of its own).
func TestSyncReportReachesEveryPart(t *testing.T) {
	dir := t.TempDir()
	rep, err := syncreport.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	cfg := testConfig(filepath.Join(dir, "store"))
	cfg.SyncReport = rep
	s := mustOpen(t, cfg)
	defer s.Close()
	var seq uint64
	for n := range 20 {
		seq++
		if _, err := s.Put(seq, []*message.Ext{testMsg("T", int32(n%2), n, 100)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	m, err := syncreport.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var log, queues int
	for p, e := range m {
		switch {
		case strings.HasPrefix(p, "store/commitlog/") && e.Len > 0:
			log++
		case strings.HasPrefix(p, "store/consumequeue/") && e.Len > 0:
			queues++
		}
	}
	if log == 0 || queues == 0 {
		t.Fatalf("durable in the report: %d commitlog segments, %d queue files; want both (%v)", log, queues, m)
	}
}
