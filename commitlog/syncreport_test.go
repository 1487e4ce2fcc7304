package commitlog

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/internal/syncreport"
)

// TestRecoverSyncsWhatItFound: after a crash of the process (not of the
// machine) the entries Recover finds may be in the page cache only. They
// count as flushed from then on (the next flush starts at the recovered
// end, a snapshot relies on them), so Recover makes them durable; the
// durable-length report shows it.
func TestRecoverSyncsWhatItFound(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, filepath.Join(dir, "commitlog"))
	cfg.FlushInterval = time.Hour
	l := openLog(t, cfg)
	appendRandom(t, l, rand.New(rand.NewPCG(1, 2)), 50, 100, 3000) // crosses a segment
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// The crashed process had made nothing durable.
	var rep string
	ents, _ := os.ReadDir(cfg.Dir)
	for _, e := range ents {
		if len(e.Name()) == 20 {
			rep += fmt.Sprintf("0 %d commitlog/%s\n", cfg.SegmentSize, e.Name())
		}
	}
	if err := os.WriteFile(filepath.Join(dir, syncreport.FileName), []byte("ledgermq-sync-report 1\n"+rep), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := syncreport.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cfg.SyncReport = r
	_, _, end := reopen(t, cfg)
	got, err := syncreport.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	for off := int64(0); off < end; off += cfg.SegmentSize {
		name := "commitlog/" + SegmentName(off)
		want := min(end-off, cfg.SegmentSize)
		if e := got[name]; e.Len < want {
			t.Errorf("%s durable to %d after Recover, want %d (recovered end %d)", name, e.Len, want, end)
		}
	}
}
