package store

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/message"
)

// fakeClock is a settable clock for retention tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestRetentionDeletesExpiredSegmentsAndTrimsQueues(t *testing.T) {
	now := time.Now().UTC()
	if now.Hour() == 4 {
		now = now.Add(time.Hour)
	}
	clock := &fakeClock{now: now}
	cfg := testConfig(t.TempDir())
	cfg.Clock = clock.Now
	cfg.FileReservedTime = time.Hour
	cfg.DeleteWhen = "04"
	s := mustOpen(t, cfg)
	n := 0
	var batches []acked
	for s.cl.MaxOffset() < 4*cfg.SegmentSize {
		batches = append(batches, putBatches(t, s, "T", 2, 1, 4, 1000, &n)...)
	}
	// Not expired yet, and not the deletion hour: nothing happens.
	if got, err := s.Clean(false); err != nil || got != 0 {
		t.Fatalf("early clean deleted %d (%v)", got, err)
	}
	// Segments' modification times are real: move the clock days past
	// them, to the deletion hour.
	clock.Add(time.Date(now.Year(), now.Month(), now.Day(), 4, 0, 0, 0, time.UTC).Add(72 * time.Hour).Sub(now))
	deleted, err := s.Clean(false)
	if err != nil {
		t.Fatal(err)
	}
	if deleted < 3 {
		t.Fatalf("deleted %d segments, want the 3+ sealed ones", deleted)
	}
	minPhy := s.MinPhysicalOffset()
	if minPhy < 3*cfg.SegmentSize {
		t.Fatalf("min physical offset %d after deleting %d segments", minPhy, deleted)
	}
	// Queues start at the first message still in the log.
	for q := int32(0); q < 2; q++ {
		min, _ := s.MinOffset("T", q)
		res, err := s.Get("T", q, 0, 4, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != OffsetTooSmall || res.NextBeginOffset != min {
			t.Fatalf("queue %d: read from 0 gave %v next %d, min %d", q, res.Status, res.NextBeginOffset, min)
		}
		res, err = s.Get("T", q, min, 4, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != Found || res.Records[0].PhysicalOffset < minPhy {
			t.Fatalf("queue %d from min %d: %v", q, min, res.Status)
		}
		res.Release()
	}
	// Deleted messages are gone from lookups by id and by key.
	old := batches[0].results[0]
	if _, err := s.MessageByID(old.MsgID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted message by id: %v", err)
	}
	if got, _ := s.QueryByKey("T", batches[0].msgs[0].UniqKey(), 4, 0, 1<<62); len(got) != 0 {
		t.Fatalf("deleted message found by key")
	}
	// The store reopens cleanly with the trimmed queues.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, cfg)
	defer s.Close()
	if s.Recovery().RebuiltQueues != 0 {
		t.Fatalf("trimmed queues were taken for damaged ones: %+v", s.Recovery())
	}
	last := batches[len(batches)-1]
	checkAcked(t, s, []acked{last})
}

func TestRetentionSkipsSegmentsInUse(t *testing.T) {
	clock := &fakeClock{now: time.Now()}
	cfg := testConfig(t.TempDir())
	cfg.Clock = clock.Now
	cfg.FileReservedTime = time.Minute
	s := mustOpen(t, cfg)
	defer s.Close()
	n := 0
	for s.cl.MaxOffset() < 2*cfg.SegmentSize {
		putBatches(t, s, "T", 1, 1, 4, 1000, &n)
	}
	held, err := s.Get("T", 0, 0, 1, nil)
	if err != nil || held.Status != Found {
		t.Fatal(err)
	}
	clock.Add(time.Hour)
	if got, err := s.Clean(true); err != nil || got != 0 {
		t.Fatalf("deleted %d segments (%v) while a reader holds the first", got, err)
	}
	held.Release()
	if got, err := s.Clean(true); err != nil || got == 0 {
		t.Fatalf("deleted %d segments (%v) after release", got, err)
	}
}

func TestPutRefusedWhenDiskFull(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.DiskRefuseRatio = 1e-9 // any real disk is fuller than this
	s := mustOpen(t, cfg)
	defer s.Close()
	_, err := s.Put(0, []*message.Ext{testMsg("T", 0, 1, 10)})
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("got %v, want ErrDiskFull", err)
	}
	if s.LastSeq() != 0 {
		t.Fatal("a refused batch advanced LastSeq")
	}
}
