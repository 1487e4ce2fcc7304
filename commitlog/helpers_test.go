package commitlog

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testMagic is the magic of entries written by tests (RocketMQ's message
// magic; the log does not care).
const testMagic uint32 = 0xDAA320A7

// testSegSize is the segment size of most tests: small, so that tests cross
// many segments.
var testSegSize = max(int64(64<<10), int64(os.Getpagesize()))

// makeEntry returns a payload of size bytes with its length prefix, the test
// magic and bytes derived from rng.
func makeEntry(rng *rand.Rand, size int) []byte {
	p := make([]byte, size)
	binary.BigEndian.PutUint32(p, uint32(size))
	binary.BigEndian.PutUint32(p[4:], testMagic)
	for i := 8; i < size; i++ {
		p[i] = byte(rng.Uint32())
	}
	return p
}

func testConfig(t testing.TB, dir string) Config {
	t.Helper()
	cfg := DefaultConfig(dir)
	cfg.SegmentSize = testSegSize
	cfg.FlushInterval = 10 * time.Millisecond // the flusher runs often in tests
	return cfg
}

// openLog opens and recovers a log, failing the test on error, and closes it
// at cleanup if the test has not.
func openLog(t testing.TB, cfg Config) *Log {
	t.Helper()
	l, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, err := l.Recover(l.MinOffset(), nil, nil); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// written is an entry the test appended.
type written struct {
	off     int64
	payload []byte
}

// appendRandom appends n entries of random sizes in [minSize, maxSize].
func appendRandom(t testing.TB, l *Log, rng *rand.Rand, n, minSize, maxSize int) []written {
	t.Helper()
	out := make([]written, 0, n)
	for range n {
		p := makeEntry(rng, minSize+rng.IntN(maxSize-minSize+1))
		off, err := l.Append(p)
		if err != nil {
			t.Fatalf("Append: %v", err)
		}
		out = append(out, written{off, p})
	}
	return out
}

// recovered collects what Recover (or Scan) reports.
type recovered struct {
	entries []written
	corrupt []CorruptRange
}

func (r *recovered) visit(off int64, p []byte) error {
	r.entries = append(r.entries, written{off, append([]byte(nil), p...)})
	return nil
}

func (r *recovered) report(c CorruptRange) { r.corrupt = append(r.corrupt, c) }

// reopen opens cfg.Dir and recovers from MinOffset, collecting the results.
func reopen(t testing.TB, cfg Config) (*Log, *recovered, int64) {
	t.Helper()
	l, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	var r recovered
	end, err := l.Recover(l.MinOffset(), r.visit, r.report)
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	return l, &r, end
}

// segPath returns the file of the segment holding offset.
func segPath(cfg Config, offset int64) string {
	return filepath.Join(cfg.Dir, SegmentName(offset-offset%cfg.SegmentSize))
}

// patchFile writes b at global offset off of the log in cfg.Dir.
func patchFile(t testing.TB, cfg Config, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(segPath(cfg, off), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off%cfg.SegmentSize); err != nil {
		t.Fatal(err)
	}
}

// readFileAt reads n bytes at global offset off.
func readFileAt(t testing.TB, cfg Config, off int64, n int) []byte {
	t.Helper()
	f, err := os.Open(segPath(cfg, off))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off%cfg.SegmentSize); err != nil {
		t.Fatal(err)
	}
	return b
}

func sameEntries(t testing.TB, got, want []written) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].off != want[i].off || string(got[i].payload) != string(want[i].payload) {
			t.Fatalf("entry %d: got offset %d (%d bytes), want offset %d (%d bytes)", i, got[i].off, len(got[i].payload), want[i].off, len(want[i].payload))
		}
	}
}
